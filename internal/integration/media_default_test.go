package integration

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// The embedded default (make run) answers every media family, and its
// first-start banner prints a line to try for each that works as printed.
func TestEmbeddedDefaultAnswersEveryFamily(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	out := g.Output()
	i := strings.Index(out, "sk-tollgate-")
	if i < 0 {
		t.Fatalf("no demo key in the banner:\n%s", out)
	}
	key := out[i : i+76]
	re := regexp.MustCompile(`curl -s http://[^/\s]+(/v1/[a-z/-]+) \\\s+-H "Authorization: Bearer [^"]+" \\\s+-H "Content-Type: application/json" \\\s+-d '([^']+)'`)
	lines := re.FindAllStringSubmatch(out, -1)
	seen := map[string]bool{}
	asr := ""
	for _, m := range lines {
		path, body := m[1], m[2]
		seen[path] = true
		c := do(t, "POST", g.URL+path, bearer(key), strings.ReplaceAll(body, "ASR_ID", asr))
		if c.Status != 200 {
			t.Fatalf("the banner's line for %s: %d %s", path, c.Status, c.Body)
		}
		if path == "/v1/videos/clip-subtitles" {
			asr = c.json(t)["asr_id"].(string) // the compose line names it
		}
		var running []string
		switch path {
		case "/v1/videos/generations":
			running = []string{"queued", "running"}
		case "/v1/music/generations":
			running = []string{"processing"}
		default:
			continue
		}
		id := c.json(t)["id"].(string)
		e := &mediaEnv{g: g, key: key}
		if rec := e.poll(t, path+"/"+id, running...).json(t); rec["status"] != "succeeded" {
			t.Fatalf("%s %s: %v", path, id, rec)
		}
	}
	for _, p := range []string{"/v1/chat/completions", "/v1/images/generations", "/v1/videos/generations", "/v1/music/generations",
		"/v1/audio/speech", "/v1/audio/voices", "/v1/transcripts/extract", "/v1/search", "/v1/videos/clip-subtitles"} {
		if !seen[p] {
			t.Errorf("the banner has no line to try %s:\n%s", p, out)
		}
	}
	for _, want := range []string{`"model": "dh-avatar"`, `"model": "dh-lipsync"`, `"model": "dh-motion"`, `"model": "clip-compose"`, `/v1/videos/clip-templates" -H "Authorization: Bearer`} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner lacks %s:\n%s", want, out)
		}
	}
	tpl := regexp.MustCompile(`curl -s "http://[^/\s]+(/v1/videos/clip-templates)"`).FindStringSubmatch(out)
	if tpl == nil {
		t.Fatalf("no templates line:\n%s", out)
	}
	if c := do(t, "GET", g.URL+tpl[1], bearer(key), ""); c.Status != 200 || !strings.Contains(string(c.Body), `"style_id":"talk-01"`) {
		t.Fatalf("the templates line: %d %s", c.Status, c.Body)
	}
	// Every row costs its units at the embedded default's prices, and the
	// demo wallet holds the rest.
	prices := map[string]string{"sim-image": "0.04", "sim-video": "0.05", "sim-music": "0.20", "sim-speech": "0.000015",
		"sim-voice": "0.50", "sim-transcript": "0.02", "sim-search": "0.005", "dh-avatar": "3.96", "dh-lipsync": "4.04", "dh-motion": "4.04", "clip-compose": "90", "clip-subtitle": "0"}
	var spent money.Nano
	for _, r := range logsOf(t, g, key) {
		cost := money.MustParse(str(r["cost"]))
		spent += cost
		if p, ok := prices[str(r["model"])]; ok && cost != money.Times(int64(num(r["unit_count"])), money.MustParse(p)) {
			t.Fatalf("row %v: cost is not its units at %s", r, p)
		}
	}
	var acct struct {
		Data []struct{ Balance, Held string }
	}
	g.Admin("GET", "/accounts", nil, &acct)
	if len(acct.Data) != 1 || acct.Data[0].Held != "0" || money.MustParse(acct.Data[0].Balance)+spent != money.MustParse("121.32") {
		t.Fatalf("books: %+v, spent %s", acct.Data, spent)
	}
	// The catalog: per-character prices are per character; a video model
	// shows its capabilities from its settings.
	cat := do(t, "GET", g.URL+"/v1/catalog", bearer(key), "").json(t)
	var speech, video map[string]any
	for _, m := range cat["models"].([]any) {
		switch mm := m.(map[string]any); mm["id"] {
		case "sim-speech":
			speech = mm
		case "sim-video":
			video = mm
		}
	}
	tiers := speech["pricing"].(map[string]any)["tiers"].([]any)
	if len(tiers) != 1 || tiers[0].(map[string]any)["unit"] != "character" || tiers[0].(map[string]any)["price"] != "0.000015" {
		t.Fatalf("speech pricing %v", speech["pricing"])
	}
	caps := video["caps"].(map[string]any)
	dur, _ := caps["duration"].(map[string]any)
	if caps["family"] != "video" || dur["min"] != float64(1) || dur["max"] != float64(10) || caps["audio"] != true ||
		len(caps["modes"].([]any)) != 2 || len(caps["ratios"].([]any)) != 3 || caps["refs"].(map[string]any)["images"] != float64(4) {
		t.Fatalf("video caps %v", caps)
	}
}
