package integration

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	anthropic2 "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// The spec's truth table, row by row, on each of the four chat protocols,
// streaming or not, against the real binary: the status, the protocol's
// body shape with exactly its fields and the table's names, the headers
// the errors rules name, and that nothing is lost (the row a known key
// gets, its cost, no hold left).

// truthNames are the table's names of a code: completions type, messages
// type and generate-content status.
var truthNames = map[string][3]string{
	"model_not_found":                 {"invalid_request_error", "not_found_error", "NOT_FOUND"},
	"model_not_allowed":               {"invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	"invalid_request":                 {"invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	"tool_not_supported":              {"invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	"invalid_idempotency_key":         {"invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	"idempotency_key_reuse":           {"invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	"idempotency_in_flight":           {"invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	"idempotency_response_not_cached": {"invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	"invalid_api_key":                 {"authentication_error", "authentication_error", "UNAUTHENTICATED"},
	"quota_exceeded":                  {"insufficient_quota", "billing_error", "RESOURCE_EXHAUSTED"},
	"permission_denied":               {"permission_error", "permission_error", "PERMISSION_DENIED"},
	"rate_limit_exceeded":             {"rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"},
	"internal_error":                  {"server_error", "api_error", "INTERNAL"},
	"upstream_unreachable":            {"api_error", "api_error", "UNAVAILABLE"},
	"no_channel_available":            {"server_error", "overloaded_error", "UNAVAILABLE"},
	"upstream_timeout":                {"api_error", "api_error", "DEADLINE_EXCEEDED"},
}

// chatProto is one of the four chat protocols as a raw client speaks it.
type chatProto struct {
	name string
	// path of a call to model, streaming or not.
	path func(model string, stream bool) string
	// body of a call with one user message; maxTokens 0 leaves it out
	// where the protocol allows.
	body    func(model, prompt string, stream bool, maxTokens int) string
	headers func(key string) map[string]string
	// malformed is a body that is not JSON.
	malformed string
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func streamField(stream bool) string {
	if stream {
		return `,"stream":true`
	}
	return ""
}

var chatProtos = []chatProto{
	{
		name: "completions",
		path: func(string, bool) string { return "/v1/chat/completions" },
		body: func(model, prompt string, stream bool, maxTokens int) string {
			s := `{"model":` + jsonStr(model) + `,"messages":[{"role":"user","content":` + jsonStr(prompt) + `}]` + streamField(stream)
			if maxTokens > 0 {
				s += `,"max_tokens":` + itoa(maxTokens)
			}
			return s + "}"
		},
		headers:   bearer,
		malformed: `{"model":`,
	},
	{
		name: "messages",
		path: func(string, bool) string { return "/v1/messages" },
		body: func(model, prompt string, stream bool, maxTokens int) string {
			if maxTokens == 0 {
				maxTokens = 32
			}
			return `{"model":` + jsonStr(model) + `,"max_tokens":` + itoa(maxTokens) +
				`,"messages":[{"role":"user","content":` + jsonStr(prompt) + `}]` + streamField(stream) + "}"
		},
		headers:   msgHeaders,
		malformed: `{"model":`,
	},
	{
		name: "responses",
		path: func(string, bool) string { return "/v1/responses" },
		body: func(model, prompt string, stream bool, maxTokens int) string {
			s := `{"model":` + jsonStr(model) + `,"instructions":"","input":[{"role":"user","content":` + jsonStr(prompt) + `}]` + streamField(stream)
			if maxTokens > 0 {
				s += `,"max_output_tokens":` + itoa(maxTokens)
			}
			return s + "}"
		},
		headers:   bearer,
		malformed: `{"model":`,
	},
	{
		name: "generate-content",
		path: func(model string, stream bool) string {
			if stream {
				return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
			}
			return "/v1beta/models/" + model + ":generateContent"
		},
		body: func(_, prompt string, _ bool, maxTokens int) string {
			s := `{"contents":[{"role":"user","parts":[{"text":` + jsonStr(prompt) + `}]}]`
			if maxTokens > 0 {
				s += `,"generationConfig":{"maxOutputTokens":` + itoa(maxTokens) + `}`
			}
			return s + "}"
		},
		headers:   func(key string) map[string]string { return map[string]string{"x-goog-api-key": key} },
		malformed: `{"contents":`,
	},
}

// checkTruthError checks an error answer of protocol p: status, content
// type, exactly the shape's fields with the table's names for code, a
// message, x-gateway-trace, and no x-ratelimit-* unless limited is set.
func checkTruthError(t *testing.T, p chatProto, c call, status int, code string, limited bool) {
	t.Helper()
	names, ok := truthNames[code]
	if !ok {
		t.Fatalf("no truth-table row %q", code)
	}
	if c.Status != status {
		t.Fatalf("status %d, want %d: %s", c.Status, status, c.Body)
	}
	if ct := c.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	if c.Header.Get("x-gateway-trace") == "" {
		t.Error("no x-gateway-trace")
	}
	for k := range c.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") != limited && strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
			t.Errorf("%s on a %d %s", k, status, code)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(c.Body)))
	dec.DisallowUnknownFields() // errors rule 5: no request_id, nothing else
	switch p.name {
	case "messages":
		var b struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := dec.Decode(&b); err != nil || b.Type != "error" || b.Error.Type != names[1] || b.Error.Message == "" {
			t.Fatalf("messages shape (%v): %s", err, c.Body)
		}
	case "generate-content":
		var b struct {
			Error struct {
				Code            int
				Message, Status string
			}
		}
		if err := dec.Decode(&b); err != nil || b.Error.Code != status || b.Error.Status != names[2] || b.Error.Message == "" {
			t.Fatalf("generate-content shape (%v): %s", err, c.Body)
		}
	default:
		var b struct {
			Error struct{ Message, Type, Code string }
		}
		if err := dec.Decode(&b); err != nil || b.Error.Code != code || b.Error.Type != names[0] || b.Error.Message == "" {
			t.Fatalf("completions shape (%v): %s", err, c.Body)
		}
	}
}

const truthConfig = `
server {
  allow_private_urls = true
}
channel "tt-sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat"]
  protocols = ["openai_chat", "anthropic_messages", "openai_responses", "gemini_native"]
  models    = ["tt-chat", "tt-dear", "tt-slow"]
}
channel "tt-sim-chat-only" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["tt-chat-only"]
}
channel "tt-gone-completions" {
  vendor    = "openai"
  base_url  = "@GONE@"
  api_key   = "sk-upstream"
  protocols = ["openai_chat"]
  models    = ["tt-gone-completions"]
}
channel "tt-gone-responses" {
  vendor    = "openai"
  base_url  = "@GONE@"
  api_key   = "sk-upstream"
  protocols = ["openai_responses"]
  models    = ["tt-gone-responses"]
}
channel "tt-gone-messages" {
  vendor    = "anthropic"
  base_url  = "@GONE@"
  api_key   = "sk-upstream"
  protocols = ["anthropic_messages"]
  models    = ["tt-gone-messages"]
}
channel "tt-gone-generate-content" {
  vendor    = "gemini"
  base_url  = "@GONE@"
  api_key   = "sk-upstream"
  protocols = ["gemini_native"]
  models    = ["tt-gone-generate-content"]
}
channel "tt-tls" {
  vendor    = "openai"
  base_url  = "@TLS@"
  api_key   = "sk-upstream"
  protocols = ["openai_chat"]
  models    = ["tt-tls"]
}
channel "tt-dns" {
  vendor    = "openai"
  base_url  = "http://tt-nowhere.invalid"
  api_key   = "sk-upstream"
  protocols = ["openai_chat"]
  models    = ["tt-dns"]
}
model "tt-slow" {
  timeout = "2s"
  price {
    input  = "1"
    output = "2"
  }
}
model "tt-dear" {
  price {
    input  = "1"
    output = "1000000"
  }
}
stage "idempotency" {
  settings = { max_response_bytes = "6000" }
}
`

func TestErrorsTruthTable(t *testing.T) {
	t.Parallel()
	// A server whose certificate the gateway does not trust: the TLS
	// handshake fails.
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(untrusted.Close)
	cfg := strings.NewReplacer("@GONE@", closedURL(t), "@TLS@", untrusted.URL).Replace(truthConfig)
	for _, m := range []string{"tt-chat", "tt-chat-only", "tt-orphan", "tt-gone-completions", "tt-gone-responses", "tt-gone-messages",
		"tt-gone-generate-content", "tt-tls", "tt-dns"} {
		cfg += modelBlock(m)
	}
	g := startGateway(t, testgw.Options{Config: cfg})

	post := func(p chatProto, key, model, prompt string, stream bool, extra map[string]string) call {
		h := p.headers(key)
		for k, v := range extra {
			h[k] = v
		}
		return do(t, "POST", g.URL+p.path(model, stream), h, p.body(model, prompt, stream, 0))
	}

	for _, p := range chatProtos {
		for _, stream := range []bool{false, true} {
			name := p.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()

				t.Run("400 model_not_found", func(t *testing.T) {
					w := newWallet(g)
					c := post(p, w.key, "tt-nope", "hi", stream, nil)
					checkTruthError(t, p, c, 400, "model_not_found", false)
					refused(t, w, c, 1, "model_not_found")
				})

				t.Run("400 model_not_allowed", func(t *testing.T) {
					for i, allow := range [][]string{{"tt-chat-only"}, {}} {
						acct := g.Account("")
						_, key := g.Key(acct, map[string]any{"allowed_models": allow})
						w := wallet{g: g, acct: acct, key: key}
						c := post(p, key, "tt-chat", "hi", stream, nil)
						checkTruthError(t, p, c, 400, "model_not_allowed", false)
						refused(t, w, c, 1, "model_not_allowed")
						// The registry comes first: an unknown model is
						// model_not_found even under an allowlist.
						if i == 0 {
							c = post(p, key, "tt-nope", "hi", stream, nil)
							checkTruthError(t, p, c, 400, "model_not_found", false)
						}
					}
				})

				t.Run("400 invalid_request", func(t *testing.T) {
					w := newWallet(g)
					c := do(t, "POST", g.URL+p.path("tt-chat", stream), p.headers(w.key), p.malformed)
					checkTruthError(t, p, c, 400, "invalid_request", false)
					refused(t, w, c, 1, "invalid_request")
				})

				t.Run("400 invalid_idempotency_key", func(t *testing.T) {
					w := newWallet(g)
					c := post(p, w.key, "tt-chat", "hi", stream, map[string]string{"Idempotency-Key": "has space"})
					checkTruthError(t, p, c, 400, "invalid_idempotency_key", false)
					refused(t, w, c, 1, "invalid_idempotency_key")
				})

				t.Run("409 idempotency_key_reuse and idempotency_response_not_cached", func(t *testing.T) {
					w := newWallet(g)
					idem := map[string]string{"Idempotency-Key": "tt-" + name}
					// The answer is over the 6000 bytes kept for a replay.
					long := "first [sim:words=2000]"
					h := p.headers(w.key)
					h["Idempotency-Key"] = idem["Idempotency-Key"]
					longCall := func() call {
						return do(t, "POST", g.URL+p.path("tt-chat", stream), h, p.body("tt-chat", long, stream, 4000))
					}
					if c := longCall(); c.Status != 200 || len(c.Body) <= 6000 {
						t.Fatalf("%d (%d bytes) %.300s", c.Status, len(c.Body), c.Body)
					}
					c := post(p, w.key, "tt-chat", "another body", stream, idem)
					checkTruthError(t, p, c, 409, "idempotency_key_reuse", false)
					refused(t, w, c, 2, "idempotency_key_reuse")
					c = longCall()
					checkTruthError(t, p, c, 409, "idempotency_response_not_cached", false)
					refused(t, w, c, 3, "idempotency_response_not_cached")
				})

				t.Run("409 idempotency_in_flight", func(t *testing.T) {
					w := newWallet(g)
					idem := map[string]string{"Idempotency-Key": "tt-slow-" + name}
					first := make(chan call, 1)
					go func() {
						h := p.headers(w.key)
						h["Idempotency-Key"] = idem["Idempotency-Key"]
						c, err := tryDo("POST", g.URL+p.path("tt-chat", stream), h, p.body("tt-chat", "slow [sim:latency=1500ms]", stream, 0))
						if err != nil {
							c.Status = -1
						}
						first <- c
					}()
					time.Sleep(500 * time.Millisecond)
					c := post(p, w.key, "tt-chat", "slow [sim:latency=1500ms]", stream, idem)
					checkTruthError(t, p, c, 409, "idempotency_in_flight", false)
					if f := <-first; f.Status != 200 {
						t.Fatalf("first: %d %s", f.Status, f.Body)
					}
					// Newest first: the refusal's row is written before
					// the first call ends.
					rows := w.rows(t, 2)
					checkRow(t, rows[0], rowWant{status: "success", attempts: 1, billed: true})
					checkRow(t, rows[1], rowWant{status: "rejected", code: "idempotency_in_flight"})
					w.settled(t, 2)
				})

				t.Run("401 invalid_api_key", func(t *testing.T) {
					for _, key := range []string{"", "sk-tollgate-" + strings.Repeat("0", 64), "not-a-key"} {
						c := post(p, key, "tt-chat", "hi", stream, nil)
						checkTruthError(t, p, c, 401, "invalid_api_key", false)
						if !strings.Contains(string(c.Body), "authentication failed: ") {
							t.Errorf("message: %s", c.Body)
						}
					}
				})

				t.Run("402 quota_exceeded at zero balance", func(t *testing.T) {
					unfunded(t, g, p, func(key string) call { return post(p, key, "tt-chat", "hi", stream, nil) })
				})

				t.Run("402 quota_exceeded at pre-charge", func(t *testing.T) {
					w := newWallet(g)
					// 200 output tokens at 1 credit each is over the 121.32.
					c := do(t, "POST", g.URL+p.path("tt-dear", stream), p.headers(w.key), p.body("tt-dear", "hi", stream, 200))
					checkTruthError(t, p, c, 402, "quota_exceeded", false)
					refused(t, w, c, 1, "quota_exceeded")
				})

				// PRODUCT §7: a replay and a 409 in-flight come before the
				// zero-balance check; anything else with a key is the 402.
				t.Run("402 after the last credits: a retry gets its answer", func(t *testing.T) {
					w := newWallet(g)
					idem := map[string]string{"Idempotency-Key": "tt-last-" + name}
					first := post(p, w.key, "tt-chat", "short [sim:words=2]", stream, idem)
					if first.Status != 200 {
						t.Fatalf("%d %s", first.Status, first.Body)
					}
					slow := make(chan call, 1)
					go func() {
						h := p.headers(w.key)
						h["Idempotency-Key"] = "tt-slow-last-" + name
						c, _ := tryDo("POST", g.URL+p.path("tt-chat", stream), h, p.body("tt-chat", "slow [sim:latency=1500ms]", stream, 0))
						slow <- c
					}()
					time.Sleep(500 * time.Millisecond)
					drain(t, w)
					again := post(p, w.key, "tt-chat", "short [sim:words=2]", stream, idem)
					if again.Status != 200 || again.Header.Get("Idempotency-Replayed") != "true" || string(again.Body) != string(first.Body) {
						t.Fatalf("the retry: %d %v %s", again.Status, again.Header, again.Body)
					}
					c := post(p, w.key, "tt-chat", "slow [sim:latency=1500ms]", stream, map[string]string{"Idempotency-Key": "tt-slow-last-" + name})
					checkTruthError(t, p, c, 409, "idempotency_in_flight", false)
					if s := <-slow; s.Status != 200 {
						t.Fatalf("the slow call: %d %s", s.Status, s.Body)
					}
					// Another body with the key, a new key, a malformed key,
					// an unknown model: the 402, and the new key stays free.
					for _, c := range []call{
						post(p, w.key, "tt-chat", "another body", stream, idem),
						post(p, w.key, "tt-chat", "hi", stream, map[string]string{"Idempotency-Key": "tt-new-" + name}),
						post(p, w.key, "tt-chat", "hi", stream, map[string]string{"Idempotency-Key": "has space"}),
						post(p, w.key, "tt-nope", "hi", stream, map[string]string{"Idempotency-Key": "tt-new-" + name}),
					} {
						checkTruthError(t, p, c, 402, "quota_exceeded", false)
					}
					credit(t, w, "1")
					if c := post(p, w.key, "tt-chat", "hi", stream, map[string]string{"Idempotency-Key": "tt-new-" + name}); c.Status != 200 {
						t.Fatalf("the new key after a top-up: %d %s", c.Status, c.Body)
					}
				})

				t.Run("403 permission_denied from the upstream", func(t *testing.T) {
					w := newWallet(g)
					c := post(p, w.key, "tt-chat", "no [sim:error=403]", stream, nil)
					checkTruthError(t, p, c, 403, "permission_denied", false)
					checkRow(t, w.last(t, 1), rowWant{status: "error", code: "permission_denied", attempts: 1})
					w.settled(t, 1)
				})

				t.Run("429 rate_limit_exceeded of the account", func(t *testing.T) {
					w := newWallet(g)
					if st := g.Admin("PATCH", "/accounts/"+w.acct, map[string]any{"rpm": 1}, nil); st != http.StatusOK {
						t.Fatalf("PATCH rpm: %d", st)
					}
					if c := post(p, w.key, "tt-chat", "hi", stream, nil); c.Status != 200 {
						t.Fatalf("%d %s", c.Status, c.Body)
					}
					c := post(p, w.key, "tt-chat", "hi", stream, nil)
					checkTruthError(t, p, c, 429, "rate_limit_exceeded", true)
					checkLimitHeaders(t, c, "1")
					if !strings.Contains(string(c.Body), "requests per minute") {
						t.Errorf("the message does not name the dimension: %s", c.Body)
					}
					refused(t, w, c, 2, "rate_limit_exceeded")
				})

				t.Run("429 rate_limit_exceeded from the upstream", func(t *testing.T) {
					w := newWallet(g)
					c := post(p, w.key, "tt-chat", "busy [sim:error=429]", stream, nil)
					checkTruthError(t, p, c, 429, "rate_limit_exceeded", false)
					checkRow(t, w.last(t, 1), rowWant{status: "error", code: "rate_limit_exceeded", attempts: 1, failed: 1})
					w.settled(t, 1)
				})

				t.Run("502 upstream_unreachable", func(t *testing.T) {
					w := newWallet(g)
					c := post(p, w.key, "tt-gone-"+p.name, "anyone there?", stream, nil)
					checkTruthError(t, p, c, 502, "upstream_unreachable", false)
					checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_unreachable", attempts: 1, failed: 1})
					w.settled(t, 1)
				})

				t.Run("503 no_channel_available", func(t *testing.T) {
					w := newWallet(g)
					models := []string{"tt-orphan"}
					if p.name != "completions" {
						models = append(models, "tt-chat-only") // errors rule 7: none on this protocol
					}
					for i, m := range models {
						c := post(p, w.key, m, "hi", stream, nil)
						checkTruthError(t, p, c, 503, "no_channel_available", false)
						checkRow(t, w.last(t, i+1), rowWant{status: "rejected", code: "no_channel_available"})
					}
					w.settled(t, len(models))
				})

				t.Run("504 upstream_timeout", func(t *testing.T) {
					w := newWallet(g)
					c := post(p, w.key, "tt-slow", "wait [sim:hang]", stream, nil)
					checkTruthError(t, p, c, 504, "upstream_timeout", false)
					checkRow(t, w.last(t, 1), rowWant{status: "interrupted", code: "upstream_timeout", attempts: 1})
					w.settled(t, 1)
				})
			})
		}
	}

	// What the official SDKs make of these answers: their own typed error,
	// with the status and the table's names where each SDK reads them.
	t.Run("official SDKs", func(t *testing.T) {
		t.Parallel()
		zero := g.Account("0")
		_, broke := g.Key(zero, nil)
		for _, kind := range sdkKinds {
			for _, stream := range []bool{false, true} {
				for _, c := range []struct {
					name, key, model, prompt string
					status                   int
					code                     string
				}{
					{"model_not_found", "", "tt-nope", "hi", 400, "model_not_found"},
					{"invalid_api_key", "sk-tollgate-" + strings.Repeat("0", 64), "tt-chat", "hi", 401, "invalid_api_key"},
					{"quota_exceeded", broke, "tt-chat", "hi", 402, "quota_exceeded"},
					{"permission_denied", "", "tt-chat", "no [sim:error=403]", 403, "permission_denied"},
					{"no_channel_available", "", "tt-orphan", "hi", 503, "no_channel_available"},
				} {
					name := kind + "/" + c.name
					if stream {
						name += "/stream"
					}
					t.Run(name, func(t *testing.T) {
						key := c.key
						if key == "" {
							key = newWallet(g).key
						}
						_, err := newSDK(t, kind, g.URL, key, c.model).ask(t.Context(), c.prompt, false, stream)
						checkSDKError(t, kind, err, c.status, c.code)
					})
				}
			}
		}
	})

	// The truth table's 502: a failed connection, whatever failed in it.
	for _, m := range []struct{ name, model string }{{"TLS", "tt-tls"}, {"DNS", "tt-dns"}} {
		t.Run("completions/502 upstream_unreachable: "+m.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)
			c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody(m.model, "anyone there?", ""))
			checkTruthError(t, chatProtos[0], c, 502, "upstream_unreachable", false)
			checkRow(t, w.last(t, 1), rowWant{status: "error", code: "upstream_unreachable", attempts: 1, failed: 1})
			w.settled(t, 1)
		})
	}

	// Built-in tool rules: only the completions-style protocol has them.
	t.Run("completions/400 tool_not_supported", func(t *testing.T) {
		t.Parallel()
		w := newWallet(g)
		p := chatProtos[0]
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key),
			chatBody("tt-chat", "draw", `"stream":true,"tools":[{"type":"image_generation"}]`))
		checkTruthError(t, p, c, 400, "tool_not_supported", false)
		refused(t, w, c, 1, "tool_not_supported")
	})
}

