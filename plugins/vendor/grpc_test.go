package vendor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
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
	refuse error // Configure's answer
	got    *vendor.ChatRequest
	chat   func(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error)
	stream func(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error
}

func (f *fake) Describe(context.Context) (vendor.Description, error) {
	return vendor.Description{Name: "fake", Protocols: []string{"openai_chat"}, Families: []string{"f"}, Version: "9"}, nil
}

func (f *fake) Configure(_ context.Context, cfg vendor.Config) error {
	f.cfg = cfg
	return f.refuse
}

func (f *fake) Chat(ctx context.Context, req *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	f.got = req
	return f.chat(ctx, req)
}

func (f *fake) ChatStream(ctx context.Context, req *vendor.ChatRequest, sink vendor.Sink) error {
	f.got = req
	return f.stream(ctx, req, sink)
}

// connector serves a vendor over one transport and returns the client side.
type connector func(t *testing.T, impl vendor.Vendor) vendor.Vendor

// eachTransport runs a test over the data plane and over gRPC calls: the
// host uses the first when the plugin offers it, the second otherwise.
func eachTransport(t *testing.T, run func(t *testing.T, connect connector)) {
	for _, tr := range []struct {
		name    string
		disable bool
	}{{"dataplane", false}, {"grpc", true}} {
		t.Run(tr.name, func(t *testing.T) {
			run(t, func(t *testing.T, impl vendor.Vendor) vendor.Vendor {
				t.Helper()
				client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
					vendor.PluginName: &vendor.GRPCPlugin{Impl: impl, DisableDataPlane: tr.disable},
				})
				raw, err := client.Dispense(vendor.PluginName)
				if err != nil {
					t.Fatal(err)
				}
				v := raw.(vendor.Vendor)
				// Close asks the server to shut down; stopping it here too would race.
				t.Cleanup(func() {
					v.(io.Closer).Close()
					client.Close()
				})
				return v
			})
		})
	}
}

func TestDescribeAndConfigureCross(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
			AllowPrivateURLs: true,
		}
		if err := v.Configure(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.cfg, cfg) {
			t.Fatalf("plugin got %+v", f.cfg)
		}
	})
}

// A refused config crosses as a ConfigError naming channel and field, in
// plain words: no gRPC wording reaches the operator.
func TestConfigErrorsCross(t *testing.T) {
	tests := []struct {
		desc   string
		refuse error
		want   vendor.ConfigError
	}{
		{
			desc:   "a channel's field",
			refuse: fmt.Errorf("openai: %w", vendor.ChannelError("main", "api_key", "api_key is empty")),
			want:   vendor.ConfigError{Channel: "main", Field: "api_key", Message: "api_key is empty"},
		},
		{
			desc:   "the plugin's settings",
			refuse: &vendor.ConfigError{Field: "settings", Message: `unknown plugin setting "x"`},
			want:   vendor.ConfigError{Field: "settings", Message: `unknown plugin setting "x"`},
		},
		{
			desc:   "a plain error",
			refuse: errors.New("the license file is missing"),
			want:   vendor.ConfigError{Message: "the license file is missing"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			eachTransport(t, func(t *testing.T, connect connector) {
				v := connect(t, &fake{refuse: tc.refuse})
				err := v.Configure(t.Context(), vendor.Config{})
				var ce *vendor.ConfigError
				if !errors.As(err, &ce) || *ce != tc.want {
					t.Fatalf("err = %#v, want %+v", err, tc.want)
				}
				if strings.Contains(err.Error(), "rpc error") {
					t.Errorf("gRPC wording: %v", err)
				}
			})
		})
	}
}

func TestChatCrosses(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
	})
}

func TestFailuresKeepTheirKind(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
	})
}

func TestTransportFaultsAreStatusErrors(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
	})
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
	eachTransport(t, func(t *testing.T, connect connector) {
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
	})
}

// A sink error ends the stream, and the plugin's context with it.
func TestSinkErrorCancelsThePlugin(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
	})
}

// The caller's deadline reaches the plugin, and so does its cancellation.
func TestContextCrosses(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
		if err := <-errs; status.Code(err) != codes.Canceled && !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want Canceled", err)
		}
	})
}

func TestStreamWithoutHeadIsBroken(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
		v := connect(t, &fake{stream: func(context.Context, *vendor.ChatRequest, vendor.Sink) error { return nil }})
		err := v.ChatStream(t.Context(), &vendor.ChatRequest{}, &conformance.Recorder{})
		var f *vendor.Failure
		if !errors.As(err, &f) || f.Kind != vendor.FailureBroken {
			t.Fatalf("error %v, want a broken failure", err)
		}
	})
}

