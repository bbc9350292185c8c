package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// A video's whole life against the real binary: submit (the spec's four
// fields, status queued), the hold of price x duration, polls of the
// record until it succeeds with video_url, expires_at and the seconds
// delivered, the file behind the link, and the row settled on the
// upstream's seconds rounded up, the excess refunded.
func TestVideoSubmitPollSettle(t *testing.T) {
	e := startMedia(t, testgwOptions())
	c := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"waves on a pier [sim:seconds=3.2,latency=400ms]","duration":5}`)
	if c.Status != 200 {
		t.Fatalf("submit: %d %s", c.Status, c.Body)
	}
	sub := c.json(t)
	id, _ := sub["id"].(string)
	if len(sub) != 4 || len(id) < 5 || id[:4] != "vid_" || sub["status"] != "queued" || sub["model"] != "vid" ||
		int64(num(sub["created_at"])) < time.Now().Add(-time.Minute).Unix() {
		t.Fatalf("submit answer %s", c.Body)
	}
	if h := e.held(t); h != priced(t, "vid", 5) {
		t.Fatalf("held %s, want price x duration %s", h, priced(t, "vid", 5))
	}
	running := e.get(t, "/v1/videos/generations/"+id)
	if running.Status != 200 {
		t.Fatalf("poll while running: %d %s", running.Status, running.Body)
	}
	if st := running.json(t)["status"]; st != "queued" && st != "running" {
		t.Fatalf("in-flight status %v", st)
	}
	done := e.poll(t, "/v1/videos/generations/"+id, "queued", "running")
	rec := done.json(t)
	if done.Status != 200 || rec["status"] != "succeeded" || rec["id"] != id || rec["model"] != "vid" ||
		num(rec["duration"]) != 4 || num(rec["expires_at"]) <= 0 {
		t.Fatalf("succeeded record %s", done.Body)
	}
	resp, err := http.Get(rec["video_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/mp4" || !bytes.Equal(b[4:8], []byte("ftyp")) {
		t.Fatalf("video file: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), b[:min(len(b), 12)])
	}
	if spent := e.settled(t); spent != priced(t, "vid", 4) {
		t.Fatalf("charged %s, want 4 seconds (3.2 rounded up) at 0.07 = %s", spent, priced(t, "vid", 4))
	}
	row := e.rowOf(t, id)
	wantRow(t, row, "success", "video", 4, priced(t, "vid", 4))
	if row["task_id"] != id {
		t.Fatalf("row task_id %v", row["task_id"])
	}
}

// The hold caps the cost: upstream seconds above the duration held settle
// at the hold; a call without duration holds the model's max_duration.
func TestVideoHoldCapsAndMaxDuration(t *testing.T) {
	e := startMedia(t, testgwOptions())
	over := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"long [sim:seconds=30]","duration":3}`).json(t)
	e.poll(t, "/v1/videos/generations/"+over["id"].(string), "queued", "running")
	if got := e.settled(t); got != priced(t, "vid", 3) {
		t.Fatalf("charged %s for 30 upstream seconds held at 3, want %s", got, priced(t, "vid", 3))
	}
	c := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"no duration [sim:latency=1s]"}`)
	if c.Status != 200 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	if h := e.held(t); h != priced(t, "vid", 8) {
		t.Fatalf("held %s without duration, want max_duration 8 x 0.07", h)
	}
	done := e.poll(t, "/v1/videos/generations/"+c.json(t)["id"].(string), "queued", "running").json(t)
	if done["status"] != "succeeded" || num(done["duration"]) != 8 {
		t.Fatalf("%v", done)
	}
	if got := e.settled(t); got != priced(t, "vid", 3)+priced(t, "vid", 8) {
		t.Fatalf("charged %s", got)
	}
}

// A failed video polls 200 as a record with status failed and its error,
// is listed as that record, and is refunded in full.
func TestVideoFailedIsARecordRefunded(t *testing.T) {
	e := startMedia(t, testgwOptions())
	id := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"boom [sim:fail=500,latency=100ms]","duration":2}`).json(t)["id"].(string)
	c := e.poll(t, "/v1/videos/generations/"+id, "queued", "running")
	rec := c.json(t)
	errObj, _ := rec["error"].(map[string]any)
	if c.Status != 200 || rec["status"] != "failed" || rec["id"] != id || errObj == nil || errObj["code"] != "upstream_error" || errObj["message"] == "" {
		t.Fatalf("failed record: %d %s", c.Status, c.Body)
	}
	if got := e.settled(t); got != 0 {
		t.Fatalf("a failed video charged %s", got)
	}
	wantRow(t, e.rowOf(t, id), "error", "video", 0, 0)
	list := e.get(t, "/v1/videos/generations?status=failed").json(t)
	data := list["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != id || data[0].(map[string]any)["error"] == nil {
		t.Fatalf("list of failed: %v", list)
	}
	// A refused submit is the client's error at once, and no task.
	r := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"no [sim:error=422]","duration":2}`)
	wantError(t, r, 422, "invalid_request", "422")
	if n := len(e.get(t, "/v1/videos/generations").json(t)["data"].([]any)); n != 1 {
		t.Fatalf("a refused submit is listed: %d tasks", n)
	}
}

// A model may shorten its family's time limits: vid-quick's max_runtime
// of 2 s ends a video that runs longer as failed (timed out) and refunded.
func TestVideoModelShortensMaxRuntime(t *testing.T) {
	e := startMedia(t, testgwOptions())
	id := e.post(t, "/v1/videos/generations", `{"model":"vid-quick","prompt":"slow [sim:latency=1h]","duration":2}`).json(t)["id"].(string)
	c := e.poll(t, "/v1/videos/generations/"+id, "queued", "running")
	rec := c.json(t)
	if rec["status"] != "failed" || rec["error"].(map[string]any)["code"] != "upstream_timeout" {
		t.Fatalf("%s", c.Body)
	}
	if got := e.settled(t); got != 0 {
		t.Fatalf("a timed-out video charged %s", got)
	}
}

// The rules of the video route, each a 400 (or the spec's code) with
// nothing held; tiers bill the resolution asked, and a tier the model does
// not price is refused, never billed at another price.
func TestVideoRulesAndTiers(t *testing.T) {
	e := startMedia(t, testgwOptions())
	for _, tc := range []struct {
		desc, body string
		status     int
		code, msg  string
	}{
		{"no prompt", `{"model":"vid","duration":2}`, 400, "invalid_request", "prompt is required"},
		{"duration above the maximum", `{"model":"vid","prompt":"p","duration":9}`, 400, "invalid_request", "maximum of 8"},
		{"duration not whole", `{"model":"vid","prompt":"p","duration":1.5}`, 400, "invalid_request", "duration"},
		{"too many references", `{"model":"vid","prompt":"p","content":[{"type":"image_url","image_url":{"url":"https://h/1.png"}},{"type":"image_url","image_url":{"url":"https://h/2.png"}},{"type":"image_url","image_url":{"url":"https://h/3.png"}}]}`, 400, "invalid_request", "at most 2"},
		{"a resolution the model does not offer", `{"model":"vid-tiered","prompt":"p","duration":2,"resolution":"1080p"}`, 400, "invalid_request", "1080p"},
		{"resolution required with a reference video", `{"model":"vid-tiered","prompt":"p","duration":2,"content":[{"type":"video_url","video_url":{"url":"https://h/v.mp4"}}]}`, 400, "invalid_request", "resolution is required"},
		{"a model priced by tier needs one", `{"model":"vid-tiered","prompt":"p","duration":2}`, 400, "invalid_request", "resolution"},
		{"unknown model", `{"model":"nope","prompt":"p"}`, 400, "model_not_found", "nope"},
		{"a model of another family", `{"model":"mus","prompt":"p"}`, 503, "no_channel_available", "music"},
		{"no model", `{"prompt":"p"}`, 400, "invalid_request", "model is required"},
		{"not JSON", `{"model":`, 400, "invalid_request", "JSON"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			wantError(t, e.post(t, "/v1/videos/generations", tc.body), tc.status, tc.code, tc.msg)
		})
	}
	if got := e.settled(t); got != 0 {
		t.Fatalf("refusals charged %s", got)
	}
	id := e.post(t, "/v1/videos/generations", `{"model":"vid-tiered","prompt":"p [sim:latency=300ms]","duration":4,"resolution":"720p"}`).json(t)["id"].(string)
	if h := e.held(t); h != priced(t, "vid-tiered/720p", 4) {
		t.Fatalf("held %s, want 4 s at 720p's 0.11", h)
	}
	e.poll(t, "/v1/videos/generations/"+id, "queued", "running")
	if got := e.settled(t); got != priced(t, "vid-tiered/720p", 4) {
		t.Fatalf("charged %s", got)
	}
}

// Lists of the video route: every status by default, a status filter,
// limits and cursors, the spec's list limits.
func TestVideoListFiltersAndCursors(t *testing.T) {
	e := startMedia(t, testgwOptions())
	var ids []string
	for i := range 5 {
		body := `{"model":"vid","prompt":"clip ` + itoa(i) + `","duration":1}`
		if i == 2 {
			body = `{"model":"vid","prompt":"clip 2 [sim:fail=500]","duration":1}`
		}
		id := e.post(t, "/v1/videos/generations", body).json(t)["id"].(string)
		e.poll(t, "/v1/videos/generations/"+id, "queued", "running")
		ids = append(ids, id)
		time.Sleep(5 * time.Millisecond)
	}
	page := func(q string) (ids []string, next string) {
		t.Helper()
		c := e.get(t, "/v1/videos/generations"+q)
		if c.Status != 200 {
			t.Fatalf("%s: %d %s", q, c.Status, c.Body)
		}
		var p struct {
			Object     string
			Data       []map[string]any
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(c.Body, &p); err != nil || p.Object != "list" {
			t.Fatalf("%s", c.Body)
		}
		for _, d := range p.Data {
			ids = append(ids, d["id"].(string))
		}
		if p.NextCursor != nil {
			next = *p.NextCursor
		}
		if p.HasMore != (next != "") {
			t.Fatalf("has_more %v with cursor %q", p.HasMore, next)
		}
		return ids, next
	}
	all, _ := page("")
	if len(all) != 5 || all[0] != ids[4] || all[4] != ids[0] {
		t.Fatalf("default list (all statuses, newest first): %v", all)
	}
	if got, _ := page("?status=failed"); len(got) != 1 || got[0] != ids[2] {
		t.Fatalf("failed: %v", got)
	}
	if got, _ := page("?status=succeeded"); len(got) != 4 {
		t.Fatalf("succeeded: %v", got)
	}
	if got, _ := page("?status=failed,succeeded"); len(got) != 5 {
		t.Fatalf("two statuses: %v", got)
	}
	var walked []string
	q := "?limit=2"
	for q != "" {
		got, next := page(q)
		walked = append(walked, got...)
		q = ""
		if next != "" {
			q = "?limit=2&cursor=" + next
		}
	}
	if len(walked) != 5 || walked[0] != all[0] || walked[4] != all[4] {
		t.Fatalf("walked %v", walked)
	}
	wantError(t, e.get(t, "/v1/videos/generations?status=done"), 400, "invalid_request", "status")
	wantError(t, e.get(t, "/v1/videos/generations?limit=101"), 400, "invalid_request", "limit")
	wantError(t, e.get(t, "/v1/videos/generations?limit=0"), 400, "invalid_request", "limit")
	// Another account sees none of them.
	other := newMediaAccount(t, e.g, "5")
	if got := other.get(t, "/v1/videos/generations").json(t)["data"].([]any); len(got) != 0 {
		t.Fatalf("another account lists %v", got)
	}
	wantError(t, other.get(t, "/v1/videos/generations/"+ids[0]), 404, "not_found", ids[0])
	want := priced(t, "vid", 4)
	if got := e.settled(t); got != want {
		t.Fatalf("charged %s, want %s", got, want)
	}
}

// Idempotency-Key on a video submit: a retry replays the submit's answer
// and never makes a second task or upstream job; another body is 409.
func TestVideoIdempotency(t *testing.T) {
	e := startMedia(t, testgwOptions())
	body := `{"model":"vid","prompt":"once [sim:latency=300ms]","duration":2}`
	first := e.post(t, "/v1/videos/generations", body, "Idempotency-Key", "video-1")
	again := e.post(t, "/v1/videos/generations", body, "Idempotency-Key", "video-1")
	if first.Status != 200 || again.Status != 200 || !bytes.Equal(first.Body, again.Body) || again.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay: %d %s / %d %s %v", first.Status, first.Body, again.Status, again.Body, again.Header)
	}
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"other","duration":2}`, "Idempotency-Key", "video-1"),
		409, "idempotency_key_reuse", "video-1")
	id := first.json(t)["id"].(string)
	e.poll(t, "/v1/videos/generations/"+id, "queued", "running")
	if n := len(e.get(t, "/v1/videos/generations").json(t)["data"].([]any)); n != 1 {
		t.Fatalf("%d tasks after a retried submit", n)
	}
	if got := e.settled(t); got != priced(t, "vid", 2) {
		t.Fatalf("charged %s", got)
	}
}

