package integration

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
)

var isoWithOffset = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$`)

// The avatar state machine against the real binary: a registration
// answers the spec's Avatar record at once (pending), holds its price,
// becomes ready and usable (a dh-avatar naming it runs on the channel
// that holds it), or failed with its error and a full refund (still
// listed); a pending avatar cannot be deleted or used; a deleted, failed
// or foreign one is 400 wherever it is named. Every unit is accounted.
func TestAvatarStateMachine(t *testing.T) {
	e := startDH(t, dhRefusingChannel)
	var spent money.Nano

	c := e.post(t, "/v1/videos/avatars", `{"name":"Ada","source_url":"https://media.example/ada.jpg?m=[sim:latency=1500ms]"}`)
	rec := c.json(t)
	id, _ := rec["id"].(string)
	if c.Status != 200 || fields(rec) != "created_at,error,id,name,source_kind,status" || rec["status"] != "pending" ||
		rec["error"] != nil || rec["name"] != "Ada" || rec["source_kind"] != "image" || !strings.HasPrefix(id, "avt_") ||
		!isoWithOffset.MatchString(str(rec["created_at"])) {
		t.Fatalf("registration: %d %s", c.Status, c.Body)
	}
	if h := e.held(t); h != dhCost(t, "dh-avatar-create", 1) {
		t.Fatalf("held %s while pending", h)
	}
	if got := e.get(t, "/v1/videos/avatars/"+id).json(t); got["status"] != "pending" || got["created_at"] != rec["created_at"] {
		t.Fatalf("poll while pending: %v", got)
	}
	wantError(t, do(t, "DELETE", e.g.URL+"/v1/videos/avatars/"+id, bearer(e.key), ""), 400, "invalid_request", "pending")
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"`+id+`","audio_url":"https://media.example/a.wav","duration":3}`),
		400, "invalid_request", "avatar: '"+id+"' is not ready")
	ready := e.poll(t, "/v1/videos/avatars/"+id, "pending").json(t)
	if ready["status"] != "ready" || ready["error"] != nil || fields(ready) != fields(rec) {
		t.Fatalf("ready: %v", ready)
	}
	spent += dhCost(t, "dh-avatar-create", 1)
	wantRow(t, e.rowOf(t, id), "success", "avatar", 1, dhCost(t, "dh-avatar-create", 1))

	// The ready avatar makes videos, on the channel that holds it: the
	// refusing channel above it is never tried.
	v := e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"`+id+`","audio_url":"https://media.example/a.wav?m=[sim:seconds=3.2]","duration":6}`)
	vid, _ := v.json(t)["id"].(string)
	if v.Status != 200 || !strings.HasPrefix(vid, "vid_") {
		t.Fatalf("dh-avatar: %d %s", v.Status, v.Body)
	}
	if got := e.poll(t, "/v1/videos/generations/"+vid, "queued", "running").json(t); got["status"] != "succeeded" || got["duration"] != float64(4) {
		t.Fatalf("dh-avatar video %v", got)
	}
	wantRow(t, e.rowOf(t, vid), "success", "video", 4, dhCost(t, "dh-avatar", 4))
	spent += dhCost(t, "dh-avatar", 4)
	// A preset avatar is no reference: the refusing channel answers it.
	e.wantRefused(t, e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"anna","audio_url":"https://media.example/a.wav","duration":2}`),
		400, "invalid_request", "Simulated upstream error 400", spent)

	// A cloned voice pins too: a preset avatar speaking with it runs on
	// the channel that cloned the voice (12 characters / 3.3: 4 s).
	voc := str(e.post(t, "/v1/audio/voices", `{"model":"voice","name":"Vi","audio_url":"https://media.example/vi.wav"}`).json(t)["id"])
	spent += dhCost(t, "voice", 1)
	pv := e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"anna","voice":"`+voc+`","text":"Hello there.","duration":6}`)
	if pv.Status != 200 {
		t.Fatalf("dh-avatar with a cloned voice: %d %s", pv.Status, pv.Body)
	}
	if got := e.poll(t, "/v1/videos/generations/"+str(pv.json(t)["id"]), "queued", "running").json(t); got["status"] != "succeeded" || got["duration"] != float64(4) {
		t.Fatalf("dh-avatar with a cloned voice: %v", got)
	}
	spent += dhCost(t, "dh-avatar", 4)

	// A registration the upstream fails: failed with its error, refunded
	// in full, still listed as the refund's evidence.
	f := e.post(t, "/v1/videos/avatars", `{"name":"Bo","source_url":"https://media.example/bo.mp4?m=[sim:fail=500]","source_kind":"video"}`)
	fid := f.json(t)["id"].(string)
	failed := e.poll(t, "/v1/videos/avatars/"+fid, "pending").json(t)
	if failed["status"] != "failed" || !strings.Contains(str(failed["error"]), "Simulated upstream error 500") || failed["source_kind"] != "video" {
		t.Fatalf("failed registration: %v", failed)
	}
	wantRow(t, e.rowOf(t, fid), "error", "avatar", 0, 0)
	if got := e.settled(t); got != spent {
		t.Fatalf("charged %s, want %s (the failed registration refunded)", got, spent)
	}
	list := e.get(t, "/v1/videos/avatars").json(t)
	data, _ := list["data"].([]any)
	if fields(list) != "data,object" || list["object"] != "list" || len(data) != 2 ||
		data[0].(map[string]any)["id"] != fid || data[1].(map[string]any)["id"] != id {
		t.Fatalf("list (newest first, no cursor fields): %v", list)
	}
	if l := e.get(t, "/v1/videos/avatars?status=failed").json(t); len(l["data"].([]any)) != 1 {
		t.Fatalf("failed avatars: %v", l)
	}
	wantError(t, e.get(t, "/v1/videos/avatars?cursor=x"), 400, "invalid_request", "not paged")
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"`+fid+`","audio_url":"https://media.example/a.wav","duration":3}`),
		400, "invalid_request", "avatar: '"+fid+"' is not ready")

	// Deletes: a failed or a ready avatar disappears from its account.
	for _, d := range []string{fid, id} {
		c := do(t, "DELETE", e.g.URL+"/v1/videos/avatars/"+d, bearer(e.key), "")
		if c.Status != 200 || c.json(t)["deleted"] != true {
			t.Fatalf("delete %s: %d %s", d, c.Status, c.Body)
		}
		wantError(t, e.get(t, "/v1/videos/avatars/"+d), 404, "not_found", d)
	}
	if l := e.get(t, "/v1/videos/avatars").json(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("list after the deletes: %v", l)
	}
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"`+id+`","audio_url":"https://media.example/a.wav","duration":3}`),
		400, "invalid_request", "avatar: '"+id+"' does not exist")

	// Another account's avatar does not exist for this one.
	other := newMediaAccount(t, e.g, "10")
	oid := other.post(t, "/v1/videos/avatars", `{"name":"Cy","source_url":"https://media.example/cy.jpg"}`).json(t)["id"].(string)
	other.poll(t, "/v1/videos/avatars/"+oid, "pending")
	wantError(t, e.get(t, "/v1/videos/avatars/"+oid), 404, "not_found", oid)
	wantError(t, do(t, "DELETE", e.g.URL+"/v1/videos/avatars/"+oid, bearer(e.key), ""), 404, "not_found", oid)
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"dh-avatar","avatar":"`+oid+`","audio_url":"https://media.example/a.wav","duration":3}`),
		400, "invalid_request", "avatar: '"+oid+"' does not exist")

	// Idempotency-Key: a retried registration is the original answer.
	first := e.post(t, "/v1/videos/avatars", `{"name":"Di","source_url":"https://media.example/di.jpg"}`, "Idempotency-Key", "reg-di-1")
	again := e.post(t, "/v1/videos/avatars", `{"name":"Di","source_url":"https://media.example/di.jpg"}`, "Idempotency-Key", "reg-di-1")
	if first.Status != 200 || string(again.Body) != string(first.Body) || again.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay: %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
	}
	wantError(t, e.post(t, "/v1/videos/avatars", `{"name":"Ed","source_url":"https://media.example/di.jpg"}`, "Idempotency-Key", "reg-di-1"),
		409, "idempotency_key_reuse", "")
	e.poll(t, "/v1/videos/avatars/"+first.json(t)["id"].(string), "pending")
	spent += dhCost(t, "dh-avatar-create", 1)

	// The registration's 400s: nothing held, nothing charged.
	for _, b := range []struct{ body, msg string }{
		{`{"source_url":"https://media.example/a.jpg"}`, "name is required"},
		{`{"name":"   ","source_url":"https://media.example/a.jpg"}`, "name is required"},
		{`{"name":"` + strings.Repeat("名", 21) + `","source_url":"https://media.example/a.jpg"}`, "longer than 20"},
		{`{"name":"Ada"}`, "source_url is required"},
		{`{"name":"Ada","source_url":"ftp://media.example/a.jpg"}`, "http(s)"},
		{`{"name":"Ada","source_url":"http://127.0.0.1/a.jpg"}`, "private"},
		{`{"name":"Ada","source_url":"http://localhost:8080/a.jpg"}`, "private"},
		{`{"name":"Ada","source_url":"https://media.example/a.jpg","source_kind":"gif"}`, "source_kind"},
		{`{"name":"Ada","source_url":"https://media.example/a.jpg","model":"dh-avatar"}`, "dh-avatar-create"},
	} {
		e.wantRefused(t, e.post(t, "/v1/videos/avatars", b.body), 400, "invalid_request", b.msg, spent)
	}
	presets := e.get(t, "/v1/videos/avatars/presets").json(t)
	if fields(presets) != "avatars" || len(presets["avatars"].([]any)) == 0 || fields(presets["avatars"].([]any)[0].(map[string]any)) != "id,name" {
		t.Fatalf("presets %v", presets)
	}
	if got := e.settled(t); got != spent {
		t.Fatalf("charged %s, want %s", got, spent)
	}
}
