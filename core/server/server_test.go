package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/server"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// chatVendor is an in-process vendor speaking completions-style on the
// channels it is given; its behaviour per channel is set by the test.
type chatVendor struct {
	mode  map[string]string // channel -> "ok", "500", "429", "connect", "cut", "slow", "hang"
	calls atomic.Int64
	ended chan struct{} // closed when a slow stream stops early
}

func (v *chatVendor) Describe(context.Context) (vendor.Description, error) {
	return vendor.Description{Name: "fake", Protocols: []string{"openai_chat"}}, nil
}
func (v *chatVendor) Configure(context.Context, vendor.Config) error { return nil }

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500,"prompt_tokens_details":{"cached_tokens":200}}}`

func (v *chatVendor) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	v.calls.Add(1)
	switch v.mode[req.Channel] {
	case "500":
		return &vendor.ChatResponse{Status: 500, Body: []byte(`{"error":{"message":"boom","type":"server_error"}}`)}, nil
	case "429":
		return &vendor.ChatResponse{Status: 429, Body: []byte(`{"error":{"message":"slow down"}}`), Headers: map[string]string{"retry-after": "7", "x-ratelimit-remaining": "0"}}, nil
	case "400":
		return &vendor.ChatResponse{Status: 400, Body: []byte(`{"error":{"message":"bad field","type":"invalid_request_error"}}`)}, nil
	case "connect":
		return nil, &vendor.Failure{Kind: vendor.FailureConnect, Message: "connection refused"}
	case "hang":
		<-ctx.Done()
		return nil, &vendor.Failure{Kind: vendor.FailureCanceled, Message: "canceled"}
	}
	return &vendor.ChatResponse{Status: 200, Body: []byte(completion)}, nil
}

func chunk(s string) []byte {
	return []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}`)
}

