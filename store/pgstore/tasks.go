package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/store"
)

// A task is one row: head (the task as JSON, without its job and result
// body), the job and the body apart, and beside them the columns lists,
// claims and leases select on. Owner, lease and status columns win over
// the head's copies. Claims take rows with FOR UPDATE SKIP LOCKED, so
// instances claiming at once never take the same task; FinishTask ends the
// task, settles its hold and writes its row in one transaction, the hold
// (deleted by the settlement) being the compare-and-set.

func checkTask(t *store.Task) error {
	return errors.Join(checkID("task", t.ID), checkID("account", t.AccountID), checkID("family", t.Family))
}

// taskHead is the task without its job and result body.
func taskHead(t *store.Task) (string, error) {
	c := *t
	c.Job = nil
	if t.Result != nil {
		r := *t.Result
		r.Body = nil
		c.Result = &r
	}
	b, err := json.Marshal(&c)
	return string(b), err
}

// taskFrom decodes a head and lays the columns over it.
func taskFrom(head []byte, owner string, lease int64, job, body []byte) (store.Task, error) {
	var t store.Task
	if err := json.Unmarshal(head, &t); err != nil {
		return t, fmt.Errorf("pgstore: task head: %w", err)
	}
	t.Owner, t.LeaseUntil = owner, fromNS(lease)
	if len(job) > 0 {
		t.Job = job
	}
	if t.Result != nil && !t.Result.BodyGone && len(body) > 0 {
		t.Result.Body = body
	}
	return t, nil
}

