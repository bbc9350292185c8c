package sim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestErrorMarker(t *testing.T) {
	shapes := map[protocol.ID]func(t *testing.T, status int, b []byte){
		protocol.OpenAIChat:      openaiShape,
		protocol.OpenAIResponses: openaiShape,
		protocol.AnthropicMessages: func(t *testing.T, status int, b []byte) {
			var e struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if json.Unmarshal(b, &e) != nil || e.Type != "error" || e.Error.Message == "" ||
				e.Error.Type != map[int]string{429: "rate_limit_error", 500: "api_error", 529: "overloaded_error", 400: "invalid_request_error"}[status] {
				t.Fatalf("%s", b)
			}
		},
		protocol.GeminiNative: func(t *testing.T, status int, b []byte) {
			var e struct {
				Error struct {
					Code            int
					Message, Status string
				}
			}
			if json.Unmarshal(b, &e) != nil || e.Error.Code != status || e.Error.Message == "" ||
				e.Error.Status != map[int]string{429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 529: "INTERNAL", 400: "INVALID_ARGUMENT"}[status] {
				t.Fatalf("%s", b)
			}
		},
	}
	for _, p := range protocol.All {
		for _, status := range []int{400, 429, 500, 529} {
			t.Run(string(p)+"/"+itoa(status), func(t *testing.T) {
				body := bodyFor(p, "hello [sim:error="+itoa(status)+"]", "")
				resp := mustChat(t, call(p, body))
				if resp.Status != status || resp.Headers["content-type"] != "application/json" {
					t.Fatalf("%d %v", resp.Status, resp.Headers)
				}
				if _, ok := resp.Headers["retry-after"]; ok != (status == 429 || status == 529) {
					t.Fatalf("retry-after %v", resp.Headers)
				}
				shapes[p](t, status, resp.Body)
				sink := mustStream(t, call(p, body))
				if sink.head.Status != status || string(sink.head.Body) != string(resp.Body) || len(sink.events) != 0 {
					t.Fatalf("stream head %+v, %d events", sink.head, len(sink.events))
				}
			})
		}
	}
}

