// Package conformance is the suite every vendor plugin passes: a vendor's
// own test calls Run with a Target describing how to build the vendor and
// its requests. The same suite runs against an in-process vendor.Vendor and
// one behind plugins/host, so both transports behave alike.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Faults a Target's Request embeds in its body (the sim's prompt markers:
// [sim:error=500], [sim:error=429], [sim:cut=3], [sim:hang]).
const (
	FaultHTTP500 = "http500" // the upstream answers 500 with an error body
	FaultHTTP429 = "http429" // the upstream answers 429 with an error body
	FaultCut     = "cut"     // the upstream breaks the stream after a few events
	FaultHang    = "hang"    // the upstream never answers
)

// UnknownChannel is the channel name the suite uses for an unconfigured one.
const UnknownChannel = "conformance-unknown-channel"

// Target is the vendor under test.
type Target struct {
	// Name is the name Describe must report.
	Name string
	// New returns the vendor configured with one channel named "main"
	// serving model "m". It is called once per Run.
	New func(t *testing.T) vendor.Vendor
	// Protocols the test expects the vendor to serve, written by the test
	// (never read from the vendor's Describe, which the suite checks
	// against it); cases of other protocols are skipped.
	Protocols []string
	// Request builds a request to channel "main" in protocol, with fault
	// ("" or a Fault constant) embedded. Nil skips the case.
	Request func(protocol string, stream bool, fault string) *vendor.ChatRequest
}

// Bounds of the suite: any one call, and what "promptly" means.
const (
	callLimit   = 10 * time.Second
	hangTimeout = 300 * time.Millisecond
	hangLimit   = 5 * time.Second
	cancelLimit = 2 * time.Second
)

// Run runs the suite as subtests of t.
func Run(t *testing.T, target Target) {
	t.Helper()
	if len(target.Protocols) == 0 {
		t.Fatal("conformance: the Target names no protocols to test")
	}
	v := target.New(t)
	t.Run("describe", func(t *testing.T) { testDescribe(t, v, target) })
	for _, p := range allProtocols {
		t.Run(p, func(t *testing.T) {
			if !slices.Contains(target.Protocols, p) {
				t.Skipf("%s does not serve %s", target.Name, p)
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), callLimit)
					defer cancel()
					req := target.Request(p, c.stream, c.fault)
					if req == nil {
						t.Skipf("%s offers no request for this case", target.Name)
					}
					c.run(t, ctx, v, p, req)
				})
			}
		})
	}
}

var allProtocols = []string{
	string(protocol.OpenAIChat), string(protocol.AnthropicMessages),
	string(protocol.OpenAIResponses), string(protocol.GeminiNative),
}

type testCase struct {
	name   string
	stream bool
	fault  string
	run    func(t *testing.T, ctx context.Context, v vendor.Vendor, proto string, req *vendor.ChatRequest)
}

var cases = []testCase{
	{name: "chat", run: testChat},
	{name: "stream", stream: true, run: testStream},
	{name: "unknown_channel", run: testUnknownChannel},
	{name: "unknown_channel_stream", stream: true, run: testUnknownChannel},
	{name: "http500", fault: FaultHTTP500, run: testErrorStatus(500)},
	{name: "http500_stream", stream: true, fault: FaultHTTP500, run: testErrorStatus(500)},
	{name: "http429", fault: FaultHTTP429, run: testErrorStatus(429)},
	{name: "http429_stream", stream: true, fault: FaultHTTP429, run: testErrorStatus(429)},
	{name: "cut_stream", stream: true, fault: FaultCut, run: testCut},
	{name: "hang_timeout", fault: FaultHang, run: testHang},
	{name: "hang_timeout_stream", stream: true, fault: FaultHang, run: testHang},
	{name: "cancel_stream", stream: true, fault: FaultHang, run: testCancel},
	{name: "sink_error_stops_stream", stream: true, run: testSinkError},
}

func testDescribe(t *testing.T, v vendor.Vendor, target Target) {
	ctx, cancel := context.WithTimeout(context.Background(), callLimit)
	defer cancel()
	d, err := v.Describe(ctx)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if d.Name != target.Name {
		t.Errorf("Describe name %q, want %q", d.Name, target.Name)
	}
	for _, p := range target.Protocols {
		if !slices.Contains(d.Protocols, p) {
			t.Errorf("Describe protocols %v lack %s", d.Protocols, p)
		}
	}
	for _, p := range d.Protocols {
		if !slices.Contains(allProtocols, p) {
			t.Errorf("Describe lists unknown protocol %q", p)
		}
	}
}

