package integration

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// An agent's one retrieval round over its knowledge bases (PRODUCT.md §7):
// the latest user message searched within what its organization may read,
// the top pages within 6,000 characters in a system message just before
// that message, their ids in the row's technical view; a base the
// organization can no longer read is 403.
func TestOrgAgentKnowledge(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: orgAgentsConfig(up.URL, nil)})
	acct := g.Account("")
	other := g.Account("")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	g.Admin("PUT", "/kbs/handbook", map[string]any{"name": "IT handbook", "readers": []string{acct}}, nil)
	g.Admin("POST", "/kbs/handbook/pages", map[string]any{"pages": []map[string]any{
		{"id": "vpn-reset", "title": "VPN token reset", "summary": "Resetting a VPN token",
			"body": "To reset your VPN token, open the self-service portal and choose Reset token."},
		{"id": "printer", "title": "Printers", "body": "Printers are on every floor."},
		{"id": "vpn-long", "title": "VPN token history", "body": "VPN token " + strings.Repeat("lorem ipsum ", 1000)},
	}}, nil)
	g.Admin("PUT", "/kbs/finance", map[string]any{"name": "Finance", "readers": []string{other}}, nil)

	agentID := newOrgAgent(t, g, acct, map[string]any{"knowledge_bases": []string{"handbook"}})
	keyID, key := issueAgentKey(t, g, agentID, nil)
	client := openaiClient(g, key)
	conversation := func(latest string) []openai.ChatCompletionMessageParamUnion {
		return []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Hello, printers? [kb-first]"),
			openai.AssistantMessage("Hello, how can I help?"),
			openai.UserMessage(latest),
		}
	}
	// wantPages checks the upstream got the pages as a system message right
	// before the latest user message, within the budget.
	wantPages := func(t *testing.T, marker string) {
		t.Helper()
		req := upstreamCall(t, up, marker)
		msgs := req.Get("messages").Array()
		if len(msgs) != 5 || msgs[0].Get("content").String() != "You are Ada, the help desk of Acme." ||
			msgs[3].Get("role").String() != "system" || msgs[4].Get("role").String() != "user" {
			t.Fatalf("upstream messages: %s", req.Get("messages").Raw)
		}
		kb := msgs[3].Get("content").String()
		if !strings.Contains(kb, "## VPN token reset (vpn-reset)\nTo reset your VPN token, open the self-service portal") {
			t.Fatalf("the retrieved page is not in the knowledge message:\n%s", kb)
		}
		// The long page is cut so the pages fill the 6,000 characters
		// (headings and bodies; the line ends around them aside).
		pages := kb[strings.Index(kb, "\n## ")+1:]
		k := strings.Count("\n"+pages, "\n## ") // each page ends with a line end, and a blank line parts two
		if n := utf8.RuneCountInString(pages) - (2*k - 1); !strings.Contains(kb, "(vpn-long)") || n != 6000 {
			t.Fatalf("the pages take %d characters, want 6000:\n%s", n, kb)
		}
	}

	t.Run("non-streaming", func(t *testing.T) {
		if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "x",
			Messages: conversation("How do I reset my VPN token? [kb-1]")}); err != nil {
			t.Fatal(err)
		}
		wantPages(t, "[kb-1]")
	})
	t.Run("streaming", func(t *testing.T) {
		s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "x",
			Messages: conversation("VPN token reset, please. [kb-2]")})
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		wantPages(t, "[kb-2]")
	})
	t.Run("the page ids are in the row's technical view", func(t *testing.T) {
		_, reader := g.Key(acct, map[string]any{"name": "reader", "logs_account_scope": true})
		p := getLogs(t, g, reader, q("scope", "account", "period", "all", "key_id", keyID, "status", "success", "limit", "1"))
		c := do(t, "GET", g.URL+"/v1/logs/"+idStr(uint64(p.Data[0]["id"].(float64)))+"?scope=account", bearer(reader), "")
		if c.Status != 200 || !strings.Contains(string(c.Body), `"k":"knowledge_pages","v":"vpn-reset`) {
			t.Fatalf("technical view: %d %s", c.Status, c.Body)
		}
	})
	t.Run("a base the organization cannot read is 403", func(t *testing.T) {
		for _, kbs := range [][]string{{"handbook", "finance"}, {"no-such-base"}} {
			a := newOrgAgent(t, g, acct, map[string]any{"knowledge_bases": kbs})
			_, k := issueAgentKey(t, g, a, nil)
			c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(k), chatBody("x", "VPN?", ""))
			wantErr(t, c, 403, "permission_denied", "permission_error")
		}
		// Opened to the organization, the base serves; closed again, 403.
		a := newOrgAgent(t, g, acct, map[string]any{"knowledge_bases": []string{"finance"}})
		_, k := issueAgentKey(t, g, a, nil)
		g.Admin("PUT", "/kbs/finance", map[string]any{"readers": []string{other, acct}}, nil)
		if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(k), chatBody("x", "VPN?", "")); c.Status != 200 {
			t.Fatalf("readable: %d %s", c.Status, c.Body)
		}
		g.Admin("PUT", "/kbs/finance", map[string]any{"readers": []string{other}}, nil)
		wantErr(t, do(t, "POST", g.URL+"/v1/chat/completions", bearer(k), chatBody("x", "VPN?", "")), 403, "permission_denied", "permission_error")
	})
	t.Run("the knowledge base routes are refused to agent keys", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/api/v1/ext/wiki/search?q=vpn&kb_id=handbook", ""},
			{"GET", "/api/v1/ext/wiki/kbs", ""},
			{"GET", "/api/v1/ext/wiki/pages/vpn-reset?kb_id=handbook", ""},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		} {
			c := do(t, r.method, g.URL+r.path, map[string]string{"Authorization": "Bearer " + key, "Accept": "application/json, text/event-stream"}, r.body)
			wantErr(t, c, 403, "permission_denied", "permission_error")
		}
	})
}
