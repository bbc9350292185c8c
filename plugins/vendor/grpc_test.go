package vendor_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tollgate-gw/tollgate/plugins/conformance"
	"github.com/tollgate-gw/tollgate/plugins/conformance/echo"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// fake is a vendor whose behaviour each test sets.
type fake struct {
	cfg    vendor.Config
	got    *vendor.ChatRequest
	chat   func(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error)
	stream func(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error
}

func (f *fake) Describe(context.Context) (vendor.Description, error) {
	return vendor.Description{Name: "fake", Protocols: []string{"openai_chat"}, Families: []string{"f"}, Version: "9"}, nil
}

func (f *fake) Configure(_ context.Context, cfg vendor.Config) error {
	f.cfg = cfg
	return nil
}

func (f *fake) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	f.got = req
	return f.chat(ctx, req)
}

func (f *fake) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	f.got = req
	return f.stream(ctx, req, sink)
}

// connect serves impl over the gRPC transport and returns the client side.
func connect(t *testing.T, impl vendor.Vendor) vendor.Vendor {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		vendor.PluginName: &vendor.GRPCPlugin{Impl: impl},
	})
	// Close asks the server to shut down; stopping it here too would race.
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(vendor.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(vendor.Vendor)
}

func TestDescribeAndConfigureCross(t *testing.T) {
	f := &fake{}
	v := connect(t, f)
	d, err := v.Describe(t.Context())
	want := vendor.Description{Name: "fake", Protocols: []string{"openai_chat"}, Families: []string{"f"}, Version: "9"}
	if err != nil || !reflect.DeepEqual(d, want) {
		t.Fatalf("describe %+v %v", d, err)
	}
	cfg := vendor.Config{
		Settings: map[string]string{"a": "1"},
		Channels: []vendor.Channel{{Name: "main", BaseURL: "http://u", APIKey: "k", Protocols: []string{"openai_chat"},
			Settings: map[string]string{"org": "o"}}},
	}
	if err := v.Configure(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.cfg, cfg) {
		t.Fatalf("plugin got %+v", f.cfg)
	}
}

func TestChatCrosses(t *testing.T) {
	f := &fake{chat: func(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error) {
		return &vendor.ChatResponse{Status: 201, Body: []byte(`{"ok":1}`), Headers: map[string]string{"x-a": "b"}}, nil
	}}
	v := connect(t, f)
	req := &vendor.ChatRequest{
		Channel: "main", Protocol: "anthropic_messages", Model: "m", Body: []byte(`{}`), Stream: false,
		Headers: map[string]string{"anthropic-beta": "x"}, Timeout: 1500 * time.Millisecond,
		IdleTimeout: 250 * time.Millisecond, RequestID: "req-1", Operation: vendor.OpCountTokens,
	}
	resp, err := v.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &vendor.ChatResponse{Status: 201, Body: []byte(`{"ok":1}`), Headers: map[string]string{"x-a": "b"}}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("response %+v", resp)
	}
	if !reflect.DeepEqual(f.got, req) {
		t.Fatalf("plugin got %+v, want %+v", f.got, req)
	}
}

func TestFailuresKeepTheirKind(t *testing.T) {
	kinds := []vendor.FailureKind{vendor.FailureUnknown, vendor.FailureConnect, vendor.FailureTimeout,
		vendor.FailureCanceled, vendor.FailureBroken, vendor.FailureConfig}
	for _, k := range kinds {
		fail := &vendor.Failure{Kind: k, Message: "why"}
		f := &fake{
			chat: func(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error) { return nil, fail },
			stream: func(_ context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
				if err := sink.Head(vendor.Head{Status: 200}); err != nil {
					return err
				}
				if err := sink.Event(vendor.Event{Data: []byte("1")}); err != nil {
					return err
				}
				return fail
			},
		}
		v := connect(t, f)
		t.Run("chat", func(t *testing.T) {
			_, err := v.Chat(t.Context(), &vendor.ChatRequest{})
			var got *vendor.Failure
			if !errors.As(err, &got) || *got != *fail {
				t.Fatalf("kind %d: got %#v", k, err)
			}
		})
		t.Run("stream", func(t *testing.T) {
			var s conformance.Recorder
			err := v.ChatStream(t.Context(), &vendor.ChatRequest{}, &s)
			var got *vendor.Failure
			if !errors.As(err, &got) || *got != *fail || len(s.Events) != 1 {
				t.Fatalf("kind %d: got %#v after %d events", k, err, len(s.Events))
			}
		})
	}
}

func TestTransportFaultsAreStatusErrors(t *testing.T) {
	tests := []struct {
		name string
		chat func(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error)
		code codes.Code
	}{
		{"plain error", func(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error) {
			return nil, errors.New("boom")
		}, codes.Unknown},
		{"no response", func(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error) {
			return nil, nil
		}, codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := connect(t, &fake{chat: tt.chat})
			_, err := v.Chat(t.Context(), &vendor.ChatRequest{})
			var f *vendor.Failure
			if errors.As(err, &f) || status.Code(err) != tt.code {
				t.Fatalf("error %v, want status %v", err, tt.code)
			}
		})
	}
}

// gate is a sink that hands each event to the test as it arrives.
type gate struct {
	heads  chan vendor.Head
	events chan vendor.Event
	fail   error
}

func (g *gate) Head(h vendor.Head) error   { g.heads <- h; return nil }
func (g *gate) Event(e vendor.Event) error { g.events <- e; return g.fail }

