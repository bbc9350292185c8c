package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// The editing flow against the real binary, from template to compose
// result: categories and templates, a synchronous and an asynchronous
// recognition (charged on success only, asr_id recorded), composes with
// edited sentences, a template, a name card and pictures-in-picture, and
// every field rule of the compose and of the recognition by name, each
// 400 charging nothing.
func TestEditingFlow(t *testing.T) {
	e := startDH(t, nil)
	var spent money.Nano
	cats := e.get(t, "/v1/videos/clip-templates/categories").json(t)
	list, _ := cats["list"].([]any)
	if fields(cats) != "list" || len(list) != 6 || fields(list[0].(map[string]any)) != "cate_id,cate_name,sort" {
		t.Fatalf("categories %v", cats)
	}
	all := e.get(t, "/v1/videos/clip-templates").json(t)
	if fields(all) != "api_version,list,sid" || all["sid"] != "" || all["api_version"] == "" ||
		fields(all["list"].([]any)[0].(map[string]any)) != "cate_name,cover_url,demo_url,name,scene,style_id" {
		t.Fatalf("templates %v", all)
	}
	second := list[1].(map[string]any)
	some := e.get(t, "/v1/videos/clip-templates?cate_id="+str(second["cate_id"])).json(t)["list"].([]any)
	if len(some) == 0 || len(some) >= len(all["list"].([]any)) || some[0].(map[string]any)["cate_name"] != second["cate_name"] {
		t.Fatalf("templates of %v: %v", second, some)
	}
	style := str(some[0].(map[string]any)["style_id"])

	// A synchronous recognition.
	link := "https://media.example/talk.mp4"
	c := e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`)
	sub := c.json(t)
	asr := str(sub["asr_id"])
	segs, _ := sub["segments"].([]any)
	if c.Status != 200 || sub["model"] != "clip-subtitle" || !strings.HasPrefix(asr, "sub_") || sub["api_version"] == "" || len(segs) < 3 ||
		mustJSON(sub["segments"]) != mustJSON(sub["sentences"]) {
		t.Fatalf("recognition: %d %s", c.Status, c.Body)
	}
	seg0 := segs[0].(map[string]any)
	if r, _ := seg0["showRange"].([]any); len(r) != 2 || str(seg0["content"]) == "" {
		t.Fatalf("a subtitle line %v", seg0)
	}
	wantRow(t, e.rowOf(t, c.Header.Get("x-gateway-trace")), "success", "transcript", 1, dhCost(t, "clip-subtitle", 1))
	spent += dhCost(t, "clip-subtitle", 1)

	// Compose with everything edited: one task at 90 (here 0.9).
	edited := make([]map[string]any, len(segs))
	for i := range segs {
		edited[i] = map[string]any{"showRange": []int{0, 1}, "content": "line " + itoa(i)}
	}
	ed, _ := json.Marshal(edited)
	pips := strings.TrimSuffix(strings.Repeat(`{"media_url":"https://media.example/p.png","begin_time":1000,"end_time":2500},`, 20), ",")
	body := `{"model":"clip-compose","video_url":"` + link + `","asr_id":"` + asr + `","video_style_id":"` + style +
		`","title":"` + strings.Repeat("t", 45) + `","enable_title_effect":true,"enable_keyword_effect":false,` +
		`"music_url":"https://media.example/m.mp3","name_card":{"name":"` + strings.Repeat("n", 20) + `","description":"` + strings.Repeat("d", 40) + `"},` +
		`"sentences":` + string(ed) + `,"pip_config":[` + pips + `]}`
	cc := e.post(t, "/v1/videos/generations", body, "Idempotency-Key", "compose-1")
	vid, _ := cc.json(t)["id"].(string)
	if cc.Status != 200 || !strings.HasPrefix(vid, "vid_") {
		t.Fatalf("compose: %d %s", cc.Status, cc.Body)
	}
	if again := e.post(t, "/v1/videos/generations", body, "Idempotency-Key", "compose-1"); string(again.Body) != string(cc.Body) {
		t.Fatalf("replay %s", again.Body)
	}
	res := e.poll(t, "/v1/videos/generations/"+vid, "queued", "running").json(t)
	if res["status"] != "succeeded" || !strings.Contains(str(res["video_url"]), "/files/") || res["model"] != "clip-compose" {
		t.Fatalf("compose result %v", res)
	}
	if v := do(t, "GET", str(res["video_url"]), nil, ""); v.Status != 200 || len(v.Body) == 0 {
		t.Fatalf("the composed video: %d", v.Status)
	}
	wantRow(t, e.rowOf(t, vid), "success", "video", 1, dhCost(t, "clip-compose", 1))
	spent += dhCost(t, "clip-compose", 1)

	// An asynchronous recognition: 202, polled, then composed.
	a := e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`?v=2[sim:latency=400ms]","async":true}`)
	am := a.json(t)
	sid := str(am["id"])
	if a.Status != 202 || fields(am) != "api_version,asr_id,error,id,model,object,status,video_url" || am["object"] != "clip_subtitle" ||
		am["status"] != "running" || am["asr_id"] != sid || am["model"] != "clip-subtitle" {
		t.Fatalf("async recognition: %d %s", a.Status, a.Body)
	}
	if p := e.get(t, "/v1/videos/clip-subtitles/"+sid); p.Status != 202 || p.json(t)["status"] != "running" {
		t.Fatalf("poll while running: %d %s", p.Status, p.Body)
	}
	done := e.pollSubtitle(t, sid)
	if done["status"] != "succeeded" || done["asr_id"] != sid || len(done["segments"].([]any)) == 0 || done["error"] != nil {
		t.Fatalf("async recognition %v", done)
	}
	spent += dhCost(t, "clip-subtitle", 1)
	c2 := e.post(t, "/v1/videos/generations", `{"model":"clip-compose","video_url":"`+str(done["video_url"])+`","asr_id":"`+sid+`"}`)
	e.poll(t, "/v1/videos/generations/"+c2.json(t)["id"].(string), "queued", "running")
	spent += dhCost(t, "clip-compose", 1)
	if got := e.settled(t); got != spent {
		t.Fatalf("charged %s, want %s", got, spent)
	}

	// The compose's rules, each a 400 that charges nothing.
	base := `"model":"clip-compose","video_url":"` + link + `","asr_id":"` + asr + `"`
	short := `[{"content":"only one"}]`
	for _, b := range []struct{ body, msg string }{
		{`{` + base + `,"sentences":` + short + `}`, "the recognition has " + itoa(len(segs))},
		{`{` + base + `,"sentences":` + strings.Replace(string(ed), `"line 1"`, `"  "`, 1) + `}`, "sentences[1].content must be a non-empty string"},
		{`{` + base + `,"video_style_id":"no-such-style"}`, "not a listed template"},
		{`{"model":"clip-compose","video_url":"https://media.example/other.mp4","asr_id":"` + asr + `"}`, "video_url must be the link"},
		{`{` + base + `,"name_card":{"name":"` + strings.Repeat("n", 21) + `"}}`, "name_card.name is longer than 20"},
		{`{` + base + `,"name_card":{"name":"Ada","description":"` + strings.Repeat("d", 41) + `"}}`, "name_card.description is longer than 40"},
		{`{` + base + `,"pip_config":[` + pips + `,` + pips[:strings.Index(pips, "},")+1] + `]}`, "at most 20"},
		{`{` + base + `,"pip_config":[{"media_url":"https://media.example/p.png","begin_time":5,"end_time":5}]}`, "end_time (5) must be greater than begin_time (5)"},
		{`{` + base + `,"music_url":"http://192.168.1.9/m.mp3"}`, "private"},
		{`{"model":"clip-compose","video_url":"` + link + `"}`, "asr_id is required"},
		{`{"model":"clip-compose","video_url":"` + link + `","asr_id":"sub_0123"}`, "asr_id: 'sub_0123' does not exist"},
		{`{"model":"clip-compose","video_url":"` + link + `","asr_id":"no-prefix"}`, "asr_id: 'no-prefix' does not exist"},
		{`{"model":"clip-compose","asr_id":"` + asr + `"}`, "video_url is required"},
	} {
		e.wantRefused(t, e.post(t, "/v1/videos/generations", b.body), 400, "invalid_request", b.msg, spent)
	}
	// Another account's recognition does not exist for this one.
	other := newMediaAccount(t, e.g, "5")
	oasr := str(other.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`).json(t)["asr_id"])
	e.wantRefused(t, e.post(t, "/v1/videos/generations", `{"model":"clip-compose","video_url":"`+link+`","asr_id":"`+oasr+`"}`),
		400, "invalid_request", "asr_id: '"+oasr+"' does not exist", spent)
	wantError(t, e.get(t, "/v1/videos/clip-subtitles/"+oasr), 404, "not_found", oasr)

	// Recognition's 400s: no speech, a source over 5 minutes, a bad link;
	// not charged, synchronously or as a task.
	for _, b := range []struct{ body, msg string }{
		{`{"video_url":"https://media.example/quiet.mp4?m=[sim:nospeech]"}`, "no speech was recognised"},
		{`{"video_url":"https://media.example/long.mp4?m=[sim:seconds=301]"}`, "at most 5 minutes"},
		{`{"video_url":"ftp://media.example/v.mp4"}`, "http(s)"},
		{`{"video_url":"http://[::1]/v.mp4"}`, "private"},
		{`{}`, "video_url is required"},
		{`{"video_url":"` + link + `","model":"clip-compose"}`, "runs the model 'clip-subtitle' only"},
	} {
		e.wantRefused(t, e.post(t, "/v1/videos/clip-subtitles", b.body), 400, "invalid_request", b.msg, spent)
	}
	q := e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"https://media.example/quiet.mp4?m=[sim:nospeech]","async":true}`)
	qid := str(q.json(t)["id"])
	failed := e.pollSubtitle(t, qid)
	if failed["status"] != "failed" || !strings.Contains(str(failed["error"]), "no speech") {
		t.Fatalf("async without speech: %v", failed)
	}
	wantRow(t, e.rowOf(t, qid), "error", "transcript", 0, 0)
	e.wantRefused(t, e.post(t, "/v1/videos/generations", `{"model":"clip-compose","video_url":"https://media.example/quiet.mp4?m=[sim:nospeech]","asr_id":"`+qid+`"}`),
		400, "invalid_request", "is not ready", spent)
}

