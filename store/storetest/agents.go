package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// RunAgents is the suite of the Agents role: agents (soft-deleted), key
// requests and their answers, the organization allowlist, and the spend
// cap of a key as Wallets.PlaceHold enforces it (the cap comes with the
// agents; a backend adding this role adds it to its holds).
func RunAgents(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("agents", func(t *testing.T) { t.Parallel(); testAgents(t, open(t)) })
	t.Run("key requests", func(t *testing.T) { t.Parallel(); testKeyRequests(t, open(t)) })
	t.Run("concurrent approvals", func(t *testing.T) { t.Parallel(); testConcurrentApprovals(t, open(t)) })
	t.Run("organization", func(t *testing.T) { t.Parallel(); testOrganization(t, open(t)) })
	t.Run("agent key fields", func(t *testing.T) { t.Parallel(); testAgentKeyFields(t, open(t)) })
	t.Run("spend cap", func(t *testing.T) { t.Parallel(); testSpendCap(t, open(t)) })
	t.Run("spend cap sees recent charges", func(t *testing.T) { t.Parallel(); testSpendCapRecentCharges(t, open(t)) })
	t.Run("concurrent spend cap", func(t *testing.T) { t.Parallel(); testConcurrentSpendCap(t, open(t)) })
}

func agent(account, id string, n int) store.Agent {
	temp := 0.25
	return store.Agent{
		ID: id, AccountID: account, Name: "agent " + id, SystemPrompt: "You are " + id + ".",
		Model: "model-x", Temperature: &temp, KnowledgeBases: []string{"kb-1", "kb-2"},
		WebSearch: true, Published: true,
		CreatedAt: t0.Add(time.Duration(n) * time.Minute), UpdatedAt: t0.Add(time.Duration(n) * time.Minute),
	}
}

func normAgent(a store.Agent) store.Agent {
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	if a.DeletedAt != nil {
		d := a.DeletedAt.UTC()
		a.DeletedAt = &d
	}
	return a
}

func agentIDs(as []store.Agent) []string {
	ids := []string{}
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}

func testAgents(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	newAccount(t, s, "b", 0)
	plain := agent("a", "ag-0", 0)
	plain.Temperature, plain.KnowledgeBases, plain.WebSearch, plain.Published = nil, nil, false, false
	plain.ImageGeneration = true
	agents := []store.Agent{agent("a", "ag-2", 2), plain, agent("b", "ag-1", 1)}
	for _, a := range agents {
		mustNil(t, "create "+a.ID, s.CreateAgent(ctx, a))
	}
	for _, a := range agents {
		got, err := s.GetAgent(ctx, a.ID)
		mustNil(t, "get "+a.ID, err)
		same(t, "agent "+a.ID, normAgent(got), a)
	}
	list, err := s.ListAgents(ctx, "a")
	mustNil(t, "list", err)
	same(t, "agents of a, oldest first", agentIDs(list), []string{"ag-0", "ag-2"})

	mustIs(t, "duplicate id", s.CreateAgent(ctx, agent("b", "ag-2", 5)), store.ErrExists)
	mustIs(t, "unknown account", s.CreateAgent(ctx, agent("nope", "ag-9", 9)), store.ErrNotFound)
	_, err = s.GetAgent(ctx, "nope")
	mustIs(t, "get unknown", err, store.ErrNotFound)
	mustIs(t, "update unknown", s.UpdateAgent(ctx, agent("a", "nope", 0)), store.ErrNotFound)

	// An update replaces the agent but keeps its account and creation.
	up := agent("b", "ag-2", 7)
	up.CreatedAt, up.UpdatedAt = t0.Add(time.Hour), t0.Add(2*time.Hour)
	up.Model, up.SystemPrompt, up.Published = "model-y", "Be brief.", false
	mustNil(t, "update", s.UpdateAgent(ctx, up))
	got, err := s.GetAgent(ctx, "ag-2")
	mustNil(t, "get updated", err)
	want := up
	want.AccountID, want.CreatedAt = "a", agents[0].CreatedAt
	same(t, "updated agent", normAgent(got), want)

	// Soft delete: still readable with DeletedAt, gone from the list,
	// never updated or deleted again.
	at := t0.Add(3 * time.Hour)
	mustNil(t, "delete", s.DeleteAgent(ctx, "ag-0", at))
	got, err = s.GetAgent(ctx, "ag-0")
	mustNil(t, "get deleted", err)
	if got.DeletedAt == nil || !got.DeletedAt.Equal(at) {
		t.Fatalf("deleted agent's DeletedAt = %v, want %v", got.DeletedAt, at)
	}
	list, err = s.ListAgents(ctx, "a")
	mustNil(t, "list after delete", err)
	same(t, "agents of a after delete", agentIDs(list), []string{"ag-2"})
	mustIs(t, "delete twice", s.DeleteAgent(ctx, "ag-0", at), store.ErrNotFound)
	mustIs(t, "delete unknown", s.DeleteAgent(ctx, "nope", at), store.ErrNotFound)
	mustIs(t, "update deleted", s.UpdateAgent(ctx, plain), store.ErrNotFound)
	list, err = s.ListAgents(ctx, "nobody")
	mustNil(t, "list of an account without agents", err)
	if len(list) != 0 {
		t.Fatalf("agents of an unknown account: %+v", list)
	}
}