// CreateTask implements store.Tasks.
func (s *Store) CreateTask(ctx context.Context, t store.Task) error {
	if err := checkTask(&t); err != nil {
		return err
	}
	if store.TaskTerminal(t.Status) {
		return fmt.Errorf("pgstore: new task %s is already %s", t.ID, t.Status)
	}
	head, err := taskHead(&t)
	if err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	var job []byte
	if len(t.Job) > 0 {
		job = t.Job
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO tasks (id, account_id, family, key_id, status, finished, hidden,
		submitted_at, owner, lease_until, head, job, collection) VALUES ($1, $2, $3, $4, $5, false, $6, $7, $8, $9, $10, $11, $12)`,
		t.ID, t.AccountID, t.Family, txt(t.KeyID), txt(t.Status), t.Hidden, ns(t.SubmittedAt), txt(t.Owner),
		ns(t.LeaseUntil), head, job, txt(store.TaskCollection(t.ID)))
	return s.fail(err)
}

// GetTask implements store.Tasks.
func (s *Store) GetTask(ctx context.Context, id string) (store.Task, error) {
	if err := s.enter(ctx); err != nil {
		return store.Task{}, err
	}
	if !validID(id) {
		return store.Task{}, store.ErrNotFound
	}
	var head, job, body []byte
	var owner string
	var lease int64
	err := s.pool.QueryRow(ctx, `SELECT head, owner, lease_until, job, body FROM tasks WHERE id = $1`, id).
		Scan(&head, &owner, &lease, &job, &body)
	if err != nil {
		return store.Task{}, s.fail(err)
	}
	return taskFrom(head, owner, lease, job, body)
}

// ListTasks implements store.Tasks: newest first by (SubmittedAt, ID).
func (s *Store) ListTasks(ctx context.Context, q store.TaskQuery) ([]store.Task, error) {
	if err := checkID("account", q.AccountID); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > maxLimit {
		limit = maxLimit
	}
	var b strings.Builder
	args := []any{q.AccountID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	b.WriteString("account_id = $1 AND NOT hidden")
	if q.Family != "" {
		b.WriteString(" AND family = " + arg(txt(q.Family)))
	}
	if q.Collection != "" {
		b.WriteString(" AND collection = " + arg(txt(q.Collection)))
	}
	if q.KeyID != "" {
		b.WriteString(" AND key_id = " + arg(txt(q.KeyID)))
	}
	if q.Unfinished {
		b.WriteString(" AND NOT finished")
	} else {
		if len(q.Statuses) > 0 {
			b.WriteString(" AND status = ANY(" + arg(txts(q.Statuses)) + ")")
		}
		if !q.From.IsZero() {
			b.WriteString(" AND submitted_at >= " + arg(ns(q.From)))
		}
		if !q.To.IsZero() {
			b.WriteString(" AND submitted_at < " + arg(ns(q.To)))
		}
	}
	if p := q.Before; p != nil {
		b.WriteString(" AND (submitted_at, id) < (" + arg(ns(p.SubmittedAt)) + ", " + arg(txt(p.ID)) + ")")
	}
	rows, err := s.pool.Query(ctx, `SELECT head, owner, lease_until FROM tasks WHERE `+b.String()+
		` ORDER BY submitted_at DESC, id DESC LIMIT `+arg(limit), args...)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Task, error) {
		var head []byte
		var owner string
		var lease int64
		if err := r.Scan(&head, &owner, &lease); err != nil {
			return store.Task{}, err
		}
		return taskFrom(head, owner, lease, nil, nil)
	})
	return out, s.fail(err)
}

// UpdateTask implements store.Tasks.
func (s *Store) UpdateTask(ctx context.Context, t store.Task) error {
	if err := checkTask(&t); err != nil {
		return err
	}
	if store.TaskTerminal(t.Status) {
		return fmt.Errorf("pgstore: UpdateTask cannot end task %s: FinishTask does", t.ID)
	}
	t.Result = nil
	head, err := taskHead(&t)
	if err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	var job []byte
	if len(t.Job) > 0 {
		job = t.Job
	}
	var updated, exists bool
	err = s.pool.QueryRow(ctx, `
		WITH u AS (
			UPDATE tasks SET status = $3, lease_until = $4, head = $5, job = coalesce($6, job)
			WHERE id = $1 AND owner = $2 AND NOT finished RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM tasks WHERE id = $1)`,
		t.ID, txt(t.Owner), txt(t.Status), ns(t.LeaseUntil), head, job).Scan(&updated, &exists)
	switch {
	case err != nil:
		return s.fail(err)
	case updated:
		return nil
	case !exists:
		return store.ErrNotFound
	}
	return store.ErrLeaseLost
}

// RenewTaskLeases implements store.Tasks.
func (s *Store) RenewTaskLeases(ctx context.Context, owner string, ids []string, until time.Time) ([]string, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `UPDATE tasks SET lease_until = $3
		WHERE id = ANY($2) AND owner = $1 AND NOT finished RETURNING id`, txt(owner), txts(ids), ns(until))
	if err != nil {
		return nil, s.fail(err)
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail(err)
	}
	have := make(map[string]bool, len(kept))
	for _, id := range kept {
		have[id] = true
	}
	var lost []string
	for _, id := range ids {
		if !have[id] {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// ClaimTasks implements store.Tasks: the unfinished tasks whose lease
// ended, locked with SKIP LOCKED so concurrent claimers share them out.
func (s *Store) ClaimTasks(ctx context.Context, owner string, expiredBefore, until time.Time, limit int) ([]store.Task, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		WITH c AS (
			SELECT id, owner AS prev_owner, lease_until AS prev_lease FROM tasks
			WHERE NOT finished AND lease_until < $2
			ORDER BY lease_until, id LIMIT $4
			FOR UPDATE SKIP LOCKED
		)
		UPDATE tasks t SET owner = $1, lease_until = $3 FROM c WHERE t.id = c.id
		RETURNING t.head, c.prev_owner, c.prev_lease, t.job`,
		txt(owner), ns(expiredBefore), ns(until), limit)
	if err != nil {
		return nil, s.fail(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Task, error) {
		var head, job []byte
		var prev string
		var lease int64
		if err := r.Scan(&head, &prev, &lease, &job); err != nil {
			return store.Task{}, err
		}
		return taskFrom(head, prev, lease, job, nil)
	})
	return out, s.fail(err)
}

// FinishTask implements store.Tasks: the task ends, its hold is settled
// and its row written in one transaction, or nothing happens.
func (s *Store) FinishTask(ctx context.Context, t store.Task, st store.Settlement) error {
	if err := checkTask(&t); err != nil {
		return err
	}
	if !store.TaskTerminal(t.Status) || t.Result == nil {
		return fmt.Errorf("pgstore: FinishTask of %s needs a terminal status and a result", t.ID)
	}
	if st.HoldID == "" || st.HoldID != t.HoldID {
		return fmt.Errorf("pgstore: task %s settles hold %q, not its own %q", t.ID, st.HoldID, t.HoldID)
	}
	if err := checkSettlement(st); err != nil {
		return err
	}
	if st.Row.AccountID != t.AccountID {
		return fmt.Errorf("pgstore: task %s: its row must be of account %s", t.ID, t.AccountID)
	}
	head, err := taskHead(&t)
	if err != nil {
		return err
	}
	var body []byte
	if len(t.Result.Body) > 0 {
		body = t.Result.Body
	}
	var expire int64
	if t.Status == store.TaskSucceeded && !t.ExpireAt.IsZero() {
		expire = ns(t.ExpireAt)
	}
	var id uint64
	err = s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tasks SET status = $3, finished = true, hidden = $4, head = $5,
			body = $6, job = NULL, expire_at = $7 WHERE id = $1 AND owner = $2 AND NOT finished`,
			t.ID, txt(t.Owner), txt(t.Status), t.Hidden, head, body, expire)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrLeaseLost
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM holds WHERE id = $1 AND task_id = $2`, st.HoldID, t.ID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrLeaseLost
		}
		id, err = s.settle(ctx, tx, st, true)
		if errors.Is(err, store.ErrNotFound) {
			return store.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return err
	}
	st.Row.ID = id
	return nil
}

