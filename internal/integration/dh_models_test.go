package integration

import (
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Each digital-human model on the shared video route against the real
// binary: its fields (the spec's and PRODUCT's 400s, nothing held), its
// hold (price x duration while it runs), and its settlement on the
// upstream's seconds, rounded up, never above the hold, to the last unit
// of the wallet. Rows are unit type video; Idempotency-Key is honoured.
func TestDigitalHumanModels(t *testing.T) {
	e := startDH(t, nil)
	var spent money.Nano
	// run submits body, checks the hold while it runs (the job takes
	// 600 ms), and the settlement of the seconds it lasts.
	run := func(body string, held money.Nano, secs int64, price string) {
		t.Helper()
		c := e.post(t, "/v1/videos/generations", body)
		id, _ := c.json(t)["id"].(string)
		if c.Status != 200 || !strings.HasPrefix(id, "vid_") || c.json(t)["status"] != "queued" {
			t.Fatalf("%s: %d %s", body, c.Status, c.Body)
		}
		if h := e.held(t); h != held {
			t.Fatalf("%s: held %s, want %s", body, h, held)
		}
		rec := e.poll(t, "/v1/videos/generations/"+id, "queued", "running").json(t)
		if rec["status"] != "succeeded" || !strings.Contains(str(rec["video_url"]), "/files/") || rec["duration"] != float64(secs) {
			t.Fatalf("%s: %v", body, rec)
		}
		cost := dhCost(t, price, secs)
		wantRow(t, e.rowOf(t, id), "success", "video", secs, cost)
		spent += cost
		if got := e.settled(t); got != spent {
			t.Fatalf("%s: charged %s in all, want %s", body, got, spent)
		}
	}
	slow := "?m=[sim:latency=600ms]"
	// dh-avatar: a preset avatar with audio; then a cloned voice with text
	// (the script's length decides: 25 characters / 3.3, 8 s, capped at
	// the 5 held).
	run(`{"model":"dh-avatar","avatar":"anna","audio_url":"https://media.example/a.wav`+slow+`[sim:seconds=2.5]","duration":6}`,
		dhCost(t, "dh-avatar", 6), 3, "dh-avatar")
	vc := e.post(t, "/v1/audio/voices", `{"model":"voice","name":"Ada","audio_url":"https://media.example/ada.wav"}`)
	voc, _ := vc.json(t)["id"].(string)
	if vc.Status != 200 || !strings.HasPrefix(voc, "voc_") {
		t.Fatalf("clone: %d %s", vc.Status, vc.Body)
	}
	spent += dhCost(t, "voice", 1)
	run(`{"model":"dh-avatar","avatar":"ben","voice":"`+voc+`","text":"Welcome to the toll road.","duration":5,"note":"`+slow+`"}`,
		dhCost(t, "dh-avatar", 5), 5, "dh-avatar")
	run(`{"model":"dh-avatar","avatar":"chen","voice":"nova","text":"Hi there.","duration":9,"note":"`+slow+`"}`,
		dhCost(t, "dh-avatar", 9), 3, "dh-avatar")
	// The three lip-sync models, each at its own price.
	for _, m := range []string{"dh-lipsync", "dh-lipsync-pro", "dh-lipsync-max"} {
		run(`{"model":"`+m+`","source_video_url":"https://media.example/v.mp4`+slow+`[sim:seconds=3.01]","audio_url":"https://media.example/a.wav","duration":7}`,
			dhCost(t, m, 7), 4, m)
	}
	// dh-motion at each tier (standard by default), and a flat price.
	two := `[{"type":"image_url","image_url":{"url":"https://media.example/p1.jpg"}},{"type":"image_url","image_url":{"url":"https://media.example/p2.jpg"}}]`
	for _, tier := range []string{"", "fast", "standard", "max"} {
		res, at := "", "standard"
		if tier != "" {
			res, at = `,"resolution":"`+tier+`"`, tier
		}
		run(`{"model":"dh-motion","source_video_url":"https://media.example/d.mp4`+slow+`[sim:seconds=2]","content":`+two+`,"face_count":2`+res+`,"duration":4}`,
			dhCost(t, "dh-motion/"+at, 4), 2, "dh-motion/"+at)
	}
	run(`{"model":"dh-motion-flat","source_video_url":"https://media.example/d.mp4`+slow+`","content":`+two+`,"resolution":"max","duration":3}`,
		dhCost(t, "dh-motion-flat", 3), 3, "dh-motion-flat")

	// A voice another account cloned, or one deleted, is no voice here:
	// 400 naming it, nothing held.
	other := newMediaAccount(t, e.g, "5")
	ovoc := str(other.post(t, "/v1/audio/voices", `{"model":"voice","name":"Oz","audio_url":"https://media.example/oz.wav"}`).json(t)["id"])
	gone := str(e.post(t, "/v1/audio/voices", `{"model":"voice","name":"Gus","audio_url":"https://media.example/gus.wav"}`).json(t)["id"])
	spent += dhCost(t, "voice", 1)
	if d := do(t, "DELETE", e.g.URL+"/v1/audio/voices/"+gone, bearer(e.key), ""); d.Status != 200 {
		t.Fatalf("delete voice %s: %d %s", gone, d.Status, d.Body)
	}
	for _, v := range []string{ovoc, gone} {
		e.wantRefused(t, e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"anna","voice":"`+v+`","text":"Hi.","duration":3}`),
			400, "invalid_request", "voice: '"+v+"' does not exist", spent)
	}

	// Idempotency-Key on a digital-human submit.
	body := `{"model":"dh-lipsync","source_video_url":"https://media.example/v.mp4","audio_url":"https://media.example/b.wav","duration":2}`
	first := e.post(t, "/v1/videos/generations", body, "Idempotency-Key", "lip-1")
	again := e.post(t, "/v1/videos/generations", body, "Idempotency-Key", "lip-1")
	if first.Status != 200 || string(first.Body) != string(again.Body) || again.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay: %s / %s", first.Body, again.Body)
	}
	e.poll(t, "/v1/videos/generations/"+first.json(t)["id"].(string), "queued", "running")
	spent += dhCost(t, "dh-lipsync", 2)

	// Every field rule: 400 invalid_request naming it, nothing held.
	a := `"audio_url":"https://media.example/a.wav"`
	for _, b := range []struct{ body, msg string }{
		{`{"model":"dh-avatar","avatar":"anna",` + a + `}`, "duration is required"},
		{`{"model":"dh-avatar","avatar":"anna",` + a + `,"duration":0}`, "duration must be a whole number"},
		{`{"model":"dh-avatar",` + a + `,"duration":3}`, "avatar is required"},
		{`{"model":"dh-avatar","avatar":"nobody",` + a + `,"duration":3}`, "avatar: 'nobody' does not exist"},
		{`{"model":"dh-avatar","avatar":"avt_0000","duration":3,` + a + `}`, "avatar: 'avt_0000' does not exist"},
		{`{"model":"dh-avatar","avatar":"anna","duration":3}`, "audio_url, or voice with text, is required"},
		{`{"model":"dh-avatar","avatar":"anna","duration":3,` + a + `,"voice":"nova","text":"x"}`, "not both"},
		{`{"model":"dh-avatar","avatar":"anna","duration":3,"voice":"nova"}`, "voice needs text"},
		{`{"model":"dh-avatar","avatar":"anna","duration":3,"text":"x"}`, "text needs voice"},
		{`{"model":"dh-avatar","avatar":"anna","duration":3,"voice":"nobody","text":"x"}`, "voice: 'nobody' does not exist"},
		{`{"model":"dh-avatar","avatar":"anna","duration":3,"voice":"voc_0000","text":"x"}`, "voice: 'voc_0000' does not exist"},
		{`{"model":"dh-avatar","avatar":"anna","duration":3,"audio_url":"http://10.0.0.8/a.wav"}`, "private"},
		{`{"model":"dh-avatar-create","avatar":"anna",` + a + `,"duration":3}`, "not served on this endpoint"},
		{`{"model":"dh-lipsync","audio_url":"https://media.example/a.wav","duration":3}`, "source_video_url is required"},
		{`{"model":"dh-lipsync-pro","source_video_url":"https://media.example/v.mp4","duration":3}`, "audio_url is required"},
		{`{"model":"dh-lipsync-max","source_video_url":"https://media.example/v.mp4",` + a + `}`, "duration is required"},
		{`{"model":"dh-lipsync","source_video_url":"file:///v.mp4",` + a + `,"duration":3}`, "http(s)"},
		{`{"model":"dh-motion","source_video_url":"https://media.example/d.mp4","content":` + two + `,"face_count":3,"duration":3}`,
			"face_count is 3 but content has 2 portraits"},
		{`{"model":"dh-motion","source_video_url":"https://media.example/d.mp4","content":[],"duration":3}`, "content is required"},
		{`{"model":"dh-motion","source_video_url":"https://media.example/d.mp4","content":[` + strings.Repeat(`{"type":"image_url","image_url":{"url":"https://media.example/p.jpg"}},`, 7) +
			`{"type":"image_url","image_url":{"url":"https://media.example/p.jpg"}}],"duration":3}`,
			"at most 7"},
		{`{"model":"dh-motion","source_video_url":"https://media.example/d.mp4","content":` + two + `,"face_count":8,"duration":3}`, "face_count must be"},
		{`{"model":"dh-motion","source_video_url":"https://media.example/d.mp4","content":` + two + `,"resolution":"ultra","duration":3}`, "resolution must be"},
		{`{"model":"dh-motion","source_video_url":"https://media.example/d.mp4","content":` + two + `}`, "duration is required"},
		{`{"model":"dh-motion-two","source_video_url":"https://media.example/d.mp4","content":` + two + `,"resolution":"max","duration":3}`,
			`no price for "max"`},
		{`{"model":"dh-nope","avatar":"anna",` + a + `,"duration":3}`, "does not exist"},
	} {
		code := "invalid_request"
		if strings.Contains(b.body, "dh-nope") {
			code = "model_not_found"
		}
		e.wantRefused(t, e.post(t, "/v1/videos/generations", b.body), 400, code, b.msg, spent)
	}
	// A model without a channel: 503.
	e.wantRefused(t, e.post(t, "/v1/videos/generations", `{"model":"dh-lipsync-nochan","source_video_url":"https://media.example/v.mp4",`+a+`,"duration":3}`),
		503, "no_channel_available", "no channel", spent)
	// Too little balance for the hold: 402 before anything runs.
	poor := newMediaAccount(t, e.g, "1")
	wantError(t, poor.post(t, "/v1/videos/generations", `{"model":"dh-lipsync-max","source_video_url":"https://media.example/v.mp4",`+a+`,"duration":3}`),
		402, "quota_exceeded", "")
}