func keyRequest(agentID, id string, n int) store.KeyRequest {
	return store.KeyRequest{ID: id, AgentID: agentID, Requester: "emp-" + id, Note: "for " + id,
		Status: store.KeyRequestPending, CreatedAt: t0.Add(time.Duration(n) * time.Minute)}
}

func agentKeyOf(account, agentID, id string, n int, limit *money.Nano) store.Key {
	k := key(account, id, n)
	k.Kind, k.AgentID, k.SpendCap = store.KindAgent, agentID, limit
	return k
}

func normRequest(r store.KeyRequest) store.KeyRequest {
	r.CreatedAt = r.CreatedAt.UTC()
	if r.DecidedAt != nil {
		d := r.DecidedAt.UTC()
		r.DecidedAt = &d
	}
	return r
}

func testKeyRequests(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	newAccount(t, s, "b", 0)
	mustNil(t, "agent", s.CreateAgent(ctx, agent("a", "ag-a", 0)))
	mustNil(t, "agent", s.CreateAgent(ctx, agent("b", "ag-b", 0)))
	mustNil(t, "agent", s.CreateAgent(ctx, agent("a", "ag-gone", 0)))
	mustNil(t, "delete agent", s.DeleteAgent(ctx, "ag-gone", t0))

	// The request takes its account from the agent.
	reqs := []store.KeyRequest{keyRequest("ag-a", "r2", 2), keyRequest("ag-a", "r1", 1), keyRequest("ag-b", "r3", 3)}
	for _, r := range reqs {
		mustNil(t, "request "+r.ID, s.CreateKeyRequest(ctx, r))
	}
	got, err := s.GetKeyRequest(ctx, "r1")
	mustNil(t, "get", err)
	want := reqs[1]
	want.AccountID = "a"
	same(t, "request", normRequest(got), want)
	list, err := s.ListKeyRequests(ctx, "a")
	mustNil(t, "list", err)
	if len(list) != 2 || list[0].ID != "r1" || list[1].ID != "r2" {
		t.Fatalf("requests of a, oldest first: %+v", list)
	}
	mustIs(t, "duplicate", s.CreateKeyRequest(ctx, keyRequest("ag-a", "r1", 9)), store.ErrExists)
	mustIs(t, "unknown agent", s.CreateKeyRequest(ctx, keyRequest("nope", "r8", 8)), store.ErrNotFound)
	mustIs(t, "deleted agent", s.CreateKeyRequest(ctx, keyRequest("ag-gone", "r7", 7)), store.ErrNotFound)
	_, err = s.GetKeyRequest(ctx, "nope")
	mustIs(t, "get unknown", err, store.ErrNotFound)

	// Approval issues the key and answers the request in one step.
	limit := cr(25)
	k := agentKeyOf("a", "ag-a", "k-r1", 1, &limit)
	at := t0.Add(time.Hour)
	approved, err := s.ApproveKeyRequest(ctx, "r1", k, at)
	mustNil(t, "approve", err)
	want.Status, want.KeyID, want.DecidedAt = store.KeyRequestApproved, k.ID, &at
	same(t, "approved", normRequest(approved), want)
	got, err = s.GetKeyRequest(ctx, "r1")
	mustNil(t, "get approved", err)
	same(t, "approved, read back", normRequest(got), want)
	gotKey, err := s.KeyByHash(ctx, k.Hash)
	mustNil(t, "issued key by hash", err)
	same(t, "issued key", normKey(gotKey), k)
	keys, err := s.ListKeys(ctx, "a")
	mustNil(t, "keys of a", err)
	if len(keys) != 1 || keys[0].ID != k.ID {
		t.Fatalf("keys of a after approval: %+v", keys)
	}

	_, err = s.ApproveKeyRequest(ctx, "r1", agentKeyOf("a", "ag-a", "k-again", 5, nil), at)
	mustIs(t, "approve twice", err, store.ErrDecided)
	_, err = s.RejectKeyRequest(ctx, "r1", at)
	mustIs(t, "reject approved", err, store.ErrDecided)
	if _, err := s.GetKey(ctx, "k-again"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused approval issued its key: %v", err)
	}
	_, err = s.ApproveKeyRequest(ctx, "r2", agentKeyOf("a", "ag-a", "k-dup", 1, nil), at)
	mustIs(t, "approve with a taken hash", err, store.ErrExists)
	_, err = s.ApproveKeyRequest(ctx, "nope", agentKeyOf("a", "ag-a", "k-x", 6, nil), at)
	mustIs(t, "approve unknown", err, store.ErrNotFound)

	rejected, err := s.RejectKeyRequest(ctx, "r2", at)
	mustNil(t, "reject", err)
	if rejected.Status != store.KeyRequestRejected || rejected.KeyID != "" || rejected.DecidedAt == nil {
		t.Fatalf("rejected request: %+v", rejected)
	}
	_, err = s.RejectKeyRequest(ctx, "r2", at)
	mustIs(t, "reject twice", err, store.ErrDecided)
	_, err = s.ApproveKeyRequest(ctx, "r2", agentKeyOf("a", "ag-a", "k-r2", 7, nil), at)
	mustIs(t, "approve rejected", err, store.ErrDecided)
	_, err = s.RejectKeyRequest(ctx, "nope", at)
	mustIs(t, "reject unknown", err, store.ErrNotFound)
}

