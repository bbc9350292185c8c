package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

const (
	chatBody   = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"unknown_field":{"kept":true}}`
	chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":1,"total_tokens":9}}`
)

func TestWire(t *testing.T) {
	cases := []struct {
		desc     string
		base     string // appended to the upstream URL
		settings map[string]string
		protocol string
		stream   bool
		path     string
		header   map[string]string
	}{
		{desc: "chat completions", protocol: "openai_chat", path: "/v1/chat/completions",
			header: map[string]string{"Authorization": "Bearer sk-test", "Accept": "application/json"}},
		{desc: "base_url with trailing slash", base: "/", protocol: "openai_chat", path: "/v1/chat/completions"},
		{desc: "base_url with a path", base: "/proxy/", protocol: "openai_chat", path: "/proxy/v1/chat/completions"},
		{desc: "responses", protocol: "openai_responses", path: "/v1/responses"},
		{desc: "chat stream", protocol: "openai_chat", stream: true, path: "/v1/chat/completions",
			header: map[string]string{"Accept": "text/event-stream"}},
		{desc: "responses stream", protocol: "openai_responses", stream: true, path: "/v1/responses"},
		{desc: "organization and project", protocol: "openai_chat", path: "/v1/chat/completions",
			settings: map[string]string{"organization": "org-1", "project": "proj-1"},
			header:   map[string]string{"OpenAI-Organization": "org-1", "OpenAI-Project": "proj-1"}},
		{desc: "no organization header unless set", protocol: "openai_chat", path: "/v1/chat/completions",
			header: map[string]string{"OpenAI-Organization": "", "OpenAI-Project": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.stream {
					vt.Stream("data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"he\"}}]}\n\n", "data: [DONE]\n\n")(w, r)
					return
				}
				vt.Reply(200, chatAnswer, "X-Request-Id", "req_upstream", "X-Ratelimit-Limit-Requests", "500")(w, r)
			})
			v := openai.New()
			vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL + tc.base, APIKey: "sk-test", Settings: tc.settings})
			req := &vendor.ChatRequest{Channel: "main", Protocol: tc.protocol, Model: "gpt-4o-mini",
				Body: []byte(chatBody), Stream: tc.stream, Headers: vt.ClientHeaders()}
			if tc.stream {
				var sink vt.Sink
				if err := v.ChatStream(context.Background(), req, &sink); err != nil {
					t.Fatal(err)
				}
				if len(sink.Events) != 2 || string(sink.Events[1].Data) != "[DONE]" {
					t.Fatalf("events %q", sink.Events)
				}
			} else {
				resp, err := v.Chat(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Status != 200 || string(resp.Body) != chatAnswer {
					t.Fatalf("got %d %s", resp.Status, resp.Body)
				}
				if _, leak := resp.Headers["x-request-id"]; leak || len(resp.Headers) != 1 {
					t.Fatalf("headers %v", resp.Headers)
				}
			}
			got := up.Last(t)
			if got.Path != tc.path || got.RawQuery != "" || string(got.Body) != chatBody {
				t.Fatalf("upstream got %s?%s %s", got.Path, got.RawQuery, got.Body)
			}
			if got.Header.Get("Authorization") != "Bearer sk-test" {
				t.Fatalf("authorization %q", got.Header.Get("Authorization"))
			}
			for name, want := range tc.header {
				if g := got.Header.Get(name); g != want {
					t.Errorf("%s: %q, want %q", name, g, want)
				}
			}
			vt.NoClientHeaders(t, got.Header)
			if got.Header.Get("Anthropic-Beta") != "" || got.Header.Get("Anthropic-Version") != "" {
				t.Fatalf("anthropic headers went to openai: %v", got.Header)
			}
		})
	}
}