func openaiShape(t *testing.T, status int, b []byte) {
	var e struct {
		Error struct {
			Message, Type string
			Param         *string
			Code          *string
		}
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Message == "" || e.Error.Type == "" || !strings.Contains(string(b), `"param":null`) {
		t.Fatalf("%s", b)
	}
	if (status == 429) != (e.Error.Code != nil && *e.Error.Code == "rate_limit_exceeded") {
		t.Fatalf("code: %s", b)
	}
}

func TestCutMarker(t *testing.T) {
	for _, p := range protocol.All {
		t.Run(string(p), func(t *testing.T) {
			body := bodyFor(p, "hello [sim:cut=3]", "")
			if _, err := NewEngine().Chat(context.Background(), call(p, body)); failureKind(err) != vendor.FailureBroken {
				t.Fatalf("chat: %v", err)
			}
			sink := &recSink{}
			err := NewEngine().Stream(context.Background(), call(p, body), sink)
			if failureKind(err) != vendor.FailureBroken || sink.head.Status != 200 || len(sink.events) != 3 {
				t.Fatalf("err %v, head %d, %d events", err, sink.head.Status, len(sink.events))
			}
		})
	}
}

func TestTimingFaults(t *testing.T) {
	chat := protocol.OpenAIChat
	cases := []struct {
		desc     string
		prompt   string
		knobs    Knobs
		timeout  time.Duration
		idle     time.Duration
		cancel   time.Duration // cancel ctx after this
		stream   bool
		want     vendor.FailureKind // -1: success
		minTime  time.Duration
		maxTime  time.Duration
		minEvent int
	}{
		{desc: "hang ends at the timeout", prompt: "[sim:hang]", timeout: 30 * time.Millisecond, want: vendor.FailureTimeout, minTime: 30 * time.Millisecond, maxTime: time.Second},
		{desc: "hang ends at the idle timeout of a stream", prompt: "[sim:hang]", idle: 20 * time.Millisecond, stream: true, want: vendor.FailureTimeout, minTime: 20 * time.Millisecond, maxTime: time.Second},
		{desc: "hang ends when cancelled", prompt: "[sim:hang]", cancel: 20 * time.Millisecond, want: vendor.FailureCanceled, minTime: 20 * time.Millisecond, maxTime: time.Second},
		{desc: "channel hang", prompt: "hi", knobs: Knobs{Hang: true}, timeout: 10 * time.Millisecond, want: vendor.FailureTimeout, maxTime: time.Second},
		{desc: "latency delays the answer", prompt: "[sim:latency=40ms]", want: -1, minTime: 40 * time.Millisecond, maxTime: time.Second},
		{desc: "channel latency", prompt: "hi", knobs: Knobs{Latency: 30 * time.Millisecond}, stream: true, want: -1, minTime: 30 * time.Millisecond, maxTime: time.Second},
		{desc: "latency beyond the timeout", prompt: "[sim:latency=5s]", timeout: 20 * time.Millisecond, want: vendor.FailureTimeout, maxTime: time.Second},
		{desc: "slow spaces the events", prompt: "[sim:slow=5ms,words=4]", stream: true, want: -1, minTime: 30 * time.Millisecond, maxTime: time.Second}, // 7 events, 6 gaps
		{desc: "slow beyond the idle timeout", prompt: "[sim:slow=1s]", idle: 20 * time.Millisecond, stream: true, want: vendor.FailureTimeout, maxTime: 500 * time.Millisecond, minEvent: 1},
		{desc: "cancelled mid-stream", prompt: "[sim:slow=10ms]", cancel: 35 * time.Millisecond, stream: true, want: vendor.FailureCanceled, maxTime: 500 * time.Millisecond, minEvent: 2},
		{desc: "ctx deadline mid-stream is a timeout", prompt: "[sim:slow=1s]", cancel: -20 * time.Millisecond, stream: true, want: vendor.FailureTimeout, maxTime: 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The clock starts before the cancel is scheduled: a cancel
			// due in 20 ms comes 20 ms after this, not after the call.
			start := time.Now()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			} else if tc.cancel < 0 {
				ctx, cancel = context.WithTimeout(ctx, -tc.cancel)
				defer cancel()
			}
			extra := ""
			if tc.stream {
				extra = `,"stream":true`
			}
			c := call(chat, bodyFor(chat, tc.prompt, extra))
			c.Knobs, c.Timeout, c.IdleTimeout = tc.knobs, tc.timeout, tc.idle
			var err error
			sink := &recSink{}
			if tc.stream {
				err = NewEngine().Stream(ctx, c, sink)
			} else {
				_, err = NewEngine().Chat(ctx, c)
			}
			took := time.Since(start)
			if tc.want < 0 && err != nil || tc.want >= 0 && failureKind(err) != tc.want {
				t.Fatalf("err %v, want kind %d", err, tc.want)
			}
			if took < tc.minTime || took > tc.maxTime {
				t.Fatalf("took %v, want %v..%v", took, tc.minTime, tc.maxTime)
			}
			if len(sink.events) < tc.minEvent {
				t.Fatalf("%d events before the failure", len(sink.events))
			}
		})
	}
}

func TestSinkErrorStopsTheStream(t *testing.T) {
	sink := &recSink{failAt: 2}
	err := NewEngine().Stream(context.Background(), call(protocol.AnthropicMessages, bodyFor(protocol.AnthropicMessages, "hi", "")), sink)
	if err == nil || failureKind(err) != -1 || len(sink.events) != 1 {
		t.Fatalf("err %v, %d events", err, len(sink.events))
	}
}