// Of concurrent answers to one request exactly one wins, and exactly one
// key is issued.
func testConcurrentApprovals(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	mustNil(t, "agent", s.CreateAgent(ctx, agent("a", "ag", 0)))
	mustNil(t, "request", s.CreateKeyRequest(ctx, keyRequest("ag", "r", 0)))
	const n = 16
	errs := run(n, func(i int) error {
		var err error
		if i%2 == 0 {
			_, err = s.ApproveKeyRequest(ctx, "r", agentKeyOf("a", "ag", fmt.Sprintf("k-%d", i), 100+i, nil), t0)
		} else {
			_, err = s.RejectKeyRequest(ctx, "r", t0)
		}
		return err
	})
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrDecided):
			t.Fatalf("answer: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d answers to one request succeeded, want 1", won)
	}
	r, err := s.GetKeyRequest(ctx, "r")
	mustNil(t, "get", err)
	keys, err := s.ListKeys(ctx, "a")
	mustNil(t, "keys", err)
	switch r.Status {
	case store.KeyRequestApproved:
		if len(keys) != 1 || keys[0].ID != r.KeyID {
			t.Fatalf("approved with key %s, keys %+v", r.KeyID, keys)
		}
	case store.KeyRequestRejected:
		if len(keys) != 0 {
			t.Fatalf("rejected, yet keys were issued: %+v", keys)
		}
	default:
		t.Fatalf("status %q after the answers", r.Status)
	}
}

