package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Clip templates are operator data against the real binary: the file the
// clip model's clip_templates setting names serves the categories (in
// their sort order) and templates, and only its styles compose (a
// built-in one is then unlisted); the file is read again when it
// changes; one that cannot be read is a 500 and charges nothing.
func TestClipTemplatesFromOperatorFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clip-templates.json")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"categories": [{"cate_id": "b", "cate_name": "Second", "sort": 2}, {"cate_id": "a", "cate_name": "First", "sort": 1}],
  "templates": [
    {"style_id": "own-1", "name": "Own one", "cover_url": "https://cdn.example/1.jpg", "demo_url": "https://cdn.example/1.mp4", "cate_name": "First", "scene": "talks"},
    {"style_id": "own-2", "name": "Own two", "cover_url": "https://cdn.example/2.jpg", "demo_url": "https://cdn.example/2.mp4", "cate_name": "Second", "scene": "vlogs"}]}`)
	e := startDH(t, func(cfg string) string {
		return strings.Replace(cfg, `model "clip-compose" {
  family = "clip"`, `model "clip-compose" {
  family   = "clip"
  settings = { clip_templates = "`+path+`" }`, 1)
	})
	if got := strings.TrimSpace(mustJSON(e.get(t, "/v1/videos/clip-templates/categories").json(t))); got !=
		`{"list":[{"cate_id":"a","cate_name":"First","sort":1},{"cate_id":"b","cate_name":"Second","sort":2}]}` {
		t.Fatalf("categories from the file: %s", got)
	}
	all := e.get(t, "/v1/videos/clip-templates").json(t)
	if l := all["list"].([]any); len(l) != 2 || all["sid"] != "" || l[0].(map[string]any)["style_id"] != "own-1" ||
		l[1].(map[string]any)["demo_url"] != "https://cdn.example/2.mp4" {
		t.Fatalf("templates from the file: %v", all)
	}
	if l := e.get(t, "/v1/videos/clip-templates?cate_id=b").json(t)["list"].([]any); len(l) != 1 || l[0].(map[string]any)["style_id"] != "own-2" {
		t.Fatalf("templates of category b: %v", l)
	}

	link := "https://media.example/talk.mp4"
	asr := str(e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`).json(t)["asr_id"])
	spent := dhCost(t, "clip-subtitle", 1)
	compose := func(style string) call {
		return e.post(t, "/v1/videos/generations", `{"model":"clip-compose","video_url":"`+link+`","asr_id":"`+asr+`","video_style_id":"`+style+`"}`)
	}
	e.wantRefused(t, compose("talk-01"), 400, "invalid_request", "not a listed template", spent)
	c := compose("own-2")
	if c.Status != 200 {
		t.Fatalf("a compose with the file's style: %d %s", c.Status, c.Body)
	}
	if rec := e.poll(t, "/v1/videos/generations/"+str(c.json(t)["id"]), "queued", "running").json(t); rec["status"] != "succeeded" {
		t.Fatalf("compose %v", rec)
	}
	spent += dhCost(t, "clip-compose", 1)

	// The operator edits the file: the next read serves the new set.
	time.Sleep(20 * time.Millisecond) // a modification time the cache can tell apart
	write(`{"categories": [{"cate_id": "n", "cate_name": "News", "sort": 1}],
  "templates": [{"style_id": "own-3", "name": "Own three", "cover_url": "", "demo_url": "", "cate_name": "News", "scene": ""}]}`)
	if l := e.get(t, "/v1/videos/clip-templates").json(t)["list"].([]any); len(l) != 1 || l[0].(map[string]any)["style_id"] != "own-3" {
		t.Fatalf("templates after the edit: %v", l)
	}
	e.wantRefused(t, compose("own-2"), 400, "invalid_request", "not a listed template", spent)

	// A file that is no template set: the operator's fault, 500, nothing
	// charged; the reads say so too.
	write(`{"categories": [], "templates": []}`)
	wantError(t, e.get(t, "/v1/videos/clip-templates/categories"), 500, "internal_error", "clip_templates")
	e.wantRefused(t, compose("own-3"), 500, "internal_error", "clip_templates", spent)
}