func testChat(t *testing.T, ctx context.Context, v vendor.Vendor, proto string, req *vendor.ChatRequest) {
	resp, err := v.Chat(ctx, req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Status != 200 {
		t.Fatalf("Chat: status %d body %.300q, want 200", resp.Status, resp.Body)
	}
	if err := checkAnswer(proto, resp.Body); err != nil {
		t.Fatalf("Chat: %s answer: %v", proto, err)
	}
}

func testStream(t *testing.T, ctx context.Context, v vendor.Vendor, proto string, req *vendor.ChatRequest) {
	var s Recorder
	if err := v.ChatStream(ctx, req, &s); err != nil {
		t.Fatalf("ChatStream: %v (after %d events)", err, len(s.Events))
	}
	s.checkOrder(t)
	if len(s.Heads) != 1 || s.Heads[0].Status != 200 {
		t.Fatalf("heads %+v, want one with status 200", s.Heads)
	}
	wantUsage := gjson.GetBytes(req.Body, "stream_options.include_usage").Bool()
	if err := checkStream(proto, s.Events, wantUsage); err != nil {
		t.Fatalf("%s stream: %v", proto, err)
	}
}

func testUnknownChannel(t *testing.T, ctx context.Context, v vendor.Vendor, _ string, req *vendor.ChatRequest) {
	req.Channel = UnknownChannel
	var err error
	var s Recorder
	if req.Stream {
		err = v.ChatStream(ctx, req, &s)
	} else {
		_, err = v.Chat(ctx, req)
	}
	wantFailure(t, err, vendor.FailureConfig)
	if len(s.Heads)+len(s.Events) != 0 {
		t.Fatalf("unknown channel streamed %d heads, %d events", len(s.Heads), len(s.Events))
	}
}

func testErrorStatus(status int) func(*testing.T, context.Context, vendor.Vendor, string, *vendor.ChatRequest) {
	return func(t *testing.T, ctx context.Context, v vendor.Vendor, _ string, req *vendor.ChatRequest) {
		if !req.Stream {
			resp, err := v.Chat(ctx, req)
			if err != nil {
				t.Fatalf("Chat: %v, want a %d answer", err, status)
			}
			if resp.Status != status || len(resp.Body) == 0 {
				t.Fatalf("Chat: status %d body %q, want %d and a body", resp.Status, resp.Body, status)
			}
			return
		}
		var s Recorder
		if err := v.ChatStream(ctx, req, &s); err != nil {
			t.Fatalf("ChatStream: %v, want a %d head", err, status)
		}
		s.checkOrder(t)
		if len(s.Heads) != 1 || s.Heads[0].Status != status || len(s.Heads[0].Body) == 0 {
			t.Fatalf("heads %+v, want one with status %d and a body", s.Heads, status)
		}
		if len(s.Events) != 0 {
			t.Fatalf("%d events after a %d head", len(s.Events), status)
		}
	}
}

func testCut(t *testing.T, ctx context.Context, v vendor.Vendor, _ string, req *vendor.ChatRequest) {
	var s Recorder
	err := v.ChatStream(ctx, req, &s)
	wantFailure(t, err, vendor.FailureBroken)
	s.checkOrder(t)
	if len(s.Events) == 0 {
		t.Fatal("a cut stream delivered no events before breaking")
	}
}

func testHang(t *testing.T, ctx context.Context, v vendor.Vendor, _ string, req *vendor.ChatRequest) {
	req.Timeout = hangTimeout
	start := time.Now()
	var err error
	if req.Stream {
		var s Recorder
		err = v.ChatStream(ctx, req, &s)
	} else {
		_, err = v.Chat(ctx, req)
	}
	wantFailure(t, err, vendor.FailureTimeout)
	if d := time.Since(start); d > hangLimit {
		t.Fatalf("a %v timeout took %v", hangTimeout, d)
	}
}

func testCancel(t *testing.T, ctx context.Context, v vendor.Vendor, _ string, req *vendor.ChatRequest) {
	req.Timeout = 0
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cancelledAt := make(chan time.Time, 1)
	timer := time.AfterFunc(200*time.Millisecond, func() {
		cancelledAt <- time.Now()
		cancel()
	})
	defer timer.Stop()
	var s Recorder
	err := v.ChatStream(ctx, req, &s)
	var at time.Time
	select {
	case at = <-cancelledAt:
	default:
		t.Fatalf("ChatStream returned before the cancel: %v", err)
	}
	if err == nil {
		t.Fatal("ChatStream returned nil after its context was cancelled")
	}
	if d := time.Since(at); d > cancelLimit {
		t.Fatalf("ChatStream returned %v after the cancel (%v)", d, err)
	}
}

// errSinkGone is what the sink returns when its client went away.
var errSinkGone = errors.New("conformance: the client went away")

func testSinkError(t *testing.T, ctx context.Context, v vendor.Vendor, _ string, req *vendor.ChatRequest) {
	s := Recorder{FailAt: 1}
	err := v.ChatStream(ctx, req, &s)
	if err == nil {
		t.Fatal("ChatStream returned nil after the sink failed")
	}
	if s.afterFail > 0 {
		t.Fatalf("%d events delivered after the sink failed", s.afterFail)
	}
}

func wantFailure(t *testing.T, err error, kind vendor.FailureKind) {
	t.Helper()
	var f *vendor.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T), want a *vendor.Failure of kind %d", err, err, kind)
	}
	if f.Kind != kind {
		t.Fatalf("failure kind %d (%q), want %d", f.Kind, f.Message, kind)
	}
}