// pollSubtitle polls an asynchronous recognition until it is no longer
// running (202) and returns its record.
func (e *mediaEnv) pollSubtitle(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		p := e.get(t, "/v1/videos/clip-subtitles/"+id)
		if p.Status != 202 {
			if p.Status != 200 {
				t.Fatalf("poll %s: %d %s", id, p.Status, p.Body)
			}
			return p.json(t)
		}
		if time.Now().After(deadline) {
			t.Fatalf("recognition %s still running: %s", id, p.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Errors rule 9 on the digital-human and editing routes: a model outside
// the key's allowlist is 403 model_not_allowed (the editing helpers need
// clip-compose, read routes included; recognition needs no entry of its
// own); other families keep 400; a route's implied model, or gate, this
// gateway does not configure is 404 model_not_found; the synchronous
// recognition's wait (the model's call_timeout, 240 s by default) ends in
// 504 upstream_timeout, not charged.
func TestDigitalHumanErrorsRule9(t *testing.T) {
	e := startDH(t, nil)
	link := "https://media.example/talk.mp4"
	asr := str(e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`).json(t)["asr_id"])
	spent := dhCost(t, "clip-subtitle", 1)
	keyed := func(allowed []string) *mediaEnv {
		_, k := e.g.Key(e.acct, map[string]any{"allowed_models": allowed})
		return &mediaEnv{g: e.g, acct: e.acct, key: k, credit: e.credit}
	}
	forbidden := func(c call, model string) {
		t.Helper()
		wantError(t, c, 403, "model_not_allowed", model)
		if _, typ, _ := c.errorOf(t); typ != "permission_error" {
			t.Fatalf("403 of type %s", typ)
		}
	}
	// Allowed clip-compose only: every editing helper and the compose;
	// recognition runs (billed as clip-subtitle) without an entry of its own.
	clipOnly := keyed([]string{"clip-compose"})
	for _, p := range []string{"/v1/videos/clip-templates/categories", "/v1/videos/clip-templates", "/v1/videos/clip-subtitles/" + asr} {
		if c := clipOnly.get(t, p); c.Status != 200 {
			t.Fatalf("%s with clip-compose allowed: %d %s", p, c.Status, c.Body)
		}
	}
	if c := clipOnly.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`); c.Status != 200 {
		t.Fatalf("recognition with clip-compose allowed: %d %s", c.Status, c.Body)
	}
	spent += dhCost(t, "clip-subtitle", 1)
	// Allowed everything but clip-compose: 403 on every helper.
	noClip := keyed([]string{"clip-subtitle", "dh-avatar", "vid"})
	for _, p := range []string{"/v1/videos/clip-templates/categories", "/v1/videos/clip-templates?cate_id=1", "/v1/videos/clip-subtitles/" + asr} {
		forbidden(noClip.get(t, p), "clip-compose")
	}
	forbidden(noClip.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`), "clip-compose")
	forbidden(noClip.post(t, "/v1/videos/generations", `{"model":"clip-compose","video_url":"`+link+`","asr_id":"`+asr+`"}`), "clip-compose")
	forbidden(noClip.post(t, "/v1/videos/generations", `{"model":"dh-lipsync","source_video_url":"https://media.example/v.mp4","audio_url":"https://media.example/a.wav","duration":2}`), "dh-lipsync")
	forbidden(noClip.post(t, "/v1/videos/avatars", `{"name":"Ada","source_url":"https://media.example/a.jpg"}`), "dh-avatar-create")
	// An empty allowlist denies every model: 403 here too.
	none := keyed([]string{})
	forbidden(none.post(t, "/v1/videos/generations", `{"model":"dh-motion","source_video_url":"https://media.example/d.mp4","content":[{"type":"image_url","image_url":{"url":"https://media.example/p.jpg"}}],"duration":2}`), "dh-motion")
	forbidden(none.get(t, "/v1/videos/clip-templates"), "clip-compose")
	// An allowed digital-human model runs; a video model keeps the truth
	// table's 400 on the same route.
	ok := noClip.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"anna","audio_url":"https://media.example/a.wav","duration":2}`)
	if ok.Status != 200 {
		t.Fatalf("an allowed dh-avatar: %d %s", ok.Status, ok.Body)
	}
	e.poll(t, "/v1/videos/generations/"+str(ok.json(t)["id"]), "queued", "running")
	wantError(t, keyed([]string{"dh-avatar"}).post(t, "/v1/videos/generations", `{"model":"vid","prompt":"waves","duration":2}`), 400, "model_not_allowed", "vid")
	// An unknown model on the shared route is the truth table's 400.
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"dh-unknown","duration":2}`), 400, "model_not_found", "dh-unknown")
	// 504: a recognition past the synchronous wait (2 s here), not charged.
	c := e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"https://media.example/slow.mp4?m=[sim:latency=4s]"}`)
	wantError(t, c, 504, "upstream_timeout", "")
	wantRow(t, e.rowOf(t, c.Header.Get("x-gateway-trace")), "interrupted", "transcript", 0, 0) // a gateway timeout
	spent += dhCost(t, "dh-avatar", 2)
	if got := e.settled(t); got != spent {
		t.Fatalf("charged %s, want %s", got, spent)
	}

	// A gateway that configures none of the implied models: 404
	// model_not_found on the routes that imply them.
	bare := startMedia(t, testgw.Options{Config: `
server {
  allow_private_urls = true
}
store "badger" {
  dir = "@DATA@"
}
channel "sim" {
  vendor   = "sim"
  base_url = "sim://local"
  families = ["video", "lipsync"]
  models   = ["vid", "dh-lipsync"]
}
model "vid" {
  family       = "video"
  max_duration = 8
  price {
    per_second = "0.07"
  }
}
model "dh-lipsync" {
  family = "lipsync"
  price {
    per_second = "0.11"
  }
}
`})
	wantError(t, bare.post(t, "/v1/videos/avatars", `{"name":"Ada","source_url":"https://media.example/a.jpg"}`), 404, "model_not_found", "dh-avatar-create")
	wantError(t, bare.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`), 404, "model_not_found", "clip-subtitle")
	wantError(t, bare.get(t, "/v1/videos/clip-templates"), 404, "model_not_found", "clip-compose")
	wantError(t, bare.get(t, "/v1/videos/clip-templates/categories"), 404, "model_not_found", "clip-compose")
	wantError(t, bare.get(t, "/v1/videos/clip-subtitles/sub_0"), 404, "model_not_found", "clip-compose")
	// A model the body names and the registry lacks stays 400.
	wantError(t, bare.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"anna","audio_url":"https://media.example/a.wav","duration":2}`),
		400, "model_not_found", "dh-avatar")
}