// checkSDKError checks that an official SDK returned its typed API error
// for a truth-table answer, with the names it reads from the body.
func checkSDKError(t *testing.T, kind string, err error, status int, code string) {
	t.Helper()
	names := truthNames[code]
	if err == nil {
		t.Fatalf("%s: no error, want %d %s", kind, status, code)
	}
	switch kind {
	case "openai chat", "openai responses":
		var e *openai.Error
		if !errors.As(err, &e) || e.StatusCode != status || e.Code != code || e.Type != names[0] || e.Message == "" {
			t.Fatalf("%s: %T %v", kind, err, err)
		}
	case "anthropic v1":
		var e *anthropic.Error
		if !errors.As(err, &e) || e.StatusCode != status || string(e.Type()) != names[1] {
			t.Fatalf("%s: %T %v", kind, err, err)
		}
	case "anthropic v2":
		var e *anthropic2.Error
		if !errors.As(err, &e) || e.StatusCode != status || string(e.Type()) != names[1] {
			t.Fatalf("%s: %T %v", kind, err, err)
		}
	case "genai":
		var e genai.APIError
		var ep *genai.APIError
		switch {
		case errors.As(err, &e):
		case errors.As(err, &ep):
			e = *ep
		default:
			t.Fatalf("%s: %T %v", kind, err, err)
		}
		if e.Code != status || e.Status != names[2] || e.Message == "" {
			t.Fatalf("%s: %+v", kind, e)
		}
	default:
		t.Fatalf("no SDK %q", kind)
	}
}

