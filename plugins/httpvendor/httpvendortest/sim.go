package httpvendortest

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// SimCase describes one vendor for CheckSim.
type SimCase struct {
	New      func() vendor.Vendor
	Protocol string
	Model    string
	// Body builds a request body whose user prompt is prompt; stream says
	// whether the body asks for a stream (ignored where the path decides).
	Body func(prompt string, stream bool) []byte
}

// CheckSim runs the vendor against internal/vendorsim, the vendors' wire
// formats served by the sim engine, with the sim's fault markers: a plain
// answer and stream, an error status, a rate limit, a stream cut after three
// events, a hang past the total and the idle timeouts, and a wrong key.
func CheckSim(t *testing.T, c SimCase) {
	const key = "sk-sim-key"
	up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: key}).Handler())
	t.Cleanup(up.Close)
	v := c.New()
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{
		{Name: "main", BaseURL: up.URL, APIKey: key},
		{Name: "wrongkey", BaseURL: up.URL, APIKey: "sk-other"},
	}}); err != nil {
		t.Fatal(err)
	}

	type result struct {
		status int
		body   []byte
		events int
		err    error
	}
	call := func(t *testing.T, channel, prompt string, stream bool, timeout, idle time.Duration) result {
		req := &vendor.ChatRequest{Channel: channel, Protocol: c.Protocol, Model: c.Model,
			Body: c.Body(prompt, stream), Stream: stream, Timeout: timeout, IdleTimeout: idle}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if !stream {
			resp, err := v.Chat(ctx, req)
			if err != nil {
				return result{err: err}
			}
			return result{status: resp.Status, body: resp.Body}
		}
		var sink Sink
		err := v.ChatStream(ctx, req, &sink)
		r := result{events: len(sink.Events), err: err}
		if len(sink.Heads) > 1 {
			t.Fatalf("%d heads", len(sink.Heads))
		}
		if len(sink.Heads) == 1 {
			r.status, r.body = sink.Heads[0].Status, sink.Heads[0].Body
		}
		for _, ev := range sink.Events {
			if string(ev.Data) != "[DONE]" && !json.Valid(ev.Data) {
				t.Fatalf("event data is not JSON: %q", ev.Data)
			}
		}
		return r
	}

	cases := []struct {
		desc     string
		channel  string
		prompt   string
		stream   bool
		timeout  time.Duration
		idle     time.Duration
		status   int
		events   bool // at least one event
		failure  vendor.FailureKind
		bodyHint string
	}{
		{desc: "answer", prompt: "hello", status: 200, bodyHint: "{"},
		{desc: "stream", prompt: "hello", stream: true, status: 200, events: true},
		{desc: "error status", prompt: "hello [sim:error=500]", status: 500, bodyHint: "error"},
		{desc: "error status on a stream", prompt: "hello [sim:error=500]", stream: true, status: 500, bodyHint: "error"},
		{desc: "rate limit", prompt: "hello [sim:error=429]", status: 429, bodyHint: "error"},
		{desc: "wrong key", channel: "wrongkey", prompt: "hello", bodyHint: "error"},
		{desc: "cut stream", prompt: "hello [sim:cut=3]", stream: true, status: 200, events: true, failure: vendor.FailureBroken},
		{desc: "cut answer", prompt: "hello [sim:cut=3]", failure: vendor.FailureBroken},
		{desc: "hang past the timeout", prompt: "hello [sim:hang]", timeout: 200 * time.Millisecond, failure: vendor.FailureTimeout},
		{desc: "stream hang past the idle timeout", prompt: "hello [sim:hang]", stream: true, idle: 200 * time.Millisecond,
			failure: vendor.FailureTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			ch := tc.channel
			if ch == "" {
				ch = "main"
			}
			r := call(t, ch, tc.prompt, tc.stream, tc.timeout, tc.idle)
			if tc.failure != 0 {
				if Kind(r.err) != tc.failure {
					t.Fatalf("got %v, want failure kind %d", r.err, tc.failure)
				}
			} else if r.err != nil {
				t.Fatal(r.err)
			}
			if tc.status != 0 && r.status != tc.status {
				t.Fatalf("status %d, want %d (%s)", r.status, tc.status, r.body)
			}
			if tc.channel == "wrongkey" && (r.status != 401 && r.status != 400 && r.status != 403) {
				t.Fatalf("wrong key: status %d", r.status)
			}
			if tc.events && r.events == 0 {
				t.Fatal("no events")
			}
			if !tc.events && r.events != 0 {
				t.Fatalf("%d events", r.events)
			}
			if !strings.Contains(string(r.body), tc.bodyHint) {
				t.Fatalf("body %q lacks %q", r.body, tc.bodyHint)
			}
		})
	}
}
