package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// call is one raw HTTP exchange.
type call struct {
	Status int
	Header http.Header
	Body   []byte
}

func (c call) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.Body, &m); err != nil {
		t.Fatalf("not JSON (%d): %s", c.Status, c.Body)
	}
	return m
}

// errorOf returns the completions-style error object.
func (c call) errorOf(t *testing.T) (code, typ, msg string) {
	t.Helper()
	e, _ := c.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("no error object (%d): %s", c.Status, c.Body)
	}
	code, _ = e["code"].(string)
	typ, _ = e["type"].(string)
	msg, _ = e["message"].(string)
	return
}

func do(t *testing.T, method, url string, headers map[string]string, body string) call {
	t.Helper()
	c, err := tryDo(method, url, headers, body)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryDo is do for goroutines other than the test's, which must not call
// t.Fatal: it returns the transport error instead.
func tryDo(method, url string, headers map[string]string, body string) (call, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return call{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return call{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return call{}, fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
	}
	return call{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

func chatBody(model, prompt string, extra string) string {
	b, _ := json.Marshal(prompt)
	s := `{"model":"` + model + `","messages":[{"role":"user","content":` + string(b) + `}]`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func mustJSON(v any) string {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	return buf.String()
}

// startDefault runs the gateway on the embedded default with a fresh account.
func startDefault(t *testing.T) (*testgw.Gateway, string, string) {
	t.Helper()
	g := startGateway(t, testgw.Options{})
	acct := g.Account("")
	_, key := g.Key(acct, nil)
	return g, acct, key
}

// logsOf reads the key's rows from the logs API, newest first.
func logsOf(t *testing.T, g *testgw.Gateway, key string) []map[string]any {
	t.Helper()
	c := do(t, "GET", g.URL+"/v1/logs?period=all&limit=200", bearer(key), "")
	if c.Status != 200 {
		t.Fatalf("logs: %d %s", c.Status, c.Body)
	}
	var out struct{ Data []map[string]any }
	if err := json.Unmarshal(c.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Data
}

// runExpectFailure runs tollgate serve with a config that must make it fail
// at start, and returns what it printed.
func runExpectFailure(t *testing.T, bin, cfg string) string {
	t.Helper()
	return serveExpectFailure(t, bin, cfg, nil, "--listen", "127.0.0.1:0")
}

// serveExpectFailure runs tollgate serve, with the config cfg (none when
// empty), env added to the environment and args, which must fail at start;
// it returns what it printed.
func serveExpectFailure(t *testing.T, bin, cfg string, env []string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	args = append([]string{"serve", "--data-dir", dir}, args...)
	if cfg != "" {
		path := dir + "/tollgate.hcl"
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("tollgate did not fail at start")
	}
	if err == nil {
		t.Fatalf("tollgate started:\n%s", out)
	}
	return string(out)
}