func (v *chatVendor) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	v.calls.Add(1)
	mode := v.mode[req.Channel]
	if mode == "500" {
		return sink.Head(vendor.Head{Status: 500, Body: []byte(`{"error":{"message":"boom"}}`)})
	}
	if mode == "connect" {
		return &vendor.Failure{Kind: vendor.FailureConnect, Message: "refused"}
	}
	if err := sink.Head(vendor.Head{Status: 200}); err != nil {
		return err
	}
	for i := 0; i < 10; i++ {
		if mode == "cut" && i == 3 {
			return &vendor.Failure{Kind: vendor.FailureBroken, Message: "connection reset"}
		}
		if mode == "slow" {
			select {
			case <-ctx.Done():
				close(v.ended)
				return &vendor.Failure{Kind: vendor.FailureCanceled, Message: "canceled"}
			case <-time.After(50 * time.Millisecond):
			}
		}
		if err := sink.Event(vendor.Event{Data: chunk("word ")}); err != nil {
			if mode == "slow" {
				close(v.ended)
			}
			return err
		}
	}
	final := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	usage := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`
	for _, d := range []string{final, usage, "[DONE]"} {
		if err := sink.Event(vendor.Event{Data: []byte(d)}); err != nil {
			return err
		}
	}
	return nil
}

const testConfig = `
channel "primary" {
  vendor    = "fake"
  base_url  = "http://127.0.0.1:1"
  protocols = ["openai_chat"]
  models    = ["m", "solo", "searcher"]
  priority  = 10
}
channel "backup" {
  vendor    = "fake"
  base_url  = "http://127.0.0.1:1"
  protocols = ["openai_chat"]
  models    = ["m"]
  priority  = 5
}
model "m" {
  owned_by           = "test"
  default_max_tokens = 1000
  price {
    input        = "1"
    output       = "2"
    cached_input = "0.5"
  }
}
model "searcher" {
  owned_by = "test"
  price {
    input  = "1"
    output = "2"
  }
  caps {
    tools = ["web_search"]
  }
}
model "solo" {
  owned_by = "test"
  timeout  = "300ms"
  price {
    input  = "1"
    output = "2"
  }
}
`

type env struct {
	url   string
	st    store.Store
	acct  string
	key   string
	fake  *chatVendor
	close func()
}

func newEnv(t *testing.T, modes map[string]string) *env {
	t.Helper()
	cfg, err := config.Parse([]byte(testConfig), "test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	fake := &chatVendor{mode: modes, ended: make(chan struct{})}
	now := time.Now
	log := hclog.NewNullLogger()
	auth := pipeline.NewAuthenticator(st, now)
	deps := &pipeline.Deps{Config: cfg, Store: st, Vendors: map[string]vendor.Vendor{"fake": fake},
		Logger: log, Now: now, Health: pipeline.NewHealth(now), Auth: auth}
	chain, err := pipeline.Build(pipeline.NewRegistry(), deps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sealer, _ := keys.NewSealer(make([]byte, 32))
	svc := admin.NewService(st, sealer, now, config.DefaultSignupCredit)
	a, err := svc.CreateAccount(context.Background(), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	name := "k"
	_, raw, err := svc.CreateKey(context.Background(), a.ID, admin.KeySpec{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{Config: cfg, Store: st, Chains: chain, Logger: log, Now: now,
		Vendors: deps.Vendors})
	hs := httptest.NewServer(srv)
	e := &env{url: hs.URL, st: st, acct: a.ID, key: raw, fake: fake}
	t.Cleanup(func() { hs.Close(); st.Close() })
	return e
}

func (e *env) post(t *testing.T, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (e *env) wallet(t *testing.T) store.Wallet {
	t.Helper()
	w, err := e.st.GetWallet(context.Background(), e.acct)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (e *env) rows(t *testing.T) []store.LogRow {
	t.Helper()
	rows, err := e.st.QueryLogs(context.Background(), store.LogQuery{AccountID: e.acct, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestBillingIsExact(t *testing.T) {
	e := newEnv(t, map[string]string{"primary": "ok"})
	resp, body := e.post(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("hello there")) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// 800 plain input at 1/M + 200 cached at 0.5/M + 500 output at 2/M = 0.0019.
	w := e.wallet(t)
	if want := money.MustParse("121.32") - money.MustParse("0.0019"); w.Balance != want || w.Held != 0 {
		t.Fatalf("wallet %+v, want balance %s", w, want)
	}
	rows := e.rows(t)
	if len(rows) != 1 || rows[0].Cost.String() != "0.0019" || rows[0].Status != "success" || rows[0].CachedTokens != 200 ||
		rows[0].RequestID != resp.Header.Get("x-gateway-trace") || *rows[0].AttemptsCount != 1 {
		t.Fatalf("row %+v", rows[0])
	}
}

func TestFailoverFoldsAttempts(t *testing.T) {
	for _, mode := range []string{"500", "429", "connect"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, map[string]string{"primary": mode, "backup": "ok"})
			resp, body := e.post(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			rows := e.rows(t)
			if len(rows) != 1 || *rows[0].AttemptsCount != 2 || len(rows[0].Attempts) != 1 || rows[0].Attempts[0].ErrorCode == "" {
				t.Fatalf("row %+v", rows[0])
			}
			if e.wallet(t).Balance != money.MustParse("121.32")-money.MustParse("0.0019") {
				t.Fatal("failed attempt was billed")
			}
		})
	}
}

func TestUpstreamErrorsPassThrough(t *testing.T) {
	cases := []struct {
		mode, code, typ string
		status          int
	}{
		{"500", "upstream_error", "api_error", 500},
		{"429", "rate_limit_exceeded", "rate_limit_error", 429},
		{"400", "invalid_request", "invalid_request_error", 400},
		{"connect", "upstream_unreachable", "api_error", 502},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			e := newEnv(t, map[string]string{"primary": tc.mode})
			resp, body := e.post(t, `{"model":"solo","messages":[{"role":"user","content":"hi"}]}`)
			var out struct {
				Error struct{ Code, Type, Message string }
			}
			_ = json.Unmarshal(body, &out)
			if resp.StatusCode != tc.status || out.Error.Code != tc.code || out.Error.Type != tc.typ {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if resp.Header.Get("x-ratelimit-remaining") != "" {
				t.Fatal("upstream x-ratelimit header leaked")
			}
			if tc.mode == "429" && resp.Header.Get("Retry-After") != "7" {
				t.Fatal("Retry-After not passed")
			}
			w := e.wallet(t)
			rows := e.rows(t)
			if w.Balance != money.MustParse("121.32") || w.Held != 0 || len(rows) != 1 || rows[0].Status != "error" || rows[0].Cost != 0 {
				t.Fatalf("wallet %+v rows %+v", w, rows)
			}
		})
	}
}

func TestTimeoutIs504AndInterrupted(t *testing.T) {
	e := newEnv(t, map[string]string{"primary": "hang"})
	resp, body := e.post(t, `{"model":"solo","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 504 || !bytes.Contains(body, []byte("upstream_timeout")) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if rows := e.rows(t); rows[0].Status != "interrupted" || e.wallet(t).Held != 0 {
		t.Fatalf("rows %+v", rows)
	}
}