// mediaRoute is a billed POST of a media family on the embedded default,
// its body for a model ("" where the route implies its model).
type mediaRoute struct {
	path  string
	model string
	body  func(model string) string
}

func mediaBody(model, rest string) string {
	if model == "" {
		return "{" + rest + "}"
	}
	return `{"model":` + jsonStr(model) + "," + rest + "}"
}

var mediaRoutes = []mediaRoute{
	{"/v1/images/generations", "sim-image", func(m string) string { return mediaBody(m, `"prompt":"a cat"`) }},
	{"/v1/images/edits", "sim-image", func(m string) string {
		return mediaBody(m, `"prompt":"a hat","image":"https://media.example/cat.png"`)
	}},
	{"/v1/videos/generations", "sim-video", func(m string) string { return mediaBody(m, `"prompt":"waves","duration":2`) }},
	{"/v1/music/generations", "sim-music", func(m string) string { return mediaBody(m, `"prompt":"a song"`) }},
	{"/v1/audio/speech", "sim-speech", func(m string) string { return mediaBody(m, `"input":"hello","voice":"alloy"`) }},
	{"/v1/audio/voices", "sim-voice", func(m string) string {
		return mediaBody(m, `"name":"v","audio_url":"https://media.example/a.wav"`)
	}},
	{"/v1/transcripts/extract", "sim-transcript", func(m string) string {
		return mediaBody(m, `"url":"https://media.example/talk.mp4"`)
	}},
	{"/v1/search", "sim-search", func(m string) string { return mediaBody(m, `"query":"toll roads"`) }},
	{"/v1/videos/avatars", "", func(string) string { return `{"name":"Ada","source_url":"https://media.example/a.jpg"}` }},
	{"/v1/videos/clip-subtitles", "", func(string) string { return `{"video_url":"https://media.example/talk.mp4"}` }},
}

