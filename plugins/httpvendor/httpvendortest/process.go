package httpvendortest

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/plugins/host"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// StartBinary builds the plugin binary in the current directory (a
// cmd/tollgate-plugin-* package) and starts it the way the gateway does,
// through plugins/host, configured with cfg. The process ends with the test.
func StartBinary(t testing.TB, name string, cfg vendor.Config) vendor.Vendor {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tollgate-plugin-"+name)
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h := host.New(hclog.NewNullLogger())
	t.Cleanup(h.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := h.Start(ctx, name, host.Exec{Path: bin}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// BinaryCase is what CheckBinary needs to know of one plugin.
type BinaryCase struct {
	Name       string // plugin name, as in Describe
	Protocol   string
	Model      string
	Path       string // upstream path of a non-streaming call
	AuthHeader string // header carrying the key ("Authorization", "X-Api-Key" ...)
	AuthValue  string // its value for the key "key-1"
}

// CheckBinary runs the plugin binary of the current directory as a process
// and checks, across the gRPC boundary: Describe, a call's path, key and
// verbatim bodies, a stream relayed event by event, an error status passed
// through, and failures keeping their kind.
func CheckBinary(t *testing.T, c BinaryCase) {
	if testing.Short() {
		t.Skip("builds and runs the plugin binary")
	}
	const answer = `{"id":"x","ok":true}`
	events := []string{"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"}
	up := NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Accept") == "text/event-stream":
			Stream(events...)(w, r)
		case bodyHas(r, "fail"):
			Reply(503, `{"error":{"message":"down"}}`)(w, r)
		default:
			Reply(200, answer)(w, r)
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	v := StartBinary(t, c.Name, vendor.Config{Channels: []vendor.Channel{
		{Name: "main", BaseURL: up.URL, APIKey: "key-1"},
		{Name: "down", BaseURL: down, APIKey: "key-1"},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if d, err := v.Describe(ctx); err != nil || d.Name != c.Name {
		t.Fatalf("describe: %+v %v", d, err)
	}
	body := []byte(`{"model":"` + c.Model + `","messages":[]}`)
	req := func() *vendor.ChatRequest {
		return &vendor.ChatRequest{Channel: "main", Protocol: c.Protocol, Model: c.Model, Body: body,
			Timeout: 10 * time.Second, IdleTimeout: 10 * time.Second}
	}

	resp, err := v.Chat(ctx, req())
	if err != nil || resp.Status != 200 || string(resp.Body) != answer {
		t.Fatalf("chat: %+v %v", resp, err)
	}
	got := up.Last(t)
	if got.Path != c.Path || string(got.Body) != string(body) || got.Header.Get(c.AuthHeader) != c.AuthValue {
		t.Fatalf("upstream got %s %s, %s=%q", got.Path, got.Body, c.AuthHeader, got.Header.Get(c.AuthHeader))
	}

	sr := req()
	sr.Stream = true
	var sink Sink
	if err := v.ChatStream(ctx, sr, &sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.Heads) != 1 || sink.Heads[0].Status != 200 || len(sink.Events) != len(events) ||
		string(sink.Events[1].Data) != `{"n":2}` {
		t.Fatalf("stream: heads %+v events %q", sink.Heads, sink.Events)
	}

	fr := req()
	fr.Body = []byte(`{"model":"fail","messages":[]}`)
	resp, err = v.Chat(ctx, fr)
	if err != nil || resp.Status != 503 || string(resp.Body) != `{"error":{"message":"down"}}` {
		t.Fatalf("error status: %+v %v", resp, err)
	}

	dr := req()
	dr.Channel = "down"
	if _, err := v.Chat(ctx, dr); Kind(err) != vendor.FailureConnect {
		t.Fatalf("closed port: %v, want a connect failure", err)
	}
	dr.Channel = "nope"
	if _, err := v.Chat(ctx, dr); Kind(err) != vendor.FailureConfig {
		t.Fatalf("unknown channel: %v, want a config failure", err)
	}
}

func bodyHas(r *http.Request, s string) bool {
	b, _ := io.ReadAll(r.Body)
	return strings.Contains(string(b), s)
}
