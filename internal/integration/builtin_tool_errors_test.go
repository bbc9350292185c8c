package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// On the completions-style built-in tool path an upstream failure is
// reported in the stream (spec, Events: an error chunk of type api_error
// and code upstream_error, then data: [DONE]) under a 200, whatever the
// failure and whenever it happened; the row says error, and costs 0 unless
// part of an answer was served (docs/decisions.md).
func TestBuiltinToolUpstreamFailure(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	caps := "  caps {\n    tools = [\"web_search\"]\n  }\n"
	model := func(id, extra string) string {
		return "\nmodel \"" + id + "\" {\n" + extra + "  price {\n    input  = \"1\"\n    output = \"2\"\n  }\n}\n"
	}
	cfg := channelBlock("bt", up.URL, 0, "bt", "bt-slow") +
		channelBlock("bt-gone", closedURL(t), 0, "bt-gone") + `
channel "bt-claude" {
  vendor    = "anthropic"
  base_url  = "` + up.URL + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["anthropic_messages"]
  models    = ["bt-claude"]
}
` + model("bt", caps) + model("bt-gone", caps) + model("bt-claude", caps) +
		model("bt-slow", caps+"  timeout = \"2s\"\n")
	g := startGateway(t, testgw.Options{Config: cfg})

	cases := []struct {
		desc, model, prompt string
		served              bool // part of an answer reached the client first
		failed              int  // attempts listed before the last
	}{
		{desc: "upstream 500 before the first byte", model: "bt", prompt: "search [sim:error=500]", failed: 1},
		{desc: "upstream 429 before the first byte", model: "bt", prompt: "search [sim:error=429]", failed: 1},
		{desc: "upstream 400 before the first byte", model: "bt", prompt: "search [sim:error=400]"},
		{desc: "connection refused", model: "bt-gone", prompt: "search", failed: 1},
		{desc: "upstream timeout", model: "bt-slow", prompt: "search [sim:hang]"},
		{desc: "cut mid-stream", model: "bt", prompt: "search a long way [sim:cut=3]", served: true},
		{desc: "translated: upstream 500 before the first byte", model: "bt-claude", prompt: "search [sim:error=500]", failed: 1},
		{desc: "translated: cut mid-stream", model: "bt-claude", prompt: "search a long way [sim:cut=4]", served: true},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			status, h, evs, err := rawStream(t, g.URL+"/v1/chat/completions", bearer(w.key),
				chatBody(tc.model, tc.prompt, `"stream":true,"tools":[{"type":"web_search"}]`))
			if status != http.StatusOK || err != nil || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %v %q", status, err, evs)
			}
			if !hasDone(evs) || len(evs) < 2 {
				t.Fatalf("no [DONE] after the error chunk: %q", evs)
			}
			chunk := gjson.ParseBytes(evs[len(evs)-2].Data)
			if chunk.Get("error.type").Str != "api_error" || chunk.Get("error.code").Str != "upstream_error" || chunk.Get("error.message").Str == "" {
				t.Fatalf("want the error chunk before [DONE]: %s", evs[len(evs)-2].Data)
			}
			if got := len(evs) > 2; got != tc.served {
				t.Fatalf("chunks before the error: %v, want %v: %q", got, tc.served, evs)
			}
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_error", attempts: 1, failed: tc.failed, billed: tc.served})
			w.settled(t, 1)
		})
	}

	// The gateway's own refusals keep their status on this path.
	t.Run("without stream: a plain 400, no upstream called", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key),
			chatBody("bt", "search", `"tools":[{"type":"web_search"}]`))
		if code, _, _ := r.errorOf(t); r.Status != 400 || code != "invalid_request" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}