// The truth table on the billed media routes (completions-style shape):
// the refusals that come before any upstream call, each with its row and
// nothing charged; a model named in the body is checked against the
// registry, the key's allowlist and the route's families.
func TestErrorsTruthTableOnMediaRoutes(t *testing.T) {
	t.Parallel()
	// Not audited per row (the embedded default's media prices are not
	// the tests' own); each case checks its own money.
	g := testgw.Start(t, testgw.Options{})
	completions := chatProtos[0]
	for _, r := range mediaRoutes {
		t.Run(strings.TrimPrefix(r.path, "/v1/"), func(t *testing.T) {
			t.Parallel()
			body := r.body(r.model)
			post := func(key string, extra map[string]string, body string) call {
				h := bearer(key)
				if key == "" {
					h = nil
				}
				for k, v := range extra {
					h[k] = v
				}
				return do(t, "POST", g.URL+r.path, h, body)
			}

			t.Run("401 invalid_api_key", func(t *testing.T) {
				checkTruthError(t, completions, post("", nil, body), 401, "invalid_api_key", false)
				checkTruthError(t, completions, post("sk-tollgate-"+strings.Repeat("0", 64), nil, body), 401, "invalid_api_key", false)
			})
			t.Run("402 quota_exceeded at zero balance", func(t *testing.T) {
				unfunded(t, g, completions, func(key string) call { return post(key, nil, body) })
			})
			t.Run("400 invalid_idempotency_key", func(t *testing.T) {
				w := newWallet(g)
				c := post(w.key, map[string]string{"Idempotency-Key": strings.Repeat("k", 201)}, body)
				checkTruthError(t, completions, c, 400, "invalid_idempotency_key", false)
				refused(t, w, c, 1, "invalid_idempotency_key")
			})
			t.Run("400 invalid_request", func(t *testing.T) {
				w := newWallet(g)
				c := post(w.key, nil, `{"model":`)
				checkTruthError(t, completions, c, 400, "invalid_request", false)
				refused(t, w, c, 1, "invalid_request")
			})
			t.Run("429 rate_limit_exceeded of the account", func(t *testing.T) {
				w := newWallet(g)
				if st := g.Admin("PATCH", "/accounts/"+w.acct, map[string]any{"rpm": 1}, nil); st != http.StatusOK {
					t.Fatalf("PATCH rpm: %d", st)
				}
				// A list or a poll counts too (errors rule 3).
				if c := do(t, "GET", g.URL+"/v1/models", bearer(w.key), ""); c.Status != 200 {
					t.Fatalf("%d %s", c.Status, c.Body)
				}
				c := post(w.key, nil, body)
				checkTruthError(t, completions, c, 429, "rate_limit_exceeded", true)
				checkLimitHeaders(t, c, "1")
				refused(t, w, c, 1, "rate_limit_exceeded")
			})
			t.Run("402 after the last credits: a retry gets its answer", func(t *testing.T) {
				w := newWallet(g)
				credit(t, w, "200") // an avatar registration is 220.11
				idem := map[string]string{"Idempotency-Key": "last"}
				first := post(w.key, idem, body)
				if first.Status/100 != 2 {
					t.Fatalf("%d %s", first.Status, first.Body)
				}
				drain(t, w)
				again := post(w.key, idem, body)
				if again.Status != first.Status || again.Header.Get("Idempotency-Replayed") != "true" || string(again.Body) != string(first.Body) {
					t.Fatalf("the retry: %d %v %.300s", again.Status, again.Header, again.Body)
				}
				checkTruthError(t, completions, post(w.key, map[string]string{"Idempotency-Key": "new"}, body), 402, "quota_exceeded", false)
			})
			if r.model == "" {
				return // the route implies its model: errors rule 9's 404 and 403
			}
			t.Run("400 model_not_found", func(t *testing.T) {
				w := newWallet(g)
				c := post(w.key, nil, r.body("sim-nope"))
				checkTruthError(t, completions, c, 400, "model_not_found", false)
				refused(t, w, c, 1, "model_not_found")
			})
			t.Run("400 model_not_allowed", func(t *testing.T) {
				acct := g.Account("")
				_, key := g.Key(acct, map[string]any{"allowed_models": []string{"sim-chat"}})
				c := post(key, nil, body)
				checkTruthError(t, completions, c, 400, "model_not_allowed", false)
				refused(t, wallet{g: g, acct: acct, key: key}, c, 1, "model_not_allowed")
			})
			t.Run("503 no_channel_available for a model of another family", func(t *testing.T) {
				w := newWallet(g)
				c := post(w.key, nil, r.body("sim-chat"))
				checkTruthError(t, completions, c, 503, "no_channel_available", false)
				refused(t, w, c, 1, "no_channel_available")
			})
		})
	}
}