func TestChunksMarker(t *testing.T) {
	contentEvents := func(p protocol.ID, evs []vendor.Event) int {
		n := 0
		for _, ev := range evs {
			d := string(ev.Data)
			switch {
			case p == protocol.OpenAIChat && strings.Contains(d, `"delta":{"content":`),
				p == protocol.AnthropicMessages && ev.Name == "content_block_delta",
				p == protocol.OpenAIResponses && ev.Name == "response.output_text.delta",
				p == protocol.GeminiNative:
				n++
			}
		}
		return n
	}
	for _, p := range protocol.All {
		for _, tc := range []struct {
			prompt string
			want   int
		}{
			{"hi", DefaultWords},
			{"hi [sim:chunks=4]", 4},
			{"hi [sim:words=6,chunks=50]", 6},
			{"hi [sim:words=9] [sim:chunks=1]", 1},
		} {
			t.Run(string(p)+"/"+tc.prompt, func(t *testing.T) {
				sink := mustStream(t, call(p, bodyFor(p, tc.prompt, `,"stream":true`)))
				if n := contentEvents(p, sink.events); n != tc.want {
					t.Fatalf("%d content events, want %d", n, tc.want)
				}
			})
		}
	}
}

func TestDeterminism(t *testing.T) {
	for _, p := range protocol.All {
		t.Run(string(p), func(t *testing.T) {
			body := bodyFor(p, "Call a tool please", "", [2]string{"f", weatherSchema})
			a, b := mustChat(t, call(p, body)), mustChat(t, call(p, body))
			if string(a.Body) != string(b.Body) {
				t.Fatalf("bodies differ:\n%s\n%s", a.Body, b.Body)
			}
			s1, s2 := mustStream(t, call(p, body)), mustStream(t, call(p, body))
			if len(s1.events) != len(s2.events) {
				t.Fatal("event counts differ")
			}
			for i := range s1.events {
				if s1.events[i].Name != s2.events[i].Name || string(s1.events[i].Data) != string(s2.events[i].Data) {
					t.Fatalf("event %d differs", i)
				}
			}
			other := mustChat(t, call(p, bodyFor(p, "Call a tool now", "", [2]string{"f", weatherSchema})))
			if string(other.Body) == string(a.Body) {
				t.Fatal("another request gave the same body (ids should differ)")
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	cases := []struct {
		desc   string
		c      Call
		status int
		kind   vendor.FailureKind
	}{
		{desc: "not JSON", c: Call{Protocol: "openai_chat", Body: []byte(`{"model":`)}, status: 400},
		{desc: "JSON array", c: Call{Protocol: "gemini_native", Body: []byte(`[]`)}, status: 400},
		{desc: "count_tokens off messages", c: Call{Protocol: "openai_chat", Body: []byte(`{}`), Operation: vendor.OpCountTokens}, status: 404},
		{desc: "unknown operation", c: Call{Protocol: "anthropic_messages", Body: []byte(`{}`), Operation: "embed"}, status: 404},
		{desc: "unknown protocol", c: Call{Protocol: "soap", Body: []byte(`{}`)}, kind: vendor.FailureConfig},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			resp, err := NewEngine().Chat(context.Background(), &tc.c)
			if tc.status == 0 {
				if failureKind(err) != tc.kind {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || resp.Status != tc.status {
				t.Fatalf("%v %+v", err, resp)
			}
		})
	}
}

func TestCountTokens(t *testing.T) {
	body := bodyFor(protocol.AnthropicMessages, "count me [sim:error=500]", "")
	c := call(protocol.AnthropicMessages, body)
	c.Operation = vendor.OpCountTokens
	resp := mustChat(t, c)
	// An error marker applies to the counter too: it is an upstream call.
	if resp.Status != 500 {
		t.Fatalf("%d %s", resp.Status, resp.Body)
	}
	body = bodyFor(protocol.AnthropicMessages, "count me", "")
	c = call(protocol.AnthropicMessages, body)
	c.Operation = vendor.OpCountTokens
	resp = mustChat(t, c)
	var got struct {
		InputTokens int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(resp.Body, &got); err != nil || resp.Status != 200 {
		t.Fatalf("%d %s", resp.Status, resp.Body)
	}
	full := decodeBody(t, protocol.AnthropicMessages, mustChat(t, call(protocol.AnthropicMessages, body)).Body)
	if got.InputTokens != full.usage.InputTokens || got.InputTokens == 0 {
		t.Fatalf("count %d, chat input %d", got.InputTokens, full.usage.InputTokens)
	}
}
