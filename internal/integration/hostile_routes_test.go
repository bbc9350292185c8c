package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/kbapi"
	"github.com/tollgate-gw/tollgate/core/server"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The hostile-client suite runs on every route of the public route table
// that takes a key and a body: a route added to the server or declared by
// a family's spec joins it without a line here. Each hostile body is
// answered within its bound, in the route's protocol shape, and the books
// stay whole.

// bodyRoutes are the public routes that authenticate and read a body: the
// server's table, built as the gateway builds it, every family's routes
// from the sim plugin's Describe (the sim serves every family).
func bodyRoutes(t *testing.T) []server.Route {
	t.Helper()
	d, err := sim.New(nil).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var fams []*vendor.FamilySpec
	for i := range d.Specs {
		fams = append(fams, &d.Specs[i])
	}
	kb := new(kbapi.API)
	srv := server.New(server.Options{Config: config.Default(func(string) string { return "" }), Logger: hclog.NewNullLogger(),
		Now: time.Now, Families: fams, Knowledge: kb.Routes()})
	var out []server.Route
	for _, r := range srv.Table() {
		if r.Kind != "" && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
			out = append(out, r)
		}
	}
	if len(out) < 15 {
		t.Fatalf("only %d body routes in the table: %v", len(out), out)
	}
	return out
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// concrete is a path a client would send for a route pattern.
func concrete(path string) string {
	return pathParam.ReplaceAllStringFunc(path, func(p string) string {
		if p == "{call}" {
			return "sim-chat:generateContent"
		}
		return "x1"
	})
}

// routeHead writes a request's head for path with the headers its
// protocol requires besides the key, the body to follow.
func routeHead(t *testing.T, c net.Conn, method, path, key string, length int) {
	t.Helper()
	h := method + " " + path + " HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(length) + "\r\n"
	if key != "" {
		h += "Authorization: Bearer " + key + "\r\n"
	}
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		h += "Anthropic-Version: 2023-06-01\r\n"
	case path == "/mcp":
		h += "Accept: application/json, text/event-stream\r\n"
	}
	if _, err := io.WriteString(c, h+"\r\n"); err != nil {
		t.Fatal(err)
	}
}

// errorShape checks that body is an error in the shape of the protocol
// path speaks, with status.
func errorShape(t *testing.T, path string, status int, body []byte) {
	t.Helper()
	b := gjson.ParseBytes(body)
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		if b.Get("type").Str != "error" || b.Get("error.type").Str == "" || b.Get("error.message").Str == "" {
			t.Errorf("%s: not a messages-style error: %s", path, body)
		}
	case path == "/mcp":
		// JSON-RPC's own error object, or the gateway's before the MCP
		// server is reached.
		if b.Get("error.message").Str == "" {
			t.Errorf("%s: no error message: %s", path, body)
		}
	case strings.HasPrefix(path, "/v1beta/models/") || strings.HasPrefix(path, "/v1/models/"):
		if b.Get("error.code").Int() != int64(status) || b.Get("error.status").Str == "" || b.Get("error.message").Str == "" {
			t.Errorf("%s: not a generate-content error: %s", path, body)
		}
	default:
		if b.Get("error.message").Str == "" || b.Get("error.type").Str == "" || b.Get("error.code").Str == "" {
			t.Errorf("%s: not a completions-style error: %s", path, body)
		}
	}
}

// hostileRoutesConfig is every family on the sim and the hostile chat
// channels, with short header and body timeouts. The idle timeout stays
// the default: nothing here waits on it, and at 2 s it closed pooled
// connections under the suite's own POSTs (clientIdle).
func hostileRoutesConfig(url string) string {
	cfg := strings.Replace(mediaConfig, "server {\n", "server {\n  header_timeout = \"2s\"\n  body_timeout = \"2s\"\n", 1)
	return cfg + hostileConfig(url, "")
}

func TestHostileClientsEveryRoute(t *testing.T) {
	t.Parallel()
	_, url := hostileUpstream(t, vendorsim.HostileOptions{})
	g := startGateway(t, testgw.Options{Config: hostileRoutesConfig(url)})
	for _, rt := range bodyRoutes(t) {
		path := concrete(rt.Path)
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			t.Parallel()
			w := newWallet(g)

			// A keyless body is refused on its head, in the route's shape.
			c := rawConn(t, g, 0)
			routeHead(t, c, rt.Method, path, "", 1<<30)
			resp, body := answer(t, c, 3*time.Second)
			if resp.StatusCode != 401 {
				t.Fatalf("keyless: %d %s", resp.StatusCode, body)
			}
			errorShape(t, path, 401, body)

			// A route withdrawn for good (embeddings without a model)
			// refuses every keyed call before its body: nothing more to try.
			probe := do(t, rt.Method, g.URL+path, bearer(w.key), "{}")
			if probe.Status == 404 && strings.Contains(string(probe.Body), "withdrawn") {
				errorShape(t, path, 404, probe.Body)
				return
			}
			// Read routes (count_tokens, embeddings, the knowledge base)
			// write no row (their "Bills" in docs/reference.md).
			logged := rt.Kind != pipeline.KindRead
			rows := 0
			if logged {
				rows++
			}
			if probe.Status == 200 {
				t.Fatalf("an empty body was served: %s", probe.Body)
			}

			// Oversized: refused by its declared length, unread.
			c = rawConn(t, g, 0)
			routeHead(t, c, rt.Method, path, w.key, 1<<30)
			resp, body = answer(t, c, 3*time.Second)
			if resp.StatusCode != 413 {
				t.Fatalf("oversized: %d %s", resp.StatusCode, body)
			}
			errorShape(t, path, 413, body)

			// Trickled: a byte every 400 ms is cut at the body timeout.
			tc := rawConn(t, g, 0)
			routeHead(t, tc, rt.Method, path, w.key, 1000)
			stop := make(chan struct{})
			defer close(stop)
			go func(c net.Conn) {
				for {
					select {
					case <-stop:
						return
					case <-time.After(400 * time.Millisecond):
					}
					if _, err := c.Write([]byte{' '}); err != nil {
						return
					}
				}
			}(tc)
			start := time.Now()
			resp, body = answer(t, tc, 8*time.Second)
			if took := time.Since(start); resp.StatusCode != 408 || took > 6*time.Second {
				t.Fatalf("trickled: %d after %s: %s", resp.StatusCode, took, body)
			}
			errorShape(t, path, 408, body)

			// Abandoned: half a body, then the client is gone.
			c = rawConn(t, g, 0)
			routeHead(t, c, rt.Method, path, w.key, 1000)
			_, _ = c.Write([]byte(`{"model":"sim-chat","prompt":"`))
			c.Close()
			if logged {
				rows += 3
			}

			if !logged {
				time.Sleep(200 * time.Millisecond)
				if got := logsOf(t, g, w.key); len(got) != 0 {
					t.Errorf("a read route wrote rows: %v", got)
				}
				if _, held := g.Balance(w.acct); held != "0" {
					t.Errorf("holds %s after hostile bodies", held)
				}
				return
			}
			got := w.rows(t, rows)
			for _, r := range got {
				if str(r["status"]) == "success" || num(r["attempts_count"]) != 0 {
					t.Errorf("a hostile body reached an upstream: %v", r)
				}
			}
			if _, held := g.Balance(w.acct); held != "0" {
				t.Errorf("holds %s after hostile bodies", held)
			}
			w.settled(t, rows)
		})
	}
}