// The echo vendor passes the suite over the gRPC transport too.
func TestConformanceOverGRPC(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
	})
}

// retainSink keeps events as given, without copying.
type retainSink struct{ events []vendor.Event }

func (r *retainSink) Head(vendor.Head) error     { return nil }
func (r *retainSink) Event(e vendor.Event) error { r.events = append(r.events, e); return nil }

// The client reuses its frame between events: no field of one event may
// leak into the next, and data handed to the sink stays the sink's.
func TestStreamFramesDoNotBleed(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
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
	})
}

// batchSink records how events arrived: one call per batch.
type batchSink struct {
	conformance.Recorder
	batches [][]vendor.Event
}

func (b *batchSink) Events(evs []vendor.Event) error {
	b.batches = append(b.batches, append([]vendor.Event(nil), evs...))
	for _, e := range evs {
		_ = b.Recorder.Event(e)
	}
	return nil
}

// Events a vendor sends together reach a batch sink together over the
// data plane (one frame), and one by one over gRPC; a sink without batches
// gets them one by one on both.
func TestEventBatchesCross(t *testing.T) {
	eachTransport(t, func(t *testing.T, connect connector) {
		sent := []vendor.Event{{Name: "a", Data: []byte("1")}, {Data: []byte("2")}, {Name: "c"}}
		v := connect(t, &fake{stream: func(_ context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
			if err := sink.Head(vendor.Head{Status: 200}); err != nil {
				return err
			}
			if err := vendor.SendEvents(sink, sent[:2]); err != nil {
				return err
			}
			return vendor.SendEvents(sink, sent[2:])
		}})
		var s batchSink
		if err := v.ChatStream(t.Context(), &vendor.ChatRequest{Stream: true}, &s); err != nil {
			t.Fatal(err)
		}
		if got := s.Recorder.Events; len(got) != 3 {
			t.Fatalf("%d events, want 3", len(got))
		}
		for i, e := range s.Recorder.Events {
			if e.Name != sent[i].Name || string(e.Data) != string(sent[i].Data) {
				t.Fatalf("event %d = %+v", i, e)
			}
		}
		// Frames the host finds already read join one batch
		// (TestBufferedFramesJoinOneBatch): 1 or 2 here, never a split one.
		if t.Name() == "TestEventBatchesCross/dataplane" && (len(s.batches) == 0 || len(s.batches) > 2 || len(s.batches[0]) < 2) {
			t.Fatalf("batches over the data plane: %+v, want [a 2] [c] or [a 2 c]", s.batches)
		}
		var plain conformance.Recorder
		if err := v.ChatStream(t.Context(), &vendor.ChatRequest{Stream: true}, &plain); err != nil || len(plain.Events) != 3 {
			t.Fatalf("plain sink: %d events, %v", len(plain.Events), err)
		}
	})
}

// The two transports side by side, in one process: a unary call and a
// 20-event stream (sent as they come, one by one).
func BenchmarkTransport(b *testing.B) {
	answer := &vendor.ChatResponse{Status: 200, Body: bytes.Repeat([]byte("x"), 600)}
	ev := vendor.Event{Data: bytes.Repeat([]byte("y"), 120)}
	f := &fake{
		chat: func(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error) { return answer, nil },
		stream: func(_ context.Context, _ *vendor.ChatRequest, sink vendor.Sink) error {
			if err := sink.Head(vendor.Head{Status: 200}); err != nil {
				return err
			}
			for range 20 {
				if err := sink.Event(ev); err != nil {
					return err
				}
			}
			return nil
		},
	}
	req := &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat", Model: "m", Body: bytes.Repeat([]byte("z"), 300)}
	for _, tr := range []struct {
		name    string
		disable bool
	}{{"dataplane", false}, {"grpc", true}} {
		client, _ := plugin.TestPluginGRPCConn(b, false, map[string]plugin.Plugin{
			vendor.PluginName: &vendor.GRPCPlugin{Impl: f, DisableDataPlane: tr.disable},
		})
		raw, err := client.Dispense(vendor.PluginName)
		if err != nil {
			b.Fatal(err)
		}
		v := raw.(vendor.Vendor)
		b.Run(tr.name+"/unary", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Chat(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tr.name+"/stream-20", func(b *testing.B) {
			var s countSink
			b.ReportAllocs()
			for b.Loop() {
				if err := v.ChatStream(b.Context(), req, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
		v.(io.Closer).Close()
		client.Close()
	}
}

type countSink struct{ n int }

func (c *countSink) Head(vendor.Head) error   { return nil }
func (c *countSink) Event(vendor.Event) error { c.n++; return nil }
