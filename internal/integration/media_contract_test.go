package integration

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// sharedConfig serves the video route with two families from one plugin
// (the testfamily fixture: sim plus a "clip" family declaring the video
// route, billed per call).
func sharedConfig(t *testing.T, settings string) string {
	bin := testgw.BuildExtra(t, "tollgate-plugin-testfamily", "./internal/testfamily")
	return `
server {
  allow_private_urls = true
}
store "badger" {
  dir = "@DATA@"
}
plugin "testfamily" {
  path     = "` + bin + `"
  settings = {` + settings + `}
}
channel "fixture" {
  vendor   = "testfamily"
  base_url = "sim://fixture"
  families = ["video", "clip"]
  models   = ["vid", "cut"]
}
model "vid" {
  family       = "video"
  max_duration = 8
  price {
    per_second = "0.07"
  }
}
model "cut" {
  family = "clip"
  price {
    per_call = "0.9"
  }
}
`
}

// Two families on one route: the server registers it once, the model's
// family picks the rules and the billing (per second against per call),
// and the route's poll and list serve the tasks of both, each as its own
// family renders it. A result the upstream hands over by link is fetched
// with the upstream's headers and re-hosted: no answer carries its
// address. A reload with the shared route serves on.
func TestSharedVideoRoute(t *testing.T) {
	var authSeen atomic.Value
	video := sim.VideoMP4(2, 7)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authSeen.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(video)
	}))
	defer up.Close()
	cfg := sharedConfig(t, `result_url = "`+up.URL+`/renders/v.mp4"`)
	g := testgw.Start(t, testgw.Options{Config: cfg})
	e := newMediaAccount(t, g, "20")

	first := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"waves","duration":3}`)
	vid, ok := first.json(t)["id"].(string)
	if !ok {
		t.Fatalf("submit: %d %s", first.Status, first.Body)
	}
	cc := e.post(t, "/v1/videos/generations", `{"model":"cut","prompt":"cut it","duration":1}`)
	clip, _ := cc.json(t)["id"].(string)
	if !strings.HasPrefix(clip, "vid_") {
		t.Fatalf("clip submit: %d %s", cc.Status, cc.Body)
	}
	if !strings.HasPrefix(clip, "vid_") {
		t.Fatalf("a clip task on the video route: %s", clip)
	}
	v := e.poll(t, "/v1/videos/generations/"+vid, "queued", "running").json(t)
	c := e.poll(t, "/v1/videos/generations/"+clip, "queued", "running")
	cr := c.json(t)
	if v["status"] != "succeeded" || v["kind"] != nil || cr["status"] != "succeeded" || cr["kind"] != "clip" {
		t.Fatalf("video %v\nclip %s", v, c.Body)
	}
	if strings.Contains(string(c.Body), up.URL) || !strings.Contains(cr["video_url"].(string), "/files/") {
		t.Fatalf("the clip's result is the upstream's link: %s", c.Body)
	}
	got := do(t, "GET", cr["video_url"].(string), nil, "")
	if got.Status != 200 || !bytes.Equal(got.Body, video) || authSeen.Load() != "Bearer upstream-secret" {
		t.Fatalf("re-hosted %d (%d bytes), the upstream saw %v", got.Status, len(got.Body), authSeen.Load())
	}
	list := e.get(t, "/v1/videos/generations").json(t)["data"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["kind"] != "clip" || list[1].(map[string]any)["id"] != vid {
		t.Fatalf("the shared list: %v", list)
	}
	wantRow(t, e.rowOf(t, vid), "success", "video", 3, priced(t, "vid", 3))
	wantRow(t, e.rowOf(t, clip), "success", "video", 1, money.MustParse("0.9"))
	if spent := e.settled(t); spent != priced(t, "vid", 3)+money.MustParse("0.9") {
		t.Fatalf("charged %s", spent)
	}
	rewrite(t, g, strings.ReplaceAll(cfg, "@DATA@", g.DataDir), "config reloaded")
	if c := e.post(t, "/v1/videos/generations", `{"model":"cut","prompt":"again","duration":1}`); c.Status != 200 {
		t.Fatalf("after a reload: %d %s", c.Status, c.Body)
	}
}

// Two families that declare one route differently are refused at start,
// both named.
func TestConflictingFamilyRoutesRefused(t *testing.T) {
	out := runExpectFailure(t, testgw.Build(t)+"/tollgate", sharedConfig(t, `conflict = "1"`))
	if !strings.Contains(out, "video") || !strings.Contains(out, "clip") || !strings.Contains(out, "POST /v1/videos/generations") {
		t.Fatalf("the refusal does not name both families and the route:\n%s", out)
	}
}

// A media model whose price block lacks the unit its route bills is
// refused at start, at its place in the file.
func TestUnpricedMediaModelRefused(t *testing.T) {
	cfg := `