// Each event reaches the host's sink before the plugin sends the next one.
func TestStreamIsFrameByFrame(t *testing.T) {
	received := make(chan struct{})
	f := &fake{stream: func(ctx context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
		if err := sink.Head(vendor.Head{Status: 200, Headers: map[string]string{"x": "y"}}); err != nil {
			return err
		}
		for i := range 3 {
			if err := sink.Event(vendor.Event{Name: "e", Data: []byte{'0' + byte(i)}}); err != nil {
				return err
			}
			select {
			case <-received:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}}
	v := connect(t, f)
	g := &gate{heads: make(chan vendor.Head, 1), events: make(chan vendor.Event)}
	done := make(chan error, 1)
	go func() { done <- v.ChatStream(t.Context(), &vendor.ChatRequest{Stream: true}, g) }()
	if h := <-g.heads; h.Status != 200 || h.Headers["x"] != "y" {
		t.Fatalf("head %+v", h)
	}
	for i := range 3 {
		select {
		case e := <-g.events:
			if e.Name != "e" || string(e.Data) != string(rune('0'+i)) {
				t.Fatalf("event %d: %+v", i, e)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d never arrived on its own", i)
		}
		received <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A sink error ends the stream, and the plugin's context with it.
func TestSinkErrorCancelsThePlugin(t *testing.T) {
	stopped := make(chan error, 1)
	f := &fake{stream: func(ctx context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
		if err := sink.Head(vendor.Head{Status: 200}); err != nil {
			return err
		}
		for {
			if err := sink.Event(vendor.Event{Data: []byte("x")}); err != nil {
				stopped <- err
				return err
			}
			select {
			case <-ctx.Done():
				stopped <- ctx.Err()
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}}
	v := connect(t, f)
	gone := errors.New("client gone")
	g := &gate{heads: make(chan vendor.Head, 1), events: make(chan vendor.Event, 1), fail: gone}
	if err := v.ChatStream(t.Context(), &vendor.ChatRequest{Stream: true}, g); !errors.Is(err, gone) {
		t.Fatalf("ChatStream = %v, want the sink's error", err)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin's stream went on after the sink failed")
	}
}

// The caller's deadline reaches the plugin, and so does its cancellation.
func TestContextCrosses(t *testing.T) {
	deadlines := make(chan time.Time, 1)
	cancelled := make(chan struct{})
	f := &fake{chat: func(ctx context.Context, _ *vendor.ChatRequest) (*vendor.ChatResponse, error) {
		d, _ := ctx.Deadline()
		deadlines <- d
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	v := connect(t, f)
	want := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(t.Context(), want)
	errs := make(chan error, 1)
	go func() {
		_, err := v.Chat(ctx, &vendor.ChatRequest{})
		errs <- err
	}()
	if d := <-deadlines; d.Sub(want).Abs() > time.Second {
		t.Fatalf("plugin deadline %v, want about %v", d, want)
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin's context was not cancelled")
	}
	if err := <-errs; status.Code(err) != codes.Canceled {
		t.Fatalf("error %v, want Canceled", err)
	}
}

func TestStreamWithoutHeadIsBroken(t *testing.T) {
	v := connect(t, &fake{stream: func(context.Context, *vendor.ChatRequest, vendor.Sink) error { return nil }})
	err := v.ChatStream(t.Context(), &vendor.ChatRequest{}, &conformance.Recorder{})
	var f *vendor.Failure
	if !errors.As(err, &f) || f.Kind != vendor.FailureBroken {
		t.Fatalf("error %v, want a broken failure", err)
	}
}

// The echo vendor passes the suite over the gRPC transport too.
func TestConformanceOverGRPC(t *testing.T) {
	conformance.Run(t, conformance.Target{
		Name: echo.Name,
		New: func(t *testing.T) vendor.Vendor {
			v := connect(t, echo.New())
			if err := v.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main"}}}); err != nil {
				t.Fatal(err)
			}
			return v
		},
		Protocols: echo.Protocols,
		Request:   conformance.MarkerRequest,
	})
}

// retainSink keeps events as given, without copying.
type retainSink struct{ events []vendor.Event }

func (r *retainSink) Head(vendor.Head) error     { return nil }
func (r *retainSink) Event(e vendor.Event) error { r.events = append(r.events, e); return nil }

// The client reuses its frame between events: no field of one event may
// leak into the next, and data handed to the sink stays the sink's.
func TestStreamFramesDoNotBleed(t *testing.T) {
	sent := []vendor.Event{
		{Name: "a", Data: []byte("first")},
		{Name: "", Data: []byte("2")},
		{Name: "b"},
		{Data: []byte("last")},
	}
	v := connect(t, &fake{stream: func(_ context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
		if err := sink.Head(vendor.Head{Status: 200}); err != nil {
			return err
		}
		for _, e := range sent {
			if err := sink.Event(e); err != nil {
				return err
			}
		}
		return nil
	}})
	var s retainSink
	if err := v.ChatStream(t.Context(), &vendor.ChatRequest{Stream: true}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.events) != len(sent) {
		t.Fatalf("%d events, want %d", len(s.events), len(sent))
	}
	for i, e := range s.events {
		if e.Name != sent[i].Name || string(e.Data) != string(sent[i].Data) {
			t.Errorf("event %d = %q %q, want %q %q", i, e.Name, e.Data, sent[i].Name, sent[i].Data)
		}
	}
}