func testOrganization(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	o, err := s.GetOrganization(ctx, "a")
	mustNil(t, "get default", err)
	same(t, "default policy", o, store.Organization{AccountID: "a"})
	for _, want := range []store.Organization{
		{AccountID: "a", RestrictModels: true, AllowedModels: []string{"m-1", "m-2"}},
		{AccountID: "a", RestrictModels: true}, // denies every model
		{AccountID: "a"},
	} {
		mustNil(t, "set", s.SetOrganization(ctx, want))
		got, err := s.GetOrganization(ctx, "a")
		mustNil(t, "get", err)
		if len(got.AllowedModels) == 0 {
			got.AllowedModels = nil
		}
		same(t, "policy", got, want)
	}
	_, err = s.GetOrganization(ctx, "nope")
	mustIs(t, "get unknown", err, store.ErrNotFound)
	mustIs(t, "set unknown", s.SetOrganization(ctx, store.Organization{AccountID: "nope"}), store.ErrNotFound)
}

// An agent key's binding and spend cap survive every write of the key.
func testAgentKeyFields(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	limit := money.MustParse("12.345678901")
	k := agentKeyOf("a", "ag", "k1", 1, &limit)
	mustNil(t, "create", s.CreateKey(ctx, k))
	got, err := s.GetKey(ctx, k.ID)
	mustNil(t, "get", err)
	same(t, "agent key", normKey(got), k)
	zero := money.Nano(0)
	k.SpendCap = &zero
	mustNil(t, "update", s.UpdateKey(ctx, k))
	got, err = s.KeyByHash(ctx, k.Hash)
	mustNil(t, "by hash", err)
	same(t, "a cap of 0", normKey(got), k)
	k.SpendCap = nil
	mustNil(t, "update", s.UpdateKey(ctx, k))
	got, err = s.GetKey(ctx, k.ID)
	mustNil(t, "get", err)
	same(t, "no cap", normKey(got), k)
}

func capped(h store.Hold, keyID string, limit *money.Nano) store.Hold {
	h.KeyID, h.SpendCap = keyID, limit
	return h
}

