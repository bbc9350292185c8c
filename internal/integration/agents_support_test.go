package integration

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// agentsConfig wires one vendorsim to the real vendor plugins the way the
// coding agents meet them: ag-claude on an anthropic channel (native
// messages), ag-gpt (caps reasoning) and ag-gpt-plain (no reasoning) on an
// openai channel speaking chat and responses, ag-chat on a chat-only channel
// with reverse translation, ag-gemini on a gemini channel, and two models
// whose calls time out after 1 s: ag-slow by the model's timeout, ag-slowch
// by its channel's.
func agentsConfig(url, extra string) string {
	ch := func(name, vendor, protocols, models, more string) string {
		return `
channel "` + name + `" {
  vendor    = "` + vendor + `"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = [` + protocols + `]
  models    = [` + models + `]
` + more + `}
`
	}
	model := func(id, more string) string {
		return `
model "` + id + `" {
  price {
    input  = "3"
    output = "15"
  }
` + more + `}
`
	}
	return ch("anthropic", "anthropic", `"anthropic_messages"`, `"ag-claude"`, "") +
		ch("openai", "openai", `"openai_chat", "openai_responses"`, `"ag-gpt", "ag-gpt-plain", "ag-slow"`, "") +
		ch("chatonly", "openai", `"openai_chat"`, `"ag-chat"`, "") +
		ch("gemini", "gemini", `"gemini_native"`, `"ag-gemini"`, "") +
		ch("slowch", "openai", `"openai_chat"`, `"ag-slowch"`, `  timeout = "1s"
`) +
		model("ag-claude", "  caps {\n    reasoning = true\n  }\n") +
		model("ag-gpt", "  caps {\n    reasoning = true\n  }\n") +
		model("ag-gpt-plain", "") +
		model("ag-slow", "  timeout = \"1s\"\n") +
		model("ag-slowch", "") +
		model("ag-chat", `  translate_from = ["anthropic_messages", "openai_responses"]
`) +
		model("ag-gemini", "") + extra
}

// startAgents runs a gateway on agentsConfig against a fresh vendorsim.
func startAgents(t *testing.T, extra string) (*testgw.Gateway, *upstream) {
	t.Helper()
	up := startUpstream(t, sim.Knobs{})
	return testgw.Start(t, testgw.Options{Config: agentsConfig(up.URL, extra)}), up
}

// lastTo returns the newest upstream request on path (query ignored).
func lastTo(t *testing.T, up *upstream, path string) vendorsim.Request {
	t.Helper()
	reqs := up.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Path == path {
			return reqs[i]
		}
	}
	t.Fatalf("no upstream call on %s", path)
	return vendorsim.Request{}
}

// callsTo counts the upstream requests on path.
func callsTo(up *upstream, path string) int {
	n := 0
	for _, r := range up.requests() {
		if r.Path == path {
			n++
		}
	}
	return n
}

// decode parses JSON into generic values, failing the test on bad input.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %.300s", err, b)
	}
	return m
}

// sameExcept compares two JSON objects semantically, ignoring the named
// top-level fields, and reports each difference.
func sameExcept(t *testing.T, sent, got []byte, ignore ...string) {
	t.Helper()
	a, b := decode(t, sent), decode(t, got)
	for _, k := range ignore {
		delete(a, k)
		delete(b, k)
	}
	for k, v := range a {
		if !reflect.DeepEqual(v, b[k]) {
			t.Errorf("field %q changed upstream:\n sent %s\n got  %s", k, mustJSON(v), mustJSON(b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("field %q added upstream: %s", k, mustJSON(b[k]))
		}
	}
}

// warnings splits X-Protocol-Warning into its names.
func warnings(h map[string][]string) []string {
	var out []string
	for _, v := range h["X-Protocol-Warning"] {
		for _, w := range strings.Split(v, ";") {
			if w = strings.TrimSpace(w); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// warned reports whether the warning header names field.
func warned(h map[string][]string, field string) bool {
	for _, w := range warnings(h) {
		if w == field || strings.HasPrefix(w, field+" ") || strings.HasPrefix(w, field+":") || strings.HasPrefix(w, field+"(") {
			return true
		}
	}
	return false
}
