package openaicompat_test

import (
	"context"
	"strings"
	"testing"

	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/openaicompat"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

const (
	chatBody   = `{"model":"llama3.1:8b","messages":[{"role":"user","content":"hi"}]}`
	chatAnswer = `{"id":"chatcmpl-9","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`
)

func TestWire(t *testing.T) {
	cases := []struct {
		desc     string
		base     string
		settings map[string]string
		key      string
		protocol string
		path     string
		auth     string
	}{
		{desc: "default prefix (vLLM, Ollama)", key: "sk-vllm", protocol: "openai_chat", path: "/v1/chat/completions", auth: "Bearer sk-vllm"},
		{desc: "OpenRouter prefix", settings: map[string]string{"path_prefix": "/api/v1"}, key: "sk-or",
			protocol: "openai_chat", path: "/api/v1/chat/completions", auth: "Bearer sk-or"},
		{desc: "prefix without slashes", settings: map[string]string{"path_prefix": "api/v1/"}, key: "k",
			protocol: "openai_chat", path: "/api/v1/chat/completions", auth: "Bearer k"},
		{desc: "empty prefix", settings: map[string]string{"path_prefix": ""}, base: "/openai/", key: "k",
			protocol: "openai_chat", path: "/openai/chat/completions", auth: "Bearer k"},
		{desc: "base_url with a path and trailing slash", base: "/ollama/", protocol: "openai_chat", path: "/ollama/v1/chat/completions"},
		{desc: "no key, no authorization (a local Ollama)", protocol: "openai_chat", path: "/v1/chat/completions"},
		{desc: "responses", key: "k", protocol: "openai_responses", path: "/v1/responses", auth: "Bearer k"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "sk-from-env")
			up := vt.NewUpstream(t, vt.Reply(200, chatAnswer))
			v := openaicompat.New()
			vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL + tc.base, APIKey: tc.key, Settings: tc.settings})
			req := &vendor.ChatRequest{Channel: "main", Protocol: tc.protocol, Model: "llama3.1:8b",
				Body: []byte(chatBody), Headers: vt.ClientHeaders()}
			resp, err := v.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != 200 || string(resp.Body) != chatAnswer {
				t.Fatalf("got %d %s", resp.Status, resp.Body)
			}
			got := up.Last(t)
			if got.Path != tc.path || string(got.Body) != chatBody {
				t.Fatalf("upstream got %s %s", got.Path, got.Body)
			}
			if g := got.Header.Get("Authorization"); g != tc.auth {
				t.Fatalf("authorization %q, want %q", g, tc.auth)
			}
			vt.NoClientHeaders(t, got.Header)
		})
	}
}

func TestStream(t *testing.T) {
	up := vt.NewUpstream(t, vt.Stream(
		"data: {\"choices\":[{\"delta\":{\"content\":\"he\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n",
		"data: [DONE]\n\n"))
	v := openaicompat.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, Settings: map[string]string{"path_prefix": "/api/v1"}})
	var sink vt.Sink
	req := &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat", Body: []byte(chatBody), Stream: true}
	if err := v.ChatStream(context.Background(), req, &sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.Events) != 3 || string(sink.Events[2].Data) != "[DONE]" || up.Last(t).Path != "/api/v1/chat/completions" {
		t.Fatalf("events %q path %s", sink.Events, up.Last(t).Path)
	}
}

func TestRefusals(t *testing.T) {
	cases := []struct {
		desc  string
		ch    vendor.Channel
		req   vendor.ChatRequest
		cfg   string
		fails vendor.FailureKind
	}{
		{desc: "prefix with a query", ch: vendor.Channel{Name: "main", BaseURL: "http://h",
			Settings: map[string]string{"path_prefix": "/v1?x=1"}}, cfg: "a path only"},
		{desc: "unknown setting", ch: vendor.Channel{Name: "main", BaseURL: "http://h",
			Settings: map[string]string{"prefix": "/v1"}}, cfg: `unknown setting "prefix"`},
		{desc: "messages protocol", ch: vendor.Channel{Name: "main", BaseURL: "http://h",
			Protocols: []string{"anthropic_messages"}}, cfg: "does not speak"},
		{desc: "responses on a chat-only channel", ch: vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1",
			Protocols: []string{"openai_chat"}}, req: vendor.ChatRequest{Protocol: "openai_responses"}, fails: vendor.FailureConfig},
		{desc: "count_tokens", ch: vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1"},
			req: vendor.ChatRequest{Protocol: "openai_chat", Operation: vendor.OpCountTokens}, fails: vendor.FailureConfig},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			v := openaicompat.New()
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
}

func TestDescribe(t *testing.T) {
	d, _ := openaicompat.New().Describe(context.Background())
	if d.Name != "openai-compatible" || len(d.Protocols) != 2 {
		t.Fatalf("got %+v", d)
	}
}
