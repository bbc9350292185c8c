package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/audit"
	"github.com/tollgate-gw/tollgate/store/storetest"
)

func TestBooks(t *testing.T) {
	storetest.RunBooks(t, func(t *testing.T) store.Store { return openURL(t, testpg.Schema(t), Options{}) },
		func(t *testing.T, s store.Store) storetest.Tamperer { return &tamperer{t: t, s: s.(*Store)} })
}

// tamperer writes the tables directly, with the books' trigger off for
// the statement (the table's owner may; the store never does).
type tamperer struct {
	t *testing.T
	s *Store
}

func (x *tamperer) exec(sql string, args ...any) {
	x.t.Helper()
	ctx := context.Background()
	tx, err := x.s.pool.Begin(ctx)
	if err != nil {
		x.t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	book := strings.Contains(sql, "book")
	if book {
		if _, err := tx.Exec(ctx, `ALTER TABLE book DISABLE TRIGGER book_append_only`); err != nil {
			x.t.Fatal(err)
		}
	}
	tag, err := tx.Exec(ctx, sql, args...)
	if err == nil && tag.RowsAffected() != 1 {
		x.t.Fatalf("%s changed %d rows, want 1", sql, tag.RowsAffected())
	}
	if err == nil && book {
		_, err = tx.Exec(ctx, `ALTER TABLE book ENABLE TRIGGER book_append_only`)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		x.t.Fatal(err)
	}
}

func (x *tamperer) SetWallet(account string, balance, held money.Nano) {
	x.exec(`UPDATE wallets SET balance = $2, held = $3 WHERE account_id = $1`, account, int64(balance), int64(held))
}

func (x *tamperer) EditEntry(seq uint64, fn func(*store.BookEntry)) {
	var e store.BookEntry
	v, err := x.s.AuditView(x.t.Context())
	if err != nil {
		x.t.Fatal(err)
	}
	for got, err := range v.Entries(x.t.Context()) {
		if err != nil {
			x.t.Fatal(err)
		}
		if got.Seq == seq {
			e = got
		}
	}
	v.Close()
	fn(&e)
	x.exec(`UPDATE book SET kind = $2, account_id = $3, amount = $4, charge = $5, hold_id = $6, owner = $7 WHERE seq = $1`,
		int64(seq), e.Kind, e.AccountID, int64(e.Amount), int64(e.Charge), e.HoldID, e.Owner)
}

func (x *tamperer) DeleteEntry(seq uint64) {
	x.exec(`DELETE FROM book WHERE seq = $1`, int64(seq))
}

func (x *tamperer) AddEntry(e store.BookEntry) {
	x.exec(`INSERT INTO book (kind, account_id, amount, charge, hold_id, request_id, task_id, order_id, admin_token,
		user_id, ledger_id, log_id, owner, note, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		e.Kind, e.AccountID, int64(e.Amount), int64(e.Charge), e.HoldID, e.RequestID, e.TaskID, e.OrderID, e.AdminToken,
		e.UserID, int64(e.LedgerID), int64(e.LogID), e.Owner, e.Note, ns(e.At))
}

func (x *tamperer) SetRowCost(id uint64, cost money.Nano) {
	x.exec(`UPDATE logs SET cost = $2 WHERE id = $1`, int64(id), int64(cost))
}

func (x *tamperer) DeleteRow(id uint64) { x.exec(`DELETE FROM logs WHERE id = $1`, int64(id)) }

func (x *tamperer) DeleteHold(id string) { x.exec(`DELETE FROM holds WHERE id = $1`, id) }

// The books refuse every change but an insert.
func TestBooksAppendOnly(t *testing.T) {
	s := openURL(t, testpg.Schema(t), Options{})
	ctx := t.Context()
	if err := s.CreateAccount(ctx, store.Account{ID: "a", Status: store.AccountActive, CreatedAt: time.Now()}, money.Credits(1), ""); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`UPDATE book SET amount = 2`, `DELETE FROM book`, `TRUNCATE book`} {
		_, err := s.pool.Exec(ctx, sql)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the books' refusal", sql, err)
		}
	}
}

// A hold of an instance whose lease lapsed belongs to no live call: the
// audit names it until another instance's sweep releases it.
func TestBooksHoldOfALapsedInstance(t *testing.T) {
	url := testpg.Schema(t)
	a := openURL(t, url, Options{Instance: "gw-a"})
	b := openURL(t, url, Options{Instance: "gw-b"})
	ctx := t.Context()
	if err := a.CreateAccount(ctx, store.Account{ID: "acct", Status: store.AccountActive, CreatedAt: time.Now()}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PlaceHold(ctx, store.Hold{ID: "req-1", AccountID: "acct", Amount: money.Credits(2), SubmittedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Run(ctx, b, audit.Options{}); err != nil || !rep.OK {
		t.Fatalf("audit of another instance's live hold: %+v, %v", rep, err)
	}
	if err := a.Close(); err != nil { // the lease ends at once
		t.Fatal(err)
	}
	rep, err := audit.Run(ctx, b, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count != 1 || rep.ByRule[audit.RuleHoldNotLive] != 1 || rep.Violations[0].HoldID != "req-1" {
		t.Fatalf("audit once its instance is gone: %+v", rep)
	}
	// The audit reads the database alone, as `tollgate audit` does.
	r, err := OpenBooks(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rep2, err := audit.Run(ctx, r, audit.Options{}); err != nil || rep2.Count != 1 {
		t.Fatalf("audit of the database alone: %+v, %v", rep2, err)
	}
}

// An audit takes under 10 s per million log rows: billed calls seeded
// through the store (TOLLGATE_AUDIT_ROWS=1000000 for the full million),
// then audited in one snapshot.
func TestAuditSpeed(t *testing.T) {
	s := openURL(t, testpg.Schema(t), Options{})
	storetest.RunAuditSpeed(t, s, storetest.AuditRows(t, 20_000), storetest.Slowdown, func() time.Duration { return testpg.GroupCPU(testpg.Start(t).PID()) }, func(ctx context.Context, n int) error {
		return storetest.SeedBilled(ctx, s, n, 100, 16)
	})
}

// A database written before the books: migration 0007 starts them with
// each open hold and each wallet's balance, so an upgraded database
// audits clean, its older rows exempt; what follows is proved.
func TestBooksCarriedIntoAnOlderDatabase(t *testing.T) {
	url := testpg.Schema(t)
	s := openURL(t, url, Options{Instance: "gw-a"})
	ctx := t.Context()
	c := money.Credits
	mustDo := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	mustDo("account", s.CreateAccount(ctx, store.Account{ID: "acct", Status: store.AccountActive, CreatedAt: time.Now()}, c(10), ""))
	hold := func(id string, amount money.Nano) store.Hold {
		h := store.Hold{ID: id, AccountID: "acct", Amount: amount, SubmittedAt: time.Now()}
		_, err := s.PlaceHold(ctx, h)
		mustDo("hold "+id, err)
		return h
	}
	settle := func(h store.Hold, charge money.Nano) {
		row := &store.LogRow{AccountID: "acct", CreatedAt: time.Now(), SubmittedAt: h.SubmittedAt, Status: store.StatusSuccess,
			Model: "m", Cost: charge, RequestID: h.ID}
		mustDo("settle "+h.ID, s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: charge, Row: row}))
	}
	settle(hold("req-1", c(2)), money.MustParse("0.5"))
	open := hold("req-open", c(1))

	// The database as an older tollgate left it.
	for _, sql := range []string{`DROP TABLE book`, `DROP FUNCTION book_append_only()`,
		`ALTER TABLE ledger DROP COLUMN admin_token, DROP COLUMN user_id`, `DELETE FROM schema_migrations WHERE version = 7`} {
		_, err := s.pool.Exec(ctx, sql)
		mustDo(sql, err)
	}
	applied, err := Migrate(ctx, url, nil)
	if err != nil || len(applied) != 1 || applied[0] != "0007_books" {
		t.Fatalf("migrate: %v, %v", applied, err)
	}
	r, err := OpenBooks(ctx, url)
	mustDo("open the books", err)
	defer r.Close()
	rep, err := audit.Run(ctx, r, audit.Options{})
	if err != nil || !rep.OK || rep.Entries != 2 || rep.OpenHolds != 1 || rep.Rows != 1 {
		t.Fatalf("audit of the upgraded database: %+v, %v", rep, err)
	}

	// The moves made after the upgrade are proved, the carried hold's
	// settlement with them.
	settle(open, money.MustParse("0.25"))
	settle(hold("req-2", c(1)), money.MustParse("0.125"))
	rep, err = audit.Run(ctx, r, audit.Options{})
	if err != nil || !rep.OK || rep.Entries != 5 || rep.OpenHolds != 0 || rep.Rows != 3 {
		t.Fatalf("audit after the upgrade: %+v, %v", rep, err)
	}
	// A row after the upgrade costing more than its settlement is named.
	_, err = s.pool.Exec(ctx, `UPDATE logs SET cost = cost + 1 WHERE request_id = 'req-2'`)
	mustDo("tamper", err)
	if rep, err = audit.Run(ctx, r, audit.Options{}); err != nil || rep.ByRule[audit.RuleRowCost] != 1 || rep.Count != 1 {
		t.Fatalf("audit of a row changed after the upgrade: %+v, %v", rep, err)
	}
}