store "badger" {
  dir = "@DATA@"
}
channel "sim" {
  vendor   = "sim"
  base_url = "sim://local"
  families = ["video"]
  models   = ["vid"]
}
model "vid" {
  family = "video"
  price {
    per_call = "1"
  }
}
`
	out := runExpectFailure(t, testgw.Build(t)+"/tollgate", cfg)
	if !strings.Contains(out, "tollgate.hcl:") || !strings.Contains(out, "per_second") || !strings.Contains(out, `"vid"`) {
		t.Fatalf("the refusal does not point at the model's price:\n%s", out)
	}
}

// The client's response_format holds whatever the upstream answers: an
// OpenAI-compatible upstream that answers links is fetched and inlined for
// b64_json (and such an answer is not kept for a replay: 409), re-hosted
// for url; no answer carries the upstream's address.
func TestResponseFormatHoldsWhateverTheUpstreamAnswers(t *testing.T) {
	png := imagestest.PNG(8, 8)
	var base string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/images/generations":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"created":1700000000,"data":[{"url":"` + base + `/out/1.png"}]}`))
		case "/out/1.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(png)
		default:
			http.NotFound(w, r)
		}
	}))
	defer up.Close()
	base = up.URL
	cfg := `
server {
  allow_private_urls = true
}
store "badger" {
  dir = "@DATA@"
}
channel "links" {
  vendor   = "openai"
  base_url = "` + up.URL + `"
  api_key  = "k"
  families = ["image"]
  models   = ["img=dall-e-3"]
}
model "img" {
  family = "image"
  price {
    per_image = "0.04"
  }
}
`
	g := testgw.Start(t, testgw.Options{Config: cfg})
	e := newMediaAccount(t, g, "5")
	b := e.post(t, "/v1/images/generations", `{"model":"img","prompt":"p","response_format":"b64_json"}`, "Idempotency-Key", "b64-1")
	r := b.json(t)
	d := r["data"].([]any)[0].(map[string]any)
	raw, err := base64.StdEncoding.DecodeString(str(d["b64_json"]))
	if b.Status != 200 || err != nil || !bytes.Equal(raw, png) || d["url"] != nil || strings.Contains(string(b.Body), up.URL) {
		t.Fatalf("b64_json of a link: %d %s", b.Status, b.Body)
	}
	wantError(t, e.post(t, "/v1/images/generations", `{"model":"img","prompt":"p","response_format":"b64_json"}`, "Idempotency-Key", "b64-1"),
		409, "idempotency_response_not_cached", "too large")
	u := e.post(t, "/v1/images/generations", `{"model":"img","prompt":"p"}`)
	link := str(u.json(t)["data"].([]any)[0].(map[string]any)["url"])
	if u.Status != 200 || !strings.Contains(link, "/files/") || strings.Contains(string(u.Body), up.URL) {
		t.Fatalf("url of a link: %d %s", u.Status, u.Body)
	}
	if got := do(t, "GET", link, nil, ""); got.Status != 200 || !bytes.Equal(got.Body, png) {
		t.Fatalf("re-hosted image %d", got.Status)
	}
	if spent := e.settled(t); spent != priced(t, "img", 2) {
		t.Fatalf("charged %s", spent)
	}
}
