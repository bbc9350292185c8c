package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Money moves are single statements (a statement is its own transaction):
// one round trip each. The wallet row's checks (migrations/0001_init.sql)
// refuse any move that would take an amount out of money's range; the
// statement then fails whole and nothing changes.

// CreateAccount writes the account, its wallet and the opening ledger
// entry with its book entry, in one statement.
func (s *Store) CreateAccount(ctx context.Context, a store.Account, initialCredit money.Nano, note string) error {
	if err := checkID("account", a.ID); err != nil {
		return err
	}
	if !initialCredit.Valid() {
		return store.ErrOutOfRange
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	c := store.CauseOf(ctx)
	_, err := s.pool.Exec(ctx, `
		WITH a AS (
			INSERT INTO accounts (id, name, status, created_at, rpm, concurrency)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id
		), w AS (
			INSERT INTO wallets (account_id, balance, held) SELECT id, $7, 0 FROM a
		), l AS (
			INSERT INTO ledger (account_id, amount, note, created_at, admin_token, user_id)
			SELECT id, $7, $8, $9, $10, $11 FROM a WHERE $7 <> 0
			RETURNING id, account_id
		)
		INSERT INTO book (kind, account_id, amount, ledger_id, note, admin_token, user_id, created_at)
		SELECT 'credit', account_id, $7, id, $8, $10, $11, $9 FROM l`,
		a.ID, txt(a.Name), txt(a.Status), ns(a.CreatedAt), a.RPM, a.Concurrency,
		int64(initialCredit), txt(note), ns(time.Now()), txt(c.AdminToken), txt(c.UserID))
	return s.fail(err)
}

// GetWallet reads an account's wallet.
func (s *Store) GetWallet(ctx context.Context, accountID string) (store.Wallet, error) {
	if err := s.enter(ctx); err != nil {
		return store.Wallet{}, err
	}
	w := store.Wallet{AccountID: accountID}
	if !validID(accountID) {
		return w, store.ErrNotFound
	}
	err := s.pool.QueryRow(ctx, `SELECT balance, held FROM wallets WHERE account_id = $1`, accountID).
		Scan((*int64)(&w.Balance), (*int64)(&w.Held))
	return w, s.fail(err)
}

// creditSQL is the wallet's one credit path, an operator's credit or a
// top-up's: w adds $2 to the balance of the account src names, l writes
// its ledger entry ($3 note, $4 time) naming src's order (” for none)
// and cause (src's admin_token and user_id), b its book entry.
const creditSQL = `w AS (
		UPDATE wallets SET balance = balance + $2 FROM src WHERE wallets.account_id = src.account_id
		RETURNING balance, held
	), l AS (
		INSERT INTO ledger (account_id, amount, note, created_at, order_id, admin_token, user_id)
		SELECT src.account_id, $2, $3, $4, src.order_id, src.admin_token, src.user_id FROM src, w
		RETURNING id, account_id, order_id, admin_token, user_id
	), b AS (
		INSERT INTO book (kind, account_id, amount, ledger_id, order_id, admin_token, user_id, note, created_at)
		SELECT 'credit', account_id, $2, id, order_id, admin_token, user_id, $3, $4 FROM l
	)`

// Credit adds amount (negative for a correction) to the balance, with its
// ledger entry, in one statement.
func (s *Store) Credit(ctx context.Context, accountID string, amount money.Nano, note string) (store.Wallet, error) {
	if err := checkID("account", accountID); err != nil {
		return store.Wallet{}, err
	}
	if !amount.Valid() {
		return store.Wallet{}, store.ErrOutOfRange
	}
	if err := s.enter(ctx); err != nil {
		return store.Wallet{}, err
	}
	w := store.Wallet{AccountID: accountID}
	c := store.CauseOf(ctx)
	err := s.pool.QueryRow(ctx, `
		WITH src AS (SELECT $1::text AS account_id, ''::text AS order_id, $5::text AS admin_token, $6::text AS user_id), `+creditSQL+`
		SELECT balance, held FROM w`,
		accountID, int64(amount), txt(note), ns(time.Now()), txt(c.AdminToken), txt(c.UserID)).Scan((*int64)(&w.Balance), (*int64)(&w.Held))
	return w, s.fail(err)
}

// PlaceHold reserves h.Amount in one guarded update: the wallet's
// available balance must cover it, and this instance's lease must run
// (a hold lives as long as its owner's lease). Nothing else decides.
func (s *Store) PlaceHold(ctx context.Context, h store.Hold) (store.Wallet, error) {
	if err := errors.Join(checkID("hold", h.ID), checkID("account", h.AccountID)); err != nil {
		return store.Wallet{}, err
	}
	if h.Amount < 0 {
		return store.Wallet{}, fmt.Errorf("pgstore: negative hold %s", h.Amount)
	}
	if err := s.enter(ctx); err != nil {
		return store.Wallet{}, err
	}
	if h.SpendCap != nil {
		return s.placeCapped(ctx, h)
	}
	w := store.Wallet{AccountID: h.AccountID}
	err := s.pool.QueryRow(ctx, `
		WITH w AS (
			UPDATE wallets SET held = held + $2
			WHERE account_id = $1 AND balance - held >= $2
			  AND EXISTS (SELECT 1 FROM instances WHERE id = $11 AND lease_until > now())
			RETURNING balance, held
		), h AS (
			INSERT INTO holds (id, account_id, key_id, key_name, key_prefix, model, unit_type, amount,
			                   submitted_at, task_id, owner)
			SELECT $3, $1, $4, $5, $6, $7, $8, $2, $9, $10, $11 FROM w
		), b AS (
			`+holdBookSQL+` FROM w
		)
		SELECT balance, held FROM w`,
		h.AccountID, int64(h.Amount), h.ID, txt(h.KeyID), txt(h.KeyName), txt(h.KeyPrefix), txt(h.Model),
		txt(h.UnitType), ns(h.SubmittedAt), txt(h.TaskID), s.instance).Scan((*int64)(&w.Balance), (*int64)(&w.Held))
	if errors.Is(err, pgx.ErrNoRows) {
		return w, s.holdRefused(ctx, h.AccountID)
	}
	err = s.fail(err)
	s.doubt(h.ID, err)
	return w, err
}

// holdBookSQL writes a hold's book entry from PlaceHold's parameters ($1
// account, $2 amount, $3 hold, $9 submitted, $10 task, $11 instance);
// its FROM clause follows.
const holdBookSQL = `INSERT INTO book (kind, account_id, amount, hold_id, request_id, task_id, owner, created_at)
	SELECT 'hold', $1::text, $2::bigint, $3::text, $3::text, $10::text, $11::text, $9::bigint`

// reserveSQL is the wallet's guarded update: held grows by $2 only if the
// available balance covers it and this instance's lease ($3) runs.
const reserveSQL = `UPDATE wallets SET held = held + $2
	WHERE account_id = $1 AND balance - held >= $2
	  AND EXISTS (SELECT 1 FROM instances WHERE id = $3 AND lease_until > now())
	RETURNING balance, held`

// errRollback ends a transaction that refused its move.
var errRollback = errors.New("pgstore: refused")

// placeCapped places a hold of a key with a spend cap, in a transaction:
// the wallet's guarded update first, which locks the account's wallet row;
// then, in a statement of its own (so a snapshot taken under that lock),
// the hold, only if the cap minus what the key spent minus its open holds
// covers it. Every hold and charge of the key commits holding the same
// wallet row, so none can slip between the check and the hold.
func (s *Store) placeCapped(ctx context.Context, h store.Hold) (store.Wallet, error) {
	w := store.Wallet{AccountID: h.AccountID}
	var refused error
	err := s.tx(ctx, func(tx pgx.Tx) error {
		refused = nil
		err := tx.QueryRow(ctx, reserveSQL, h.AccountID, int64(h.Amount), s.instance).Scan((*int64)(&w.Balance), (*int64)(&w.Held))
		if errors.Is(err, pgx.ErrNoRows) {
			refused = errInsufficientOrWhy
			return errRollback
		}
		if err != nil {
			return err
		}
		var placed bool
		err = tx.QueryRow(ctx, `WITH h AS (
				INSERT INTO holds (id, account_id, key_id, key_name, key_prefix, model, unit_type, amount,
					submitted_at, task_id, owner)
				SELECT $3, $1, $4, $5, $6, $7, $8, $2::bigint, $9, $10, $11
				WHERE $12::numeric - coalesce((SELECT total FROM key_usage WHERE key_id = $4::text), 0)
				      - coalesce((SELECT sum(amount) FROM holds WHERE key_id = $4::text), 0) >= $2::bigint
				RETURNING true AS placed
			), b AS (
				`+holdBookSQL+` FROM h
			)
			SELECT placed FROM h`,
			h.AccountID, int64(h.Amount), h.ID, txt(h.KeyID), txt(h.KeyName), txt(h.KeyPrefix), txt(h.Model),
			txt(h.UnitType), ns(h.SubmittedAt), txt(h.TaskID), s.instance, int64(*h.SpendCap)).Scan(&placed)
		if errors.Is(err, pgx.ErrNoRows) {
			refused = store.ErrSpendCap
			return errRollback
		}
		return err
	})
	switch {
	case errors.Is(err, errRollback) && refused == errInsufficientOrWhy:
		return store.Wallet{AccountID: h.AccountID}, s.holdRefused(ctx, h.AccountID)
	case errors.Is(err, errRollback):
		return store.Wallet{AccountID: h.AccountID}, refused
	case err != nil:
		s.doubt(h.ID, err)
		return store.Wallet{AccountID: h.AccountID}, err
	}
	return w, nil
}

// errInsufficientOrWhy marks a guarded update that changed nothing; why is
// asked after the transaction (holdRefused).
var errInsufficientOrWhy = errors.New("pgstore: the wallet refused the hold")

// holdRefused says why a hold's guarded update changed nothing.
func (s *Store) holdRefused(ctx context.Context, account string) error {
	var wallet, live bool
	err := s.pool.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM wallets WHERE account_id = $1),
		EXISTS (SELECT 1 FROM instances WHERE id = $2 AND lease_until > now())`, account, s.instance).Scan(&wallet, &live)
	switch {
	case err != nil:
		return s.fail(err)
	case !wallet:
		return store.ErrNotFound
	case !live:
		return fmt.Errorf("%w: instance %s: its lease in the store has lapsed (the database was unreachable for longer than %s); no hold until it is renewed", store.ErrUnavailable, s.instance, s.lease)
	}
	return store.ErrInsufficient
}

// settleSQL settles a hold in one statement: the hold row is deleted (the
// compare-and-set: a second settlement deletes nothing and so changes
// nothing), the row written with the settlement's book entry, the wallet
// charged and released and the key's usage added. The wallet and key
// updates are not read by the final SELECT, so they run last: the
// account's row is locked only for them and the commit, not for the row's
// insert into its indexes. $1 hold, $2 charge, then the row's columns
// from $3, then the entry's kind (settle, refund).
var settleSQL = settleStatement(`''`, `''`)

// sweptSQL is settleSQL as the sweep of lapsed leases runs it: its entry
// names the hold's instance and store.NoteLeaseLapsed, which lets that
// instance charge the call late (lateSQL).
var sweptSQL = settleStatement(`h.owner`, `'`+store.NoteLeaseLapsed+`'`)

func settleStatement(owner, note string) string {
	return `
	WITH h AS (
		DELETE FROM holds WHERE id = $1 AND account_id = $3 RETURNING amount, key_id, owner
	), r AS (
		INSERT INTO logs (` + logInsertCols + `)
		SELECT ` + logInsertArgs(3) + ` FROM h RETURNING id
	), b AS (
		INSERT INTO book (kind, account_id, amount, charge, hold_id, request_id, task_id, log_id, owner, note, created_at)
		SELECT $` + strconv.Itoa(3+len(logCols)) + `::text, $3, h.amount, $2, $1, ` +
		logArg("request_id", 3) + `, ` + logArg("task_id", 3) + `, r.id, ` + owner + `, ` + note + `, ` + logArg("created_at", 3) + ` FROM h, r
	), w AS (
		UPDATE wallets SET balance = balance - $2, held = held - h.amount
		FROM h WHERE wallets.account_id = $3
	), u AS (
		` + keyUsageSQL(`h.key_id`, `h`) + `
	)
	SELECT id FROM r`
}

// keyUsageSQL adds the charge $2 to the usage of key (an expression over
// from).
func keyUsageSQL(key, from string) string {
	return `INSERT INTO key_usage (key_id, total)
		SELECT ` + key + `, $2 FROM ` + from + ` WHERE $2 <> 0 AND ` + key + ` <> ''
		ON CONFLICT (key_id) DO UPDATE SET total = CASE
			WHEN key_usage.total::numeric + EXCLUDED.total > 9223372036854775807 THEN 9223372036854775807
			ELSE key_usage.total + EXCLUDED.total END`
}

// lateSQL charges a call whose hold the sweep of lapsed leases released
// while the call was served (its instance cut from the database for
// longer than its lease): only the instance that placed the hold, only
// after such a release, only once (the unique index book_late_once). The
// charge leaves the balance, which may go below zero by that charge; the
// row is written with an entry of kind late. Parameters as settleSQL's,
// the instance in place of the kind.
var lateSQL = `
	WITH s AS (
		SELECT 1 FROM book
		WHERE hold_id = $1 AND note = '` + store.NoteLeaseLapsed + `' AND kind = 'settle'
		  AND account_id = $3 AND owner = $` + strconv.Itoa(3+len(logCols)) + `::text
		  AND NOT EXISTS (SELECT 1 FROM book WHERE hold_id = $1 AND kind = 'late')
		LIMIT 1
	), r AS (
		INSERT INTO logs (` + logInsertCols + `)
		SELECT ` + logInsertArgs(3) + ` FROM s RETURNING id
	), b AS (
		INSERT INTO book (kind, account_id, amount, charge, hold_id, request_id, task_id, log_id, owner, note, created_at)
		SELECT 'late', $3, 0, $2, $1, ` + logArg("request_id", 3) + `, ` + logArg("task_id", 3) + `, r.id, $` +
	strconv.Itoa(3+len(logCols)) + `::text, 'charged after the sweep of its lapsed lease released its hold', ` +
	logArg("created_at", 3) + ` FROM r
	), w AS (
		UPDATE wallets SET balance = balance - $2 FROM r WHERE wallets.account_id = $3
	), u AS (
		` + keyUsageSQL(logArg("key_id", 3), `r`) + `
	)
	SELECT id FROM r`

// insertRowSQL writes a row without a hold (a rejected request), unless
// that very row is there: a retry after a commit whose answer was lost
// (the link to the database cut) finds it by its request, account and
// time, and answers its id instead of writing it twice.
var insertRowSQL = `WITH r AS (
		INSERT INTO logs (` + logInsertCols + `)
		SELECT ` + logInsertArgs(1) + `
		WHERE NOT EXISTS (SELECT 1 FROM logs WHERE ` + sameRow + `)
		RETURNING id
	)
	SELECT id FROM r
	UNION ALL
	SELECT id FROM logs WHERE ` + sameRow + ` AND NOT EXISTS (SELECT 1 FROM r)
	LIMIT 1`

// sameRow matches the row of insertRowSQL's arguments.
var sameRow = `request_id = ` + logArg("request_id", 1) + ` AND account_id = ` + logArg("account_id", 1) +
	` AND created_at = ` + logArg("created_at", 1)

// Settle closes a hold and writes its row in one statement; st.Row.ID is set.
func (s *Store) Settle(ctx context.Context, st store.Settlement) error {
	r := st.Row
	if err := checkSettlement(st); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	id, err := s.settle(ctx, s.pool, st, false)
	if err != nil {
		return err
	}
	r.ID = id
	return nil
}

func checkSettlement(st store.Settlement) error {
	r := st.Row
	if r == nil {
		return errors.New("pgstore: settlement without a row")
	}
	if err := checkID("account", r.AccountID); err != nil {
		return err
	}
	if st.Charge < 0 {
		return fmt.Errorf("pgstore: negative charge %s", st.Charge)
	}
	if st.HoldID == "" && st.Charge != 0 {
		return fmt.Errorf("pgstore: charge %s without a hold", st.Charge)
	}
	return nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// settle applies st through q and returns the row's id; ErrNotFound when
// the hold is gone. ends: the settlement ends a task (FinishTask).
func (s *Store) settle(ctx context.Context, q querier, st store.Settlement, ends bool) (uint64, error) {
	var id int64
	var err error
	if st.HoldID == "" {
		err = q.QueryRow(ctx, insertRowSQL, logArgs(st.Row)...).Scan(&id)
	} else {
		if !validID(st.HoldID) {
			return 0, store.ErrNotFound
		}
		kind := store.EntrySettle
		if ends && st.Charge == 0 {
			kind = store.EntryRefund
		}
		args := append(append([]any{st.HoldID, int64(st.Charge)}, logArgs(st.Row)...), kind)
		sql := settleSQL
		if swept(ctx) {
			sql = sweptSQL
		}
		err = q.QueryRow(ctx, sql, args...).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) && !ends && !swept(ctx) {
			args[len(args)-1] = s.instance
			if err = q.QueryRow(ctx, lateSQL, args...).Scan(&id); err == nil {
				s.log.Warn("a settlement found its hold released by the sweep of this instance's lapsed lease; the call is charged without it",
					"request_id", st.Row.RequestID, "account_id", st.Row.AccountID, "charge", st.Charge.String())
			}
		}
	}
	if err != nil {
		return 0, s.fail(err)
	}
	return uint64(id), nil
}

type sweepKey struct{}

// swept reports whether ctx is that of a sweep of lapsed leases
// (SweepExpiredHolds hands it to its callback): its settlements release
// holds whose calls may yet be charged late.
func swept(ctx context.Context) bool { return ctx.Value(sweepKey{}) != nil }

const holdCols = `id, account_id, key_id, key_name, key_prefix, model, unit_type, amount, submitted_at, task_id`

func scanHolds(rows pgx.Rows) ([]store.Hold, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Hold, error) {
		var h store.Hold
		var at int64
		err := r.Scan(&h.ID, &h.AccountID, &h.KeyID, &h.KeyName, &h.KeyPrefix, &h.Model, &h.UnitType,
			(*int64)(&h.Amount), &at, &h.TaskID)
		h.SubmittedAt = fromNS(at)
		return h, err
	})
}

// OpenHolds lists every hold not yet settled, of every instance.
func (s *Store) OpenHolds(ctx context.Context) ([]store.Hold, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+holdCols+` FROM holds ORDER BY id`)
	if err != nil {
		return nil, s.fail(err)
	}
	hs, err := scanHolds(rows)
	return hs, s.fail(err)
}
