package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// The orders role (migrations/0006_orders.sql). An update is one
// statement: the order's guarded update (id, account and version), and,
// fed by it, the wallet's credit path (creditSQL). Two instances updating
// one order at once queue on its row; the second finds another version
// and changes nothing.

func checkOrder(o *store.Order) error {
	if err := errors.Join(checkID("order", o.ID), checkID("account", o.AccountID)); err != nil {
		return err
	}
	if !slices.Contains(store.OrderStatuses, o.Status) {
		return fmt.Errorf("pgstore: order %s: unknown status %q", o.ID, o.Status)
	}
	return nil
}

// CreateOrder implements store.Orders.
func (s *Store) CreateOrder(ctx context.Context, o store.Order) error {
	if err := checkOrder(&o); err != nil {
		return err
	}
	o.Version = 1
	v, err := json.Marshal(&o)
	if err != nil {
		return err
	}
	return s.execOne(ctx, `INSERT INTO orders (id, account_id, status, session_id, payment_id, version, created_at, "order")
		SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM accounts WHERE id = $2)`,
		o.ID, o.AccountID, o.Status, txt(o.SessionID), txt(o.PaymentID), o.Version, ns(o.CreatedAt), string(v))
}

// UpdateOrder implements store.Orders.
func (s *Store) UpdateOrder(ctx context.Context, next *store.Order, credit money.Nano, note string) error {
	o := *next
	if err := checkOrder(&o); err != nil {
		return err
	}
	if !credit.Valid() {
		return store.ErrOutOfRange
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	o.Version++
	v, err := json.Marshal(&o)
	if err != nil {
		return err
	}
	c := store.CauseOf(ctx)
	var n int
	err = s.pool.QueryRow(ctx, `
		WITH o AS (
			UPDATE orders SET status = $5, session_id = $6, payment_id = $7, version = $8, "order" = $9
			WHERE id = $10 AND account_id = $1 AND version = $11
			RETURNING account_id, id
		), src AS (
			SELECT account_id, id AS order_id, $12::text AS admin_token, $13::text AS user_id FROM o WHERE $2::bigint <> 0
		), `+creditSQL+`
		SELECT count(*) FROM o`,
		o.AccountID, int64(credit), txt(note), ns(time.Now()),
		o.Status, txt(o.SessionID), txt(o.PaymentID), o.Version, string(v), o.ID, next.Version,
		txt(c.AdminToken), txt(c.UserID)).Scan(&n)
	if err != nil {
		return s.fail(err)
	}
	if n == 0 {
		var account string
		err := s.pool.QueryRow(ctx, `SELECT account_id FROM orders WHERE id = $1`, o.ID).Scan(&account)
		switch {
		case err != nil:
			return s.fail(err)
		case account != o.AccountID:
			return fmt.Errorf("pgstore: order %s belongs to account %s, not %s", o.ID, account, o.AccountID)
		}
		return store.ErrChanged
	}
	next.Version = o.Version
	return nil
}

// GetOrder implements store.Orders.
func (s *Store) GetOrder(ctx context.Context, id string) (store.Order, error) {
	return s.orderWhere(ctx, `id = $1`, id)
}

// OrderByRef implements store.Orders.
func (s *Store) OrderByRef(ctx context.Context, ref string) (store.Order, error) {
	return s.orderWhere(ctx, `session_id = $1 OR payment_id = $1`, ref)
}

func (s *Store) orderWhere(ctx context.Context, where, v string) (store.Order, error) {
	if err := s.enter(ctx); err != nil {
		return store.Order{}, err
	}
	if !validID(v) {
		return store.Order{}, store.ErrNotFound
	}
	o, err := scanJSON[store.Order](s.pool.QueryRow(ctx, `SELECT "order" FROM orders WHERE `+where+` LIMIT 1`, v))
	if errors.Is(err, pgx.ErrNoRows) {
		return o, store.ErrNotFound
	}
	return o, s.fail(err)
}

// ListOrders implements store.Orders.
func (s *Store) ListOrders(ctx context.Context, q store.OrderQuery) ([]store.Order, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > store.OrderListLimit {
		limit = store.OrderListLimit
	}
	since := int64(zeroTime)
	if !q.Since.IsZero() {
		since = ns(q.Since)
	}
	statuses := q.Statuses
	if statuses == nil {
		statuses = []string{}
	}
	out, err := collectJSON[store.Order](s.pool.Query(ctx, `SELECT "order" FROM orders
		WHERE ($1 = '' OR account_id = $1) AND (cardinality($2::text[]) = 0 OR status = ANY($2))
		  AND created_at >= $3
		ORDER BY created_at DESC, id DESC LIMIT $4`, txt(q.AccountID), statuses, since, limit))
	if out == nil {
		out = []store.Order{}
	}
	return out, s.fail(err)
}

var _ store.Orders = (*Store)(nil)
