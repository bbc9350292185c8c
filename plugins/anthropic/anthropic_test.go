package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/anthropic"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

const (
	msgBody   = `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	msgAnswer = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hello"}],"model":"claude-sonnet-4-5","stop_reason":"end_turn","usage":{"input_tokens":8,"output_tokens":1}}`
)

// A messages stream as the API sends it: every event named.
var msgStream = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":8,\"output_tokens\":1}}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hello\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

func TestWire(t *testing.T) {
	cases := []struct {
		desc    string
		base    string
		op      string
		stream  bool
		headers map[string]string // client headers given to the plugin
		path    string
		beta    string // anthropic-beta the upstream must see
	}{
		{desc: "messages", path: "/v1/messages", headers: vt.ClientHeaders(), beta: "prompt-caching-2024-07-31"},
		{desc: "trailing slash", base: "/", path: "/v1/messages"},
		{desc: "stream", stream: true, path: "/v1/messages", headers: vt.ClientHeaders(), beta: "prompt-caching-2024-07-31"},
		{desc: "count_tokens", op: vendor.OpCountTokens, path: "/v1/messages/count_tokens",
			headers: map[string]string{"anthropic-beta": "token-counting-2024-11-01"}, beta: "token-counting-2024-11-01"},
		{desc: "empty anthropic-beta is not sent", path: "/v1/messages", headers: map[string]string{"anthropic-beta": ""}},
		{desc: "anthropic-beta with a control byte is dropped", path: "/v1/messages",
			headers: map[string]string{"anthropic-beta": "a\r\nX-Injected: 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			up := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case tc.stream:
					vt.Stream(msgStream...)(w, r)
				case tc.op != "":
					vt.Reply(200, `{"input_tokens":12}`)(w, r)
				default:
					vt.Reply(200, msgAnswer, "Request-Id", "req_up", "Anthropic-Ratelimit-Requests-Remaining", "9")(w, r)
				}
			})
			v := anthropic.New()
			vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL + tc.base, APIKey: "sk-ant-test"})
			req := &vendor.ChatRequest{Channel: "main", Protocol: "anthropic_messages", Model: "claude-sonnet-4-5",
				Body: []byte(msgBody), Stream: tc.stream, Headers: tc.headers, Operation: tc.op}
			if tc.stream {
				var sink vt.Sink
				if err := v.ChatStream(context.Background(), req, &sink); err != nil {
					t.Fatal(err)
				}
				if len(sink.Events) != len(msgStream) {
					t.Fatalf("%d events, want %d", len(sink.Events), len(msgStream))
				}
				for i, ev := range sink.Events {
					if want := "event: " + ev.Name + "\ndata: " + string(ev.Data) + "\n\n"; want != msgStream[i] {
						t.Fatalf("event %d: %q, want %q", i, want, msgStream[i])
					}
				}
			} else {
				resp, err := v.Chat(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Status != 200 || !strings.HasPrefix(string(resp.Body), "{") || len(resp.Headers) != 1 {
					t.Fatalf("got %d %s %v", resp.Status, resp.Body, resp.Headers)
				}
			}
			got := up.Last(t)
			if got.Path != tc.path || string(got.Body) != msgBody {
				t.Fatalf("upstream got %s %s", got.Path, got.Body)
			}
			want := map[string]string{
				"X-Api-Key": "sk-ant-test", "Anthropic-Version": "2023-06-01", "Anthropic-Beta": tc.beta,
				"Authorization": "", "Content-Type": "application/json",
			}
			for name, w := range want {
				if g := got.Header.Values(name); strings.Join(g, ",") != w {
					t.Errorf("%s: %q, want %q", name, g, w)
				}
			}
			vt.NoClientHeaders(t, got.Header, "anthropic-beta")
		})
	}
}

func TestOverloadedPassesThrough(t *testing.T) {
	body := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}`
	up := vt.NewUpstream(t, vt.Reply(529, body, "Retry-After", "5", "Request-Id", "req_011"))
	v := anthropic.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	var sink vt.Sink
	req := &vendor.ChatRequest{Channel: "main", Protocol: "anthropic_messages", Body: []byte(msgBody), Stream: true}
	if err := v.ChatStream(context.Background(), req, &sink); err != nil {
		t.Fatal(err)
	}
	h := sink.Heads[0]
	if h.Status != 529 || string(h.Body) != body || fmt.Sprint(h.Headers) != "map[content-type:application/json retry-after:5]" {
		t.Fatalf("head %d %s %v", h.Status, h.Body, h.Headers)
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
		{desc: "empty api_key", ch: vendor.Channel{Name: "main", BaseURL: "https://api.anthropic.com"}, cfg: "api_key is empty"},
		{desc: "base_url with /v1", ch: vendor.Channel{Name: "main", BaseURL: "https://api.anthropic.com/v1/", APIKey: "k"}, cfg: "without /v1"},
		{desc: "settings", ch: vendor.Channel{Name: "main", BaseURL: "https://api.anthropic.com", APIKey: "k",
			Settings: map[string]string{"anthropic_version": "2024-01-01"}}, cfg: "takes none"},
		{desc: "protocol", ch: vendor.Channel{Name: "main", BaseURL: "https://api.anthropic.com", APIKey: "k",
			Protocols: []string{"openai_chat"}}, cfg: "does not speak"},
		{desc: "chat body", ch: vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1", APIKey: "k"},
			req: vendor.ChatRequest{Protocol: "openai_chat"}, fails: vendor.FailureConfig},
		{desc: "unknown operation", ch: vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1", APIKey: "k"},
			req: vendor.ChatRequest{Protocol: "anthropic_messages", Operation: "batch"}, fails: vendor.FailureConfig},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			v := anthropic.New()
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
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
	up := vt.NewUpstream(t, vt.Reply(200, msgAnswer))
	v := anthropic.New()
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: up.URL}}}); err == nil {
		t.Fatal("a channel without api_key was accepted")
	}
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "sk-ant-cfg"})
	if _, err := v.Chat(context.Background(), &vendor.ChatRequest{Channel: "main", Protocol: "anthropic_messages", Body: []byte(msgBody)}); err != nil {
		t.Fatal(err)
	}
	if got := up.Last(t).Header.Get("X-Api-Key"); got != "sk-ant-cfg" {
		t.Fatalf("x-api-key %q", got)
	}
}
