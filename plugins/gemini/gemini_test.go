package gemini_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/gemini"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

const (
	genBody   = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":64}}`
	genAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"hello"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":1,"totalTokenCount":3},"modelVersion":"gemini-2.5-flash"}`
)

// With alt=sse the API frames each chunk as "data: {...}" and CRLF line ends.
var genStream = []string{
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"hel\"}]}}]}\r\n\r\n",
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":2,\"candidatesTokenCount\":1}}\r\n\r\n",
}

func TestWire(t *testing.T) {
	cases := []struct {
		desc     string
		base     string
		settings map[string]string
		model    string
		stream   bool
		path     string
		query    string
	}{
		{desc: "generateContent", model: "gemini-2.5-flash", path: "/v1beta/models/gemini-2.5-flash:generateContent"},
		{desc: "trailing slash", base: "/", model: "gemini-2.5-flash", path: "/v1beta/models/gemini-2.5-flash:generateContent"},
		{desc: "streamGenerateContent with alt=sse", model: "gemini-2.5-flash", stream: true,
			path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent", query: "alt=sse"},
		{desc: "models/ prefix", model: "models/gemini-2.5-pro", path: "/v1beta/models/gemini-2.5-pro:generateContent"},
		{desc: "model id escaped", model: "my model?x", path: "/v1beta/models/my%20model%3Fx:generateContent"},
		{desc: "api_version setting", settings: map[string]string{"api_version": "v1"}, model: "gemini-2.5-flash",
			path: "/v1/models/gemini-2.5-flash:generateContent"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.stream {
					vt.Stream(genStream...)(w, r)
					return
				}
				vt.Reply(200, genAnswer, "X-Goog-Request-Id", "up")(w, r)
			})
			v := gemini.New()
			vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL + tc.base, APIKey: "AIza-test", Settings: tc.settings})
			req := &vendor.ChatRequest{Channel: "main", Protocol: "gemini_native", Model: tc.model,
				Body: []byte(genBody), Stream: tc.stream, Headers: vt.ClientHeaders()}
			if tc.stream {
				var sink vt.Sink
				if err := v.ChatStream(context.Background(), req, &sink); err != nil {
					t.Fatal(err)
				}
				if len(sink.Events) != 2 || !strings.HasSuffix(string(sink.Events[1].Data), `"candidatesTokenCount":1}}`) {
					t.Fatalf("events %q", sink.Events)
				}
			} else {
				resp, err := v.Chat(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Status != 200 || string(resp.Body) != genAnswer || len(resp.Headers) != 1 {
					t.Fatalf("got %d %s %v", resp.Status, resp.Body, resp.Headers)
				}
			}
			got := up.Last(t)
			if got.Path != tc.path || got.RawQuery != tc.query || string(got.Body) != genBody {
				t.Fatalf("upstream got %s?%s %s", got.Path, got.RawQuery, got.Body)
			}
			if got.Header.Get("X-Goog-Api-Key") != "AIza-test" || got.Header.Get("Authorization") != "" {
				t.Fatalf("auth headers %v", got.Header)
			}
			if strings.Contains(got.RawQuery, "key=") {
				t.Fatal("the key went into the query string")
			}
			vt.NoClientHeaders(t, got.Header)
			if got.Header.Get("Anthropic-Beta") != "" {
				t.Fatal("anthropic-beta went to gemini")
			}
		})
	}
}

func TestErrorPassesThrough(t *testing.T) {
	body := `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`
	up := vt.NewUpstream(t, vt.Reply(429, body))
	v := gemini.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	resp, err := v.Chat(context.Background(), &vendor.ChatRequest{Channel: "main", Protocol: "gemini_native", Model: "g", Body: []byte(genBody)})
	if err != nil || resp.Status != 429 || string(resp.Body) != body {
		t.Fatalf("got %+v %v", resp, err)
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
		{desc: "empty api_key", ch: vendor.Channel{Name: "main", BaseURL: "https://generativelanguage.googleapis.com"}, cfg: "api_key is empty"},
		{desc: "base_url with version", ch: vendor.Channel{Name: "main", BaseURL: "https://generativelanguage.googleapis.com/v1beta", APIKey: "k"},
			cfg: "without /v1"},
		{desc: "bad api_version", ch: vendor.Channel{Name: "main", BaseURL: "https://h", APIKey: "k",
			Settings: map[string]string{"api_version": "v1beta/models"}}, cfg: "not a version segment"},
		{desc: "unknown setting", ch: vendor.Channel{Name: "main", BaseURL: "https://h", APIKey: "k",
			Settings: map[string]string{"path_prefix": "/x"}}, cfg: "unknown setting"},
		{desc: "no model", ch: vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1", APIKey: "k"},
			req: vendor.ChatRequest{Protocol: "gemini_native"}, fails: vendor.FailureConfig},
		{desc: "chat body", ch: vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1", APIKey: "k"},
			req: vendor.ChatRequest{Protocol: "openai_chat", Model: "g"}, fails: vendor.FailureConfig},
		{desc: "count_tokens", ch: vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1", APIKey: "k"},
			req: vendor.ChatRequest{Protocol: "gemini_native", Model: "g", Operation: vendor.OpCountTokens}, fails: vendor.FailureConfig},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			v := gemini.New()
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

func TestKeyNeverFromEnvironment(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "AIza-env")
	t.Setenv("GOOGLE_API_KEY", "AIza-env")
	up := vt.NewUpstream(t, vt.Reply(200, genAnswer))
	v := gemini.New()
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL}}}); err == nil {
		t.Fatal("a channel without api_key was accepted")
	}
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "AIza-cfg"})
	if _, err := v.Chat(context.Background(), &vendor.ChatRequest{Channel: "main", Protocol: "gemini_native", Model: "g", Body: []byte(genBody)}); err != nil {
		t.Fatal(err)
	}
	if got := up.Last(t).Header.Get("X-Goog-Api-Key"); got != "AIza-cfg" {
		t.Fatalf("x-goog-api-key %q", got)
	}
}