func testSpendCap(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(1000))
	limit := cr(10)
	place := func(id string, amount money.Nano, cap *money.Nano) error {
		_, err := s.PlaceHold(ctx, capped(hold("a", id, amount), "k", cap))
		return err
	}
	mustNil(t, "6 of 10", place("h1", cr(6), &limit))
	mustIs(t, "5 more", place("h2", cr(5), &limit), store.ErrSpendCap)
	// A hold placed without the cap still counts against it.
	mustNil(t, "an uncapped hold of the key", place("h3", cr(1), nil))
	mustIs(t, "4 more", place("h4", cr(4), &limit), store.ErrSpendCap)
	mustNil(t, "exactly the rest", place("h5", cr(3), &limit))
	mustIs(t, "a nano more", place("h6", 1, &limit), store.ErrSpendCap)
	wantWallet(t, s, "a", cr(1000), cr(10))

	// Settled: the charge is spent, the rest of the hold freed.
	settle := func(id string, amount, charge money.Nano) {
		t.Helper()
		mustNil(t, "settle "+id, s.Settle(ctx, store.Settlement{HoldID: id, Charge: charge,
			Row: rowFor(capped(hold("a", id, amount), "k", nil), charge)}))
	}
	settle("h1", cr(6), cr(2))
	mustNil(t, "the freed 4", place("h7", cr(4), &limit))
	mustIs(t, "then nothing", place("h8", 1, &limit), store.ErrSpendCap)
	settle("h3", cr(1), 0)
	settle("h5", cr(3), cr(3))
	settle("h7", cr(4), cr(1))
	if n := keyUsage(t, s, "k"); n != cr(6) {
		t.Fatalf("key usage %s, want 6", n)
	}
	mustIs(t, "5 of the 4 left", place("h9", cr(5), &limit), store.ErrSpendCap)
	mustNil(t, "the 4 left", place("h10", cr(4), &limit))
	// The cap is the hold's: a raised cap applies at once, other keys and
	// the wallet are untouched by it.
	higher := cr(100)
	mustNil(t, "a raised cap", place("h11", cr(50), &higher))
	_, err := s.PlaceHold(ctx, capped(hold("a", "other", cr(900)), "k-other", &limit))
	mustIs(t, "another key's cap", err, store.ErrSpendCap)
	// 946 available: beyond both the wallet and the cap, the wallet answers.
	_, err = s.PlaceHold(ctx, capped(hold("a", "wallet", cr(950)), "k-other", &limit))
	mustIs(t, "the wallet first", err, store.ErrInsufficient)
	zero := money.Nano(0)
	mustIs(t, "a cap of 0", place("h12", 1, &zero), store.ErrSpendCap)
	over := money.Max
	mustNil(t, "the largest cap", place("h13", cr(1), &over))
}

// A capped hold sees the key's charges settled a moment before, however
// the backend stores them.
func testSpendCapRecentCharges(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(1000))
	for i := range 20 {
		h := capped(hold("a", fmt.Sprintf("h-%d", i), cr(1)), "k", nil)
		_, err := s.PlaceHold(ctx, h)
		mustNil(t, "hold", err)
		mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(1), Row: rowFor(h, cr(1))}))
	}
	limit := cr(25)
	_, err := s.PlaceHold(ctx, capped(hold("a", "over", cr(6)), "k", &limit))
	mustIs(t, "6 of the 5 left", err, store.ErrSpendCap)
	_, err = s.PlaceHold(ctx, capped(hold("a", "fits", cr(5)), "k", &limit))
	mustNil(t, "the 5 left", err)
}

// Of concurrent capped holds exactly those that fit pass, with settlements
// running beside them.
func testConcurrentSpendCap(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100000))
	limit := cr(100)
	// Settled beforehand: 2 spent, 3 held by another hold of the key.
	first := capped(hold("a", "first", cr(5)), "k", &limit)
	_, err := s.PlaceHold(ctx, first)
	mustNil(t, "first", err)
	mustNil(t, "settle first", s.Settle(ctx, store.Settlement{HoldID: first.ID, Charge: cr(2), Row: rowFor(first, cr(2))}))
	_, err = s.PlaceHold(ctx, capped(hold("a", "open", cr(3)), "k", nil))
	mustNil(t, "open", err)
	errs := run(workers, func(i int) error {
		h := capped(hold("a", fmt.Sprintf("h-%d", i), cr(7)), "k", &limit)
		if _, err := s.PlaceHold(ctx, h); err != nil {
			return err
		}
		if i%2 == 0 {
			// A settlement at the hold's full amount leaves the
			// remaining cap as the hold did.
			return s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(7), Row: rowFor(h, cr(7))})
		}
		return nil
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrSpendCap):
			t.Fatalf("place hold: %v", err)
		}
	}
	if ok != 13 { // (100 - 2 - 3) / 7
		t.Fatalf("%d holds of 7 fit the 95 left of the cap, want 13", ok)
	}
	_, err = s.PlaceHold(ctx, capped(hold("a", "last", cr(4)), "k", &limit))
	mustNil(t, "the 4 left", err)
	_, err = s.PlaceHold(ctx, capped(hold("a", "none", 1), "k", &limit))
	mustIs(t, "nothing left", err, store.ErrSpendCap)
}