// DropTaskResult implements store.Tasks.
func (s *Store) DropTaskResult(ctx context.Context, id string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		var head []byte
		var owner string
		var lease int64
		if err := tx.QueryRow(ctx, `SELECT head, owner, lease_until FROM tasks WHERE id = $1 FOR UPDATE`, id).
			Scan(&head, &owner, &lease); err != nil {
			return err
		}
		t, err := taskFrom(head, owner, lease, nil, nil)
		if err != nil {
			return err
		}
		if t.Result == nil || t.Result.BodyGone {
			return nil
		}
		t.Result.BodyGone = true
		h, err := taskHead(&t)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE tasks SET head = $2, body = NULL WHERE id = $1`, id, h)
		return err
	})
}

// HideTask implements store.Tasks.
func (s *Store) HideTask(ctx context.Context, id string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !validID(id) {
		return store.ErrNotFound
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		var head []byte
		var owner string
		var lease int64
		var finished bool
		if err := tx.QueryRow(ctx, `SELECT head, owner, lease_until, finished FROM tasks WHERE id = $1 FOR UPDATE`, id).
			Scan(&head, &owner, &lease, &finished); err != nil {
			return err
		}
		if !finished {
			return store.ErrTaskRunning
		}
		t, err := taskFrom(head, owner, lease, nil, nil)
		if err != nil {
			return err
		}
		t.Hidden = true
		h, err := taskHead(&t)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE tasks SET head = $2, hidden = true WHERE id = $1`, id, h)
		return err
	})
}

// TakeTask implements store.Tasks.
func (s *Store) TakeTask(ctx context.Context, id, owner string, until time.Time) (store.Task, error) {
	if err := s.enter(ctx); err != nil {
		return store.Task{}, err
	}
	if !validID(id) {
		return store.Task{}, store.ErrNotFound
	}
	var t store.Task
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var head, job []byte
		var prev string
		var lease int64
		var finished bool
		if err := tx.QueryRow(ctx, `SELECT head, owner, lease_until, finished, job FROM tasks WHERE id = $1 FOR UPDATE`, id).
			Scan(&head, &prev, &lease, &finished, &job); err != nil {
			return err
		}
		if finished {
			return store.ErrLeaseLost
		}
		var err error
		if t, err = taskFrom(head, prev, lease, job, nil); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE tasks SET owner = $2, lease_until = $3 WHERE id = $1`, id, txt(owner), ns(until))
		return err
	})
	return t, s.fail(err)
}

// ExpireTasks implements store.Tasks.
func (s *Store) ExpireTasks(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	var ids []string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, head, owner, lease_until FROM tasks
			WHERE status = 'succeeded' AND expire_at > 0 AND expire_at <= $1
			ORDER BY expire_at LIMIT $2 FOR UPDATE SKIP LOCKED`, ns(now), limit)
		if err != nil {
			return err
		}
		type due struct {
			id   string
			head []byte
		}
		var ds []due
		for rows.Next() {
			var d due
			var owner string
			var lease int64
			if err := rows.Scan(&d.id, &d.head, &owner, &lease); err != nil {
				rows.Close()
				return err
			}
			ds = append(ds, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, d := range ds {
			t, err := taskFrom(d.head, "", 0, nil, nil)
			if err != nil {
				return err
			}
			t.Status = store.TaskExpired
			h, err := taskHead(&t)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE tasks SET status = $2, head = $3, expire_at = 0 WHERE id = $1`,
				d.id, store.TaskExpired, h); err != nil {
				return err
			}
			ids = append(ids, d.id)
		}
		return nil
	})
	return ids, s.fail(err)
}

var _ store.Tasks = (*Store)(nil)
