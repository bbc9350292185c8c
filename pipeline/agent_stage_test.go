package pipeline

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// pages is a Retriever over a fixed set of pages: a base per account
// readers list, every page of a base matching every query.
type pages struct {
	readers map[string][]string // kb id -> accounts
	byKB    map[string][]RetrievedPage
	queries []string
}

func (p *pages) Readable(_ context.Context, account, kb string) (bool, error) {
	r, ok := p.readers[kb]
	return ok && (slices.Contains(r, account) || slices.Contains(r, "*")), nil
}

func (p *pages) Retrieve(_ context.Context, _ string, kbs []string, q string, limit int) ([]RetrievedPage, error) {
	p.queries = append(p.queries, q)
	var out []RetrievedPage
	for _, kb := range kbs {
		out = append(out, p.byKB[kb]...)
	}
	return out[:min(len(out), limit)], nil
}

func TestAgentStage(t *testing.T) {
	ctx := context.Background()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	for _, id := range []string{"org-a", "org-b"} {
		if err := st.CreateAccount(ctx, store.Account{ID: id, Name: id, Status: store.AccountActive, CreatedAt: now}, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	agent := func(id, account string, kbs ...string) {
		a := store.Agent{ID: id, AccountID: account, Name: id, SystemPrompt: "Be " + id + ".", Model: "m", KnowledgeBases: kbs,
			Published: true, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	agent("plain", "org-a")
	agent("foreign", "org-b")
	agent("kb", "org-a", "hr", "it")
	agent("locked-out", "org-a", "hr", "finance")
	kb := &pages{
		readers: map[string][]string{"hr": {"org-a"}, "it": {"*"}, "finance": {"org-b"}},
		byKB: map[string][]RetrievedPage{
			"hr": {{ID: "leave", KBID: "hr", Title: "Leave", Body: "25 days."}},
			"it": {{ID: "vpn", KBID: "it", Title: "VPN", Body: "Use the VPN."}},
		},
	}
	cfg := &config.Config{Models: []config.Model{{ID: "m", Family: "chat"}}}
	s := &agentStage{cfg: cfg, store: st, kb: kb}
	serve := func(s *agentStage, agentID string) (*Call, error) {
		k := &store.Key{ID: "k", AccountID: "org-a", Kind: store.KindAgent, AgentID: agentID}
		c := &Call{Kind: KindChat, Protocol: protocol.OpenAIChat, Key: k,
			Request: httptest.NewRequest("POST", "/v1/chat/completions", nil),
			Body:    []byte(`{"messages":[{"role":"user","content":"old question"},{"role":"assistant","content":"ok"},{"role":"user","content":"How many days of leave?"}]}`)}
		return c, s.Serve(ctx, c)
	}
	wantDenied := func(t *testing.T, err error, msg string) {
		t.Helper()
		e := apierr.As(err)
		if err == nil || e.Status != 403 || e.Code != apierr.PermissionDenied || !strings.Contains(e.Message, msg) {
			t.Fatalf("err %v, want 403 permission_denied about %q", err, msg)
		}
	}

	t.Run("an agent of another organization", func(t *testing.T) {
		_, err := serve(s, "foreign")
		wantDenied(t, err, "another organization")
	})
	t.Run("an agent that does not exist", func(t *testing.T) {
		_, err := serve(s, "nope")
		wantDenied(t, err, "does not exist")
	})
	t.Run("a base the organization cannot read", func(t *testing.T) {
		_, err := serve(s, "locked-out")
		wantDenied(t, err, "'finance'")
	})
	t.Run("no knowledge base on the gateway", func(t *testing.T) {
		_, err := serve(&agentStage{cfg: cfg, store: st}, "kb")
		wantDenied(t, err, "knowledge")
		if _, err := serve(&agentStage{cfg: cfg, store: st}, "plain"); err != nil {
			t.Fatalf("an agent without bases: %v", err)
		}
	})
	t.Run("one retrieval round", func(t *testing.T) {
		c, err := serve(s, "kb")
		if err != nil {
			t.Fatal(err)
		}
		if q := kb.queries[len(kb.queries)-1]; q != "How many days of leave?" {
			t.Fatalf("searched %q, want the latest user message", q)
		}
		if !slices.Equal(c.AgentPages, []string{"leave", "vpn"}) {
			t.Fatalf("pages %v", c.AgentPages)
		}
		msgs := gjson.GetBytes(c.Body, "messages").Array()
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.Get("role").String())
		}
		if strings.Join(roles, ",") != "system,user,assistant,system,user" ||
			!strings.Contains(msgs[3].Get("content").String(), "## Leave (leave)\n25 days.") {
			t.Fatalf("messages %s", gjson.GetBytes(c.Body, "messages").Raw)
		}
		if string(c.ClientBody) == string(c.Body) || c.ModelID != "m" {
			t.Fatal("the client body was not kept, or the model not named")
		}
	})
}