func readSSE(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestStreamUsageChunkOnlyWhenAsked(t *testing.T) {
	for _, include := range []bool{false, true} {
		t.Run(fmt.Sprint("include_usage=", include), func(t *testing.T) {
			e := newEnv(t, map[string]string{"primary": "ok"})
			extra := ""
			if include {
				extra = `,"stream_options":{"include_usage":true}`
			}
			resp, body := e.post(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]`+extra+`}`)
			events := readSSE(t, bytes.NewReader(body))
			if resp.StatusCode != 200 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("%d %v", resp.StatusCode, events)
			}
			sawUsage := bytes.Contains(body, []byte(`"usage"`))
			if sawUsage != include {
				t.Fatalf("usage chunk present=%v, asked=%v", sawUsage, include)
			}
			// Billed on the upstream's usage either way: 100 in, 10 out.
			if rows := e.rows(t); rows[0].Cost.String() != "0.00012" || rows[0].OutputTokens != 10 {
				t.Fatalf("row %+v", rows[0])
			}
		})
	}
}

func TestMidStreamCutEndsWithoutDone(t *testing.T) {
	e := newEnv(t, map[string]string{"primary": "cut"})
	resp, body := e.post(t, `{"model":"solo","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	events := readSSE(t, bytes.NewReader(body))
	if resp.StatusCode != 200 || len(events) != 3 || strings.Contains(string(body), "[DONE]") || strings.Contains(string(body), "finish_reason\":\"stop") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	rows := e.rows(t)
	w := e.wallet(t)
	if rows[0].Status != "error" || rows[0].Cost <= 0 || w.Held != 0 || w.Balance != money.MustParse("121.32")-rows[0].Cost {
		t.Fatalf("row %+v wallet %+v", rows[0], w)
	}
}

func TestClientDisconnectStopsUpstreamAndIsInterrupted(t *testing.T) {
	e := newEnv(t, map[string]string{"primary": "slow"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"solo","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for n := 0; n < 2; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			n++
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case <-e.fake.ended:
	case <-time.After(3 * time.Second):
		t.Fatal("the upstream call kept running after the client left")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		rows := e.rows(t)
		if len(rows) == 1 {
			if rows[0].Status != "interrupted" || rows[0].Cost <= 0 || e.wallet(t).Held != 0 {
				t.Fatalf("row %+v", rows[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no row for the disconnected call")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBuiltinToolRules(t *testing.T) {
	e := newEnv(t, map[string]string{"primary": "cut"})
	t.Run("built-in tool without stream is invalid_request", func(t *testing.T) {
		resp, body := e.post(t, `{"model":"solo","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search"}]}`)
		if resp.StatusCode != 400 || !bytes.Contains(body, []byte(`"invalid_request"`)) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("unsupported built-in tool", func(t *testing.T) {
		resp, body := e.post(t, `{"model":"solo","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search"}]}`)
		if resp.StatusCode != 400 || !bytes.Contains(body, []byte(`"tool_not_supported"`)) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("upstream failure on the built-in tool path ends with an error chunk and DONE", func(t *testing.T) {
		resp, body := e.post(t, `{"model":"searcher","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search"}]}`)
		events := readSSE(t, bytes.NewReader(body))
		n := len(events)
		if resp.StatusCode != 200 || n < 2 || events[n-1] != "[DONE]" ||
			!strings.Contains(events[n-2], `"type":"api_error"`) || !strings.Contains(events[n-2], `"code":"upstream_error"`) {
			t.Fatalf("%d %q", resp.StatusCode, events)
		}
	})
}

func TestGeminiRoutesOnV1AndV1beta(t *testing.T) {
	e := newEnv(t, map[string]string{"primary": "ok"})
	for _, path := range []string{"/v1beta/models/m:generateContent", "/v1/models/m:generateContent", "/v1/models/m:streamGenerateContent?alt=sse"} {
		t.Run(path, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
			req.Header.Set("x-goog-api-key", e.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Error struct {
					Code   int
					Status string
				}
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			// The model has no generate-content channel: routed, authenticated, then 503 in Gemini's shape.
			if resp.StatusCode != 503 || out.Error.Code != 503 || out.Error.Status != "UNAVAILABLE" {
				t.Fatalf("%d %+v", resp.StatusCode, out)
			}
		})
	}
}

func TestWrongMethodIs405(t *testing.T) {
	e := newEnv(t, map[string]string{"primary": "ok"})
	resp, err := http.Get(e.url + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("%d allow=%q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	resp2, err := http.Get(e.url + "/v1/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 404 {
		t.Fatalf("unknown path: %d", resp2.StatusCode)
	}
}
