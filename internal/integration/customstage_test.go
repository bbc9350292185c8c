package integration

import (
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

const denylistConfig = `
server {
  allow_private_urls = true
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat"]
  protocols = ["openai_chat", "anthropic_messages"]
  models    = ["deny-chat"]
}
model "deny-chat" {
  owned_by = "sim"
  price {
    input  = "1"
    output = "2"
  }
}
pipeline {
  stages = ["auth", "allowlist", "prompt-denylist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"]
}
stage "prompt-denylist" {
  settings = { phrases = "project nightingale" }
}
`

// The example custom stage, compiled into its own binary and wired by config,
// refuses denied prompts in each protocol's error shape and logs them.
func TestCustomStageExample(t *testing.T) {
	bin := testgw.BuildExtra(t, "tollgate-denylist", "./examples/custom-stage/cmd/tollgate-denylist")
	// The example binary takes only --config; listen and data dir come from it.
	dir := t.TempDir()
	cfg := strings.Replace(denylistConfig, "allow_private_urls = true", "allow_private_urls = true\n  listen = \"127.0.0.1:0\"", 1) +
		"\nstore \"badger\" {\n  dir = \"" + dir + "\"\n}\n"
	g := startGateway(t, testgw.Options{Binary: bin, Config: cfg, DataDir: dir})
	acct := g.Account("")
	_, key := g.Key(acct, nil)

	c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("deny-chat", "Tell me about Project Nightingale", ""))
	if code, _, msg := c.errorOf(t); c.Status != 400 || code != "invalid_request" || !strings.Contains(msg, "denied phrase") {
		t.Fatalf("denied prompt: %d %s", c.Status, c.Body)
	}
	c = do(t, "POST", g.URL+"/v1/messages", map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"},
		`{"model":"deny-chat","max_tokens":20,"messages":[{"role":"user","content":"project nightingale status"}]}`)
	if m := c.json(t); c.Status != 400 || m["type"] != "error" {
		t.Fatalf("messages-style refusal: %d %s", c.Status, c.Body)
	}
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("deny-chat", "Tell me a story", "")); c.Status != 200 {
		t.Fatalf("allowed prompt: %d %s", c.Status, c.Body)
	}
	// The two refusals are rejected rows costing 0; only the allowed call
	// is billed, exactly.
	rows := logsOf(t, g, key)
	if len(rows) != 3 {
		t.Fatalf("rows %v", rows)
	}
	for i, r := range rows {
		rejected := i > 0
		if rejected && (r["status"] != "rejected" || r["error_code"] != "invalid_request" || r["cost"] != "0") ||
			!rejected && r["status"] != "success" {
			t.Fatalf("row %d: %v", i, r)
		}
	}
	w := wallet{g: g, acct: acct, key: key}
	if spent := w.settled(t, 3); spent == 0 {
		t.Fatal("the allowed call was not billed")
	}
}

func TestPipelineConfigErrorsFailAtStart(t *testing.T) {
	dir := testgw.Build(t)
	cfg := strings.Replace(denylistConfig, `"prompt-denylist", `, `"no-such-stage", `, 1)
	out := runExpectFailure(t, dir+"/tollgate", cfg)
	if !strings.Contains(out, `unknown stage "no-such-stage"`) {
		t.Fatalf("output:\n%s", out)
	}
}

// A TLS mistake fails the start at its place in the file: a misspelt
// attribute when the file loads, a certificate file that does not load
// when HTTPS is prepared.
func TestTLSConfigMistakesFailAtStart(t *testing.T) {
	dir := testgw.Build(t)
	out := runExpectFailure(t, dir+"/tollgate", "server {\n  tls {\n    domain = \"gw.example.com\"\n  }\n}\n")
	if !strings.Contains(out, "tollgate.hcl:3,5-11: server.tls: Unsupported argument") || !strings.Contains(out, `Did you mean "domains"?`) {
		t.Fatalf("output:\n%s", out)
	}
	out = runExpectFailure(t, dir+"/tollgate", "server {\n  tls {\n    cert_file = \"/no/such/cert.pem\"\n    key_file  = \"/no/such/key.pem\"\n  }\n}\n")
	if !strings.Contains(out, "tollgate.hcl:3,17-36: server.tls: cert_file: stat /no/such/cert.pem: no such file or directory") {
		t.Fatalf("output:\n%s", out)
	}
}