// Recorder is a vendor.Sink that keeps what it is sent. With FailAt > 0 it
// fails the FailAt-th event (errSinkGone) and counts any sent after that.
type Recorder struct {
	mu        sync.Mutex
	Heads     []vendor.Head
	Events    []vendor.Event
	FailAt    int
	order     []byte // 'h' or 'e' per call
	afterFail int
}

// Head records the head.
func (r *Recorder) Head(h vendor.Head) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h.Body = slices.Clone(h.Body)
	r.Heads = append(r.Heads, h)
	r.order = append(r.order, 'h')
	return nil
}

// Event records the event; the data is copied, as a sink may not keep it.
func (r *Recorder) Event(e vendor.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = append(r.order, 'e')
	if r.FailAt > 0 && len(r.Events) >= r.FailAt {
		r.afterFail++
		return errSinkGone
	}
	r.Events = append(r.Events, vendor.Event{Name: e.Name, Data: slices.Clone(e.Data)})
	if r.FailAt > 0 && len(r.Events) == r.FailAt {
		return errSinkGone
	}
	return nil
}

// checkOrder checks Head came once, before any event.
func (r *Recorder) checkOrder(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) > 0 && r.order[0] != 'h' {
		t.Fatalf("the first sink call was an event, not Head")
	}
	if n := len(r.Heads); n > 1 {
		t.Fatalf("Head was called %d times", n)
	}
}

// Marker is the sim prompt marker of a fault ("" for none).
func Marker(fault string) string {
	switch fault {
	case FaultHTTP500:
		return "[sim:error=500]"
	case FaultHTTP429:
		return "[sim:error=429]"
	case FaultCut:
		return "[sim:cut=3]"
	case FaultHang:
		return "[sim:hang]"
	}
	return ""
}

// Body is a minimal request body in proto asking model for prompt.
func Body(proto, model, prompt string, stream bool) []byte {
	var v any
	switch protocol.ID(proto) {
	case protocol.AnthropicMessages:
		v = map[string]any{"model": model, "max_tokens": 64, "stream": stream,
			"messages": []any{map[string]any{"role": "user", "content": prompt}}}
	case protocol.OpenAIResponses:
		v = map[string]any{"model": model, "stream": stream, "input": prompt}
	case protocol.GeminiNative:
		v = map[string]any{"contents": []any{map[string]any{"role": "user",
			"parts": []any{map[string]any{"text": prompt}}}}}
	default:
		m := map[string]any{"model": model, "stream": stream,
			"messages": []any{map[string]any{"role": "user", "content": prompt}}}
		if stream {
			// The usage chunk is what the gateway bills a stream from.
			m["stream_options"] = map[string]any{"include_usage": true}
		}
		v = m
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers always marshal
	}
	return b
}

// MarkerRequest is a Target.Request for vendors that obey the sim markers:
// channel "main", model "m", the fault's marker in the prompt.
func MarkerRequest(proto string, stream bool, fault string) *vendor.ChatRequest {
	return &vendor.ChatRequest{
		Channel: "main", Protocol: proto, Model: "m", Stream: stream,
		Body:    Body(proto, "m", "Say hello. "+Marker(fault), stream),
		Timeout: 5 * time.Second,
	}
}
