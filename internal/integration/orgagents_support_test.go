package integration

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

// Organization agents (issue 13): the gateway, its upstreams and the admin
// calls the agent tests share.

// orgAgentsConfig serves the agents' models from one recording vendorsim
// through the real openai plugin, and org-pin from three channels for the
// session pinning test.
func orgAgentsConfig(up string, pins []string) string {
	cfg := `
server {
  allow_private_urls = true
}
channel "org-up" {
  vendor    = "openai"
  base_url  = "` + up + `"
  api_key   = "` + upstreamKey + `"
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["org-chat", "org-vision", "org-web", "org-other", "org-cap"]
}
model "org-chat" {
  price {
    input  = "3"
    output = "15"
  }
}
model "org-vision" {
  caps {
    vision = true
  }
  price {
    input  = "3"
    output = "15"
  }
}
model "org-web" {
  caps {
    tools = ["web_search", "image_generation"]
  }
  price {
    input  = "3"
    output = "15"
  }
}
model "org-other" {
  price {
    input  = "3"
    output = "15"
  }
}
# Input is free, so a call costs exactly its output: max_tokens, which the
# sim always fills below its 20 words. A call's hold is then its cost.
model "org-cap" {
  price {
    input  = "0"
    output = "1"
  }
}
model "org-pin" {
  price {
    input  = "3"
    output = "15"
  }
}
`
	for i, u := range pins {
		cfg += `
channel "pin-` + string(rune('a'+i)) + `" {
  vendor    = "openai"
  base_url  = "` + u + `"
  api_key   = "` + upstreamKey + `"
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["org-pin"]
}
`
	}
	return cfg
}

// switchable is a recording vendorsim that can be taken down: it then
// answers every call 503 before any byte, as a failing upstream does.
type switchable struct {
	URL   string
	down  atomic.Bool
	mu    sync.Mutex
	calls []string // the last user prompt of each call served
}

func startSwitchable(t *testing.T) *switchable {
	t.Helper()
	s := &switchable{}
	vs := recordUpstream(vendorsim.New(vendorsim.Options{APIKey: upstreamKey}).Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"down for the test","type":"server_error","code":null}}`))
			return
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(r.Body)
		r.Body = readCloser{bytes.NewReader(buf.Bytes())}
		s.mu.Lock()
		s.calls = append(s.calls, lastUserText(buf.Bytes()))
		s.mu.Unlock()
		vs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func (s *switchable) served(prompt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == prompt {
			n++
		}
	}
	return n
}

func lastUserText(body []byte) string {
	text := ""
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() == "user" {
			text = m.Get("content").String()
		}
		return true
	})
	return text
}

// upstreamCall finds the one request the upstream got whose last user
// message contains marker.
func upstreamCall(t *testing.T, u *upstream, marker string) gjson.Result {
	t.Helper()
	var found []vendorsim.Request
	for _, r := range u.requests() {
		if strings.Contains(lastUserText(r.Body), marker) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the upstream got %d requests with %q, want 1", len(found), marker)
	}
	return gjson.ParseBytes(found[0].Body)
}

// newAgent creates an agent of acct; fields override the defaults.
func newOrgAgent(t *testing.T, g *testgw.Gateway, acct string, fields map[string]any) string {
	t.Helper()
	body := map[string]any{"name": "agent", "model": "org-chat", "system_prompt": "You are Ada, the help desk of Acme."}
	for k, v := range fields {
		body[k] = v
	}
	var a struct{ ID string }
	if st := g.Admin("POST", "/accounts/"+acct+"/agents", body, &a); st != http.StatusCreated || a.ID == "" {
		t.Fatalf("create agent: %d %+v", st, a)
	}
	return a.ID
}

// issueAgentKey issues a key of an agent; spendCap nil for none.
func issueAgentKey(t *testing.T, g *testgw.Gateway, agentID string, spendCap any) (id, raw string) {
	t.Helper()
	var k struct{ ID, Key, Kind string }
	if st := g.Admin("POST", "/agents/"+agentID+"/keys", map[string]any{"name": "agent key", "spend_cap": spendCap}, &k); st != http.StatusCreated || k.Key == "" || k.Kind != "agent" {
		t.Fatalf("issue agent key: %d %+v", st, k)
	}
	return k.ID, k.Key
}
