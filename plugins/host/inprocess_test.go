package host_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/plugins/conformance"
	"github.com/tollgate-gw/tollgate/plugins/conformance/echo"
	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// startInProcess runs the echo vendor in process under a new host, its
// [crash] marker a panic instead of an exit.
func startInProcess(t testing.TB, log hclog.Logger) (*host.Host, vendor.Vendor) {
	t.Helper()
	if log == nil {
		log = hclog.NewNullLogger()
	}
	h := host.New(log)
	t.Cleanup(h.Close)
	v, err := h.StartInProcess(context.Background(), "echo", func(hclog.Logger) vendor.Vendor {
		e := echo.New()
		e.Exit = func(int) { panic("echo: crash") }
		return e
	}, mainConfig)
	if err != nil {
		t.Fatal(err)
	}
	return h, v
}

func TestInProcessRunsWithoutAProcess(t *testing.T) {
	h, v := startInProcess(t, nil)
	pid, _ := mustReport(t, v)
	if pid != os.Getpid() {
		t.Fatalf("the vendor answered from pid %d, not this process (%d)", pid, os.Getpid())
	}
	st := h.Stats()
	if len(st) != 1 || st[0].Name != "echo" || !st[0].Up || st[0].Restarts != 0 {
		t.Fatalf("stats %+v", st)
	}
	p := h.Get("echo")
	if p == nil || !p.InProcess() || !p.Up() || p.Path() != "" {
		t.Fatalf("plugin %+v", p)
	}
	if _, err := v.(vendor.Jobs).Validate(t.Context(), &vendor.JobRequest{Channel: "main"}); !errors.Is(err, vendor.ErrNoJobs) {
		t.Fatalf("a vendor without families: %v, want ErrNoJobs", err)
	}
	h.Stop("echo")
	if h.Get("echo") != nil || p.Up() {
		t.Fatal("stopped, yet still listed or up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := v.Chat(ctx, request("hi", false)); kind(err) != vendor.FailureConnect {
		t.Fatalf("a call after Stop: %v, want a connect failure", err)
	}
}

// A panic in a call fails that call as a plugin dying under it would (a
// connect failure before the answer, a broken stream after), logs its
// stack, and leaves the vendor serving the next call.
func TestInProcessPanicFailsTheCallOnly(t *testing.T) {
	logs := &safeBuffer{}
	_, v := startInProcess(t, hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}))
	ctx := t.Context()
	if _, err := v.Chat(ctx, request("[crash]", false)); kind(err) != vendor.FailureConnect {
		t.Fatalf("chat: %v, want a connect failure", err)
	}
	var s conformance.Recorder
	err := v.ChatStream(ctx, request("[crash] [echo:events=5]", true), &s)
	if kind(err) != vendor.FailureBroken || len(s.Heads) != 1 {
		t.Fatalf("stream: %v after %d heads, want a broken stream", err, len(s.Heads))
	}
	if out := logs.String(); !strings.Contains(out, "panicked") || !strings.Contains(out, "echo: crash") {
		t.Fatalf("the panic is not logged:\n%s", out)
	}
	if resp, err := v.Chat(ctx, request("hi", false)); err != nil || resp.Status != 200 {
		t.Fatalf("the next call: %+v %v", resp, err)
	}
}

// A reload reconfigures an in-process vendor in place: its new channels
// serve, the ones it lost fail as unknown, and the host keeps its config.
func TestInProcessReconfigure(t *testing.T) {
	h, v := startInProcess(t, nil)
	p := h.Get("echo")
	next := vendor.Config{Channels: []vendor.Channel{{Name: "second", APIKey: "k2"}}}
	if err := p.Configure(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	req := request("hi", false)
	req.Channel = "second"
	if resp, err := v.Chat(t.Context(), req); err != nil || resp.Status != 200 {
		t.Fatalf("the new channel: %+v %v", resp, err)
	}
	if _, err := v.Chat(t.Context(), request("hi", false)); kind(err) != vendor.FailureConfig {
		t.Fatalf("the channel it lost: %v, want a config failure", err)
	}
	if got := p.Config(); len(got.Channels) != 1 || got.Channels[0].Name != "second" {
		t.Fatalf("config kept %+v", got)
	}
}

func TestStartInProcessRefusals(t *testing.T) {
	h := host.New(hclog.NewNullLogger())
	defer h.Close()
	if _, err := h.StartInProcess(t.Context(), "nope", nil, mainConfig); err == nil {
		t.Fatal("started a vendor that is not built in")
	}
	_, err := h.StartInProcess(t.Context(), "echo", func(hclog.Logger) vendor.Vendor { return refusing{echo.New()} }, mainConfig)
	var ce *vendor.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "configure plugin echo") {
		t.Fatalf("a refused config: %v", err)
	}
	if len(h.Stats()) != 0 {
		t.Fatalf("a refused vendor is listed: %+v", h.Stats())
	}
}

// refusing is a vendor that refuses every config.
type refusing struct{ *echo.Vendor }

func (refusing) Configure(context.Context, vendor.Config) error {
	return &vendor.ConfigError{Channel: "main", Field: "base_url", Message: "no"}
}

func BenchmarkInProcessUnary(b *testing.B) {
	_, v := startInProcess(b, nil)
	ctx := b.Context()
	req := request("hi", false)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := v.Chat(ctx, req)
		if err != nil || resp.Status != 200 {
			b.Fatal(resp, err)
		}
	}
}

func BenchmarkInProcessStream20(b *testing.B) {
	_, v := startInProcess(b, nil)
	ctx := b.Context()
	req := request("hi [echo:events=20]", true)
	var s countSink
	b.ReportAllocs()
	for b.Loop() {
		s.n = 0
		if err := v.ChatStream(ctx, req, &s); err != nil || s.n != 20 {
			b.Fatal(s.n, err)
		}
	}
}