func TestErrorBodyVerbatim(t *testing.T) {
	body := `{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	up := vt.NewUpstream(t, vt.Reply(429, body, "Retry-After", "20", "X-Ratelimit-Remaining-Requests", "0"))
	v := openai.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "sk-test"})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			req := &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat", Body: []byte(chatBody), Stream: stream}
			var status int
			var got []byte
			var headers map[string]string
			if stream {
				var sink vt.Sink
				if err := v.ChatStream(context.Background(), req, &sink); err != nil {
					t.Fatal(err)
				}
				status, got, headers = sink.Heads[0].Status, sink.Heads[0].Body, sink.Heads[0].Headers
			} else {
				resp, err := v.Chat(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				status, got, headers = resp.Status, resp.Body, resp.Headers
			}
			if status != 429 || string(got) != body || headers["retry-after"] != "20" {
				t.Fatalf("got %d %s %v", status, got, headers)
			}
			for k := range headers {
				if strings.HasPrefix(k, "x-ratelimit") {
					t.Fatalf("leaked %s", k)
				}
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	up := vt.NewUpstream(t, vt.Reply(200, chatAnswer))
	cases := []struct {
		desc  string
		ch    vendor.Channel
		req   vendor.ChatRequest
		cfg   string             // a Configure error
		fails vendor.FailureKind // else a call failure
	}{
		{desc: "empty api_key", ch: vendor.Channel{Name: "main", BaseURL: up.URL}, cfg: "api_key is empty"},
		{desc: "base_url with /v1", ch: vendor.Channel{Name: "main", BaseURL: up.URL + "/v1", APIKey: "k"}, cfg: "without /v1"},
		{desc: "unknown setting", ch: vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k",
			Settings: map[string]string{"path_prefix": "/v1"}}, cfg: `unknown setting "path_prefix"`},
		{desc: "protocol openai does not speak", ch: vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k",
			Protocols: []string{"anthropic_messages"}}, cfg: "does not speak"},
		{desc: "count_tokens", ch: vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"},
			req: vendor.ChatRequest{Protocol: "openai_chat", Operation: vendor.OpCountTokens}, fails: vendor.FailureConfig},
		{desc: "responses on a chat-only channel", ch: vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k",
			Protocols: []string{"openai_chat"}}, req: vendor.ChatRequest{Protocol: "openai_responses"}, fails: vendor.FailureConfig},
		{desc: "messages body", ch: vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"},
			req: vendor.ChatRequest{Protocol: "anthropic_messages"}, fails: vendor.FailureConfig},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			v := openai.New()
			err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{tc.ch}})
			if tc.cfg != "" {
				if err == nil || !strings.Contains(err.Error(), tc.cfg) {
					t.Fatalf("configure: %v, want %q", err, tc.cfg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.req.Channel = "main"
			if _, err := v.Chat(context.Background(), &tc.req); vt.Kind(err) != tc.fails {
				t.Fatalf("got %v, want kind %d", err, tc.fails)
			}
		})
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("%d refused calls reached the upstream", n)
	}
}

// The key comes from Configure only: the host environment is not a source.
func TestKeyNeverFromEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	up := vt.NewUpstream(t, vt.Reply(200, chatAnswer))
	v := openai.New()
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL}}}); err == nil {
		t.Fatal("a channel without api_key was accepted (would it use the environment?)")
	}
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "sk-configured"})
	if _, err := v.Chat(context.Background(), &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat", Body: []byte(chatBody)}); err != nil {
		t.Fatal(err)
	}
	if got := up.Last(t).Header.Get("Authorization"); got != "Bearer sk-configured" {
		t.Fatalf("authorization %q", got)
	}
}

func TestDescribe(t *testing.T) {
	d, err := openai.New().Describe(context.Background())
	if err != nil || d.Name != "openai" || fmt.Sprint(d.Protocols) != "[openai_chat openai_responses]" ||
		d.Version != httpvendor.Version || fmt.Sprint(d.Families) != "[chat image speech video]" || len(d.Specs) != 3 {
		t.Fatalf("got %+v %v", d, err)
	}
}