// An operator cancels a running video: the task ends cancelled, refunded
// in full, and polls as a record with its error; an ended task cannot be
// cancelled.
func TestVideoCancelledByAnOperator(t *testing.T) {
	e := startMedia(t, testgwOptions())
	id := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"forever [sim:latency=1h]","duration":3}`).json(t)["id"].(string)
	if e.held(t) != priced(t, "vid", 3) {
		t.Fatal("no hold")
	}
	var out map[string]any
	if st := e.g.Admin("POST", "/tasks/"+id+"/cancel", nil, &out); st != 200 || out["status"] != "cancelled" {
		t.Fatalf("cancel: %d %v", st, out)
	}
	rec := e.get(t, "/v1/videos/generations/"+id).json(t)
	if rec["status"] != "cancelled" || rec["error"].(map[string]any)["code"] != "task_cancelled" {
		t.Fatalf("cancelled record %v", rec)
	}
	if got := e.settled(t); got != 0 {
		t.Fatalf("a cancelled video charged %s", got)
	}
	if st := e.g.AdminStatus("POST", "/tasks/"+id+"/cancel", nil, nil); st != 400 {
		t.Fatalf("cancelling an ended task: %d", st)
	}
	if st := e.g.AdminStatus("POST", "/tasks/vid_nope/cancel", nil, nil); st != 404 {
		t.Fatalf("cancelling a missing task: %d", st)
	}
	if got := e.get(t, "/v1/videos/generations?status=cancelled").json(t)["data"].([]any); len(got) != 1 {
		t.Fatalf("cancelled list %v", got)
	}
}

// A succeeded video whose hosted result passed its retention becomes
// expired (vid-short keeps results 2 s; the sweep runs every 500 ms): the
// poll says so, the list finds it, and no money moves.
func TestVideoExpires(t *testing.T) {
	e := startMedia(t, testgwOptions())
	id := e.post(t, "/v1/videos/generations", `{"model":"vid-short","prompt":"brief","duration":2}`).json(t)["id"].(string)
	rec := e.poll(t, "/v1/videos/generations/"+id, "queued", "running").json(t)
	if rec["status"] != "succeeded" {
		t.Fatalf("%v", rec)
	}
	charged := e.settled(t)
	got := e.poll(t, "/v1/videos/generations/"+id, "succeeded").json(t)
	if got["status"] != "expired" {
		t.Fatalf("after retention: %v", got)
	}
	if l := e.get(t, "/v1/videos/generations?status=expired").json(t)["data"].([]any); len(l) != 1 {
		t.Fatalf("expired list %v", l)
	}
	if after := e.settled(t); after != charged || charged != priced(t, "vid-short", 2) {
		t.Fatalf("charged %s then %s", charged, after)
	}
}
