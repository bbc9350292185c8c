package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// What docs/agents-org.md shows an operator typing: an organization, its
// allowlist, an agent, its keys (at once, and requested then approved), and
// a client calling the agent, with the real binary against a real gateway.
func TestBinaryAgents(t *testing.T) {
	g := testgw.Start(t, testgw.Options{})
	admin := func(t *testing.T, args ...string) string {
		t.Helper()
		out, errOut, code := tollgateCmd(t, nil, append([]string{"admin", "--url", g.URL, "--token", testgw.AdminToken}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
	field := func(t *testing.T, out, name string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + name + `: +(\S+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %s in:\n%s", name, out)
		}
		return m[1]
	}
	chat := func(t *testing.T, key string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(`{"model":"agent","messages":[{"role":"user","content":"How do I reset my VPN token?"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}

	org := field(t, admin(t, "account", "create", "--name", "Acme", "--initial-credit", "500"), "id")
	if out := admin(t, "account", "update", org, "--allowed-models", "sim-chat,gpt-4o-mini"); field(t, out, "allowed_models") != "sim-chat,gpt-4o-mini" {
		t.Fatalf("allowlist:\n%s", out)
	}
	out := admin(t, "agent", "create", org, "--name", "Help desk", "--model", "sim-chat",
		"--system-prompt", "You are Acme's IT help desk.", "--temperature", "0.2")
	agent := field(t, out, "id")
	if field(t, out, "temperature") != "0.2" || field(t, out, "published") != "true" {
		t.Fatalf("agent:\n%s", out)
	}
	out = admin(t, "agent", "issue-key", agent, "--name", "intranet bot", "--spend-cap", "50")
	keyID, key := field(t, out, "id"), field(t, out, "key")
	if field(t, out, "kind") != "agent" || field(t, out, "agent_id") != agent || field(t, out, "spend_cap") != "50" ||
		!strings.Contains(out, "The raw key is shown once here") {
		t.Fatalf("issued key:\n%s", out)
	}
	if st := chat(t, key); st != 200 {
		t.Fatalf("the agent key: %d", st)
	}
	if out := admin(t, "key", "get", keyID); field(t, out, "spent") == "0" || field(t, out, "spend_cap") != "50" {
		t.Fatalf("key get:\n%s", out)
	}

	// An employee asks; an admin approves (the key printed once) or rejects.
	req := field(t, admin(t, "key-request", "create", agent, "--requester", "ada@acme.example", "--note", "wiki bot"), "id")
	rej := field(t, admin(t, "key-request", "create", agent, "--requester", "bob@acme.example"), "id")
	if out := admin(t, "key-request", "list", org, "--status", "pending"); !strings.Contains(out, req) || !strings.Contains(out, rej) {
		t.Fatalf("pending:\n%s", out)
	}
	out = admin(t, "key-request", "approve", req, "--spend-cap", "20")
	if field(t, out, "status") != "approved" || !strings.Contains(out, "hand it to ada@acme.example now") {
		t.Fatalf("approve:\n%s", out)
	}
	if st := chat(t, field(t, out, "key")); st != 200 {
		t.Fatalf("the approved key: %d", st)
	}
	if out := admin(t, "key-request", "reject", rej); field(t, out, "status") != "rejected" {
		t.Fatalf("reject:\n%s", out)
	}
	var list struct{ Data []struct{ Status string } }
	if err := json.Unmarshal([]byte(admin(t, "key-request", "list", org, "--json")), &list); err != nil || len(list.Data) != 2 {
		t.Fatalf("list --json: %v %+v", err, list)
	}

	// Unpublished, the key is refused; published again, served; deleted,
	// refused for good.
	admin(t, "agent", "update", agent, "--unpublish")
	if st := chat(t, key); st != 403 {
		t.Fatalf("unpublished: %d", st)
	}
	admin(t, "agent", "update", agent, "--publish")
	if st := chat(t, key); st != 200 {
		t.Fatalf("published again: %d", st)
	}
	if out := admin(t, "agent", "list", org); !strings.Contains(out, "Help desk") {
		t.Fatalf("agent list:\n%s", out)
	}
	admin(t, "agent", "delete", agent)
	if st := chat(t, key); st != 403 {
		t.Fatalf("deleted: %d", st)
	}
	if out := admin(t, "agent", "get", agent); !strings.Contains(out, "deleted_at:") {
		t.Fatalf("a deleted agent:\n%s", out)
	}
}