// drain takes the wallet's whole balance away by an admin correction.
func drain(t *testing.T, w wallet) {
	t.Helper()
	bal, _ := w.g.Balance(w.acct)
	credit(t, w, "-"+bal)
	if bal, _ := w.g.Balance(w.acct); bal != "0" {
		t.Fatalf("balance %s after the drain", bal)
	}
}

// credit adds amount to the wallet by the admin API.
func credit(t *testing.T, w wallet, amount string) {
	t.Helper()
	if st := w.g.Admin("POST", "/accounts/"+w.acct+"/credits", map[string]any{"amount": amount, "note": "test"}, nil); st/100 != 2 {
		t.Fatalf("credit %s: %d", amount, st)
	}
}

// refused checks a call of a known key refused before any upstream call:
// its rejected row (the n-th), named by the trace, cost 0, no hold.
func refused(t *testing.T, w wallet, c call, n int, code string) {
	t.Helper()
	row := w.last(t, n)
	checkRow(t, row, rowWant{status: "rejected", code: code})
	if str(row["request_id"]) != c.Header.Get("x-gateway-trace") {
		t.Errorf("row request_id %v, trace %s", row["request_id"], c.Header.Get("x-gateway-trace"))
	}
	w.settled(t, n)
}

// unfunded makes a call of a key whose account has a zero balance: the
// 402 of authentication in p's shape, its rejected row, nothing held.
func unfunded(t *testing.T, g *testgw.Gateway, p chatProto, send func(key string) call) {
	t.Helper()
	acct := g.Account("0")
	_, key := g.Key(acct, nil)
	checkTruthError(t, p, send(key), 402, "quota_exceeded", false)
	rows := logsOf(t, g, key)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	checkRow(t, rows[0], rowWant{status: "rejected", code: "quota_exceeded"})
	if bal, held := g.Balance(acct); bal != "0" || held != "0" {
		t.Fatalf("balance %s held %s", bal, held)
	}
}
