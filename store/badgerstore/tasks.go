package badgerstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/store"
)

// Tasks live under task/{id} (JSON, small), with the job the plugin needs
// under taskjob/ and the result body under taskbody/ (either may be tens of
// megabytes). taskacct/ orders an account's tasks of one family newest
// first; taskopen/ lists the unfinished ones (claims, in-flight lists).
//
// Progress (UpdateTask, leases) is a short transaction. The terminal
// transition is a money move: FinishTask journals the settlement of the
// task's hold together with the ended task, so both reach Badger in one
// transaction or, after a crash, again from the journal. The hold is the
// compare-and-set: only the first FinishTask of a task finds it.

func taskKey(id string) []byte     { return strKey(pTask, id) }
func taskJobKey(id string) []byte  { return strKey(pTaskJob, id) }
func taskBodyKey(id string) []byte { return strKey(pTaskBody, id) }

func taskOpenKey(account, id string) []byte { return append(scoped(pTaskOpen, account), id...) }

func taskAcctPrefix(account, family string) []byte {
	return append(append(scoped(pTaskAcct, account), family...), sep)
}

func taskAcctKey(t *store.Task) []byte {
	return append(appendTS(taskAcctPrefix(t.AccountID, t.Family), t.SubmittedAt), t.ID...)
}

func taskCollPrefix(account, coll string) []byte {
	return append(append(scoped(pTaskColl, account), coll...), sep)
}

func taskCollKey(t *store.Task) []byte {
	return append(appendTS(taskCollPrefix(t.AccountID, store.TaskCollection(t.ID)), t.SubmittedAt), t.ID...)
}

func taskExpKey(at time.Time, id string) []byte {
	return append(appendTS([]byte(pTaskExp), at), id...)
}

// encodeTask is the task without its job and result body.
func encodeTask(t *store.Task) ([]byte, error) {
	c := *t
	c.Job = nil
	if t.Result != nil {
		r := *t.Result
		r.Body = nil
		c.Result = &r
	}
	return json.Marshal(&c)
}

func checkTask(t *store.Task) error {
	for what, id := range map[string]string{"task": t.ID, "account": t.AccountID, "family": t.Family} {
		if err := checkID(what, id); err != nil {
			return err
		}
	}
	return nil
}

// readTask reads a task with its job and result body.
func readTask(txn *badger.Txn, id string) (store.Task, error) {
	var t store.Task
	if err := get(txn, taskKey(id), func(v []byte) error { return json.Unmarshal(v, &t) }); err != nil {
		return t, err
	}
	err := get(txn, taskJobKey(id), func(v []byte) error { t.Job = bytes.Clone(v); return nil })
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return t, err
	}
	if t.Result != nil && !t.Result.BodyGone {
		err = get(txn, taskBodyKey(id), func(v []byte) error { t.Result.Body = bytes.Clone(v); return nil })
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return t, err
		}
	}
	return t, nil
}

// readTaskHead reads a task without job and body (lists, claims).
func readTaskHead(txn *badger.Txn, id string) (store.Task, error) {
	var t store.Task
	err := get(txn, taskKey(id), func(v []byte) error { return json.Unmarshal(v, &t) })
	return t, err
}

func writeTaskHead(txn *badger.Txn, t *store.Task) error {
	v, err := encodeTask(t)
	if err != nil {
		return err
	}
	return txn.Set(taskKey(t.ID), v)
}

// CreateTask implements store.Tasks.
func (s *Store) CreateTask(ctx context.Context, t store.Task) error {
	if err := checkTask(&t); err != nil {
		return err
	}
	if store.TaskTerminal(t.Status) {
		return fmt.Errorf("badgerstore: new task %s is already %s", t.ID, t.Status)
	}
	head, err := encodeTask(&t)
	if err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		if ok, err := exists(txn, taskKey(t.ID)); err != nil || ok {
			return errors.Join(err, map[bool]error{true: store.ErrExists}[ok])
		}
		if err := txn.Set(taskKey(t.ID), head); err != nil {
			return err
		}
		if len(t.Job) > 0 {
			if err := txn.Set(taskJobKey(t.ID), t.Job); err != nil {
				return err
			}
		}
		if err := txn.Set(taskAcctKey(&t), nil); err != nil {
			return err
		}
		if err := txn.Set(taskCollKey(&t), nil); err != nil {
			return err
		}
		return txn.Set(taskOpenKey(t.AccountID, t.ID), nil)
	})
}

// GetTask implements store.Tasks. It sees every FinishTask made before it.
func (s *Store) GetTask(ctx context.Context, id string) (store.Task, error) {
	if err := checkID("task", id); err != nil {
		return store.Task{}, store.ErrNotFound
	}
	if err := s.seen(ctx); err != nil {
		return store.Task{}, err
	}
	var t store.Task
	err := s.view(ctx, func(txn *badger.Txn) (err error) {
		t, err = readTask(txn, id)
		return err
	})
	return t, err
}

// ListTasks implements store.Tasks: the account's tasks of one family
// (every family when q.Family is empty), newest first.
func (s *Store) ListTasks(ctx context.Context, q store.TaskQuery) ([]store.Task, error) {
	if err := checkID("account", q.AccountID); err != nil {
		return nil, err
	}
	if err := s.seen(ctx); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > 10_000 {
		limit = 10_000
	}
	var out []store.Task
	err := s.view(ctx, func(txn *badger.Txn) error {
		out = out[:0]
		if q.Unfinished {
			return scanPrefix(txn, scoped(pTaskOpen, q.AccountID), false, func(it *badger.Item) error {
				id := string(it.Key()[len(pTaskOpen)+len(q.AccountID)+1:])
				t, err := readTaskHead(txn, id)
				if err != nil {
					return err
				}
				if taskMatches(&q, &t) {
					out = append(out, t)
				}
				return nil
			})
		}
		index, prefix, ordered := pTaskAcct, scoped(pTaskAcct, q.AccountID), false
		switch {
		case q.Collection != "":
			index, prefix, ordered = pTaskColl, taskCollPrefix(q.AccountID, q.Collection), true
		case q.Family != "":
			prefix, ordered = taskAcctPrefix(q.AccountID, q.Family), true
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(seekPast(prefix)); it.Valid() && len(out) < limit; it.Next() {
			k := it.Item().Key()
			// {index}{account}\x00[{group}\x00]{ts:12}{id}: the family or
			// collection is part of the prefix, or read up to the separator.
			rest := k[len(scoped(index, q.AccountID)):]
			i := bytes.IndexByte(rest, sep)
			if i < 0 || len(rest) < i+1+tsLen {
				return errCorrupt
			}
			ts, id := parseTS(rest[i+1:]), string(rest[i+1+tsLen:])
			if !q.To.IsZero() && !ts.Before(q.To) {
				continue
			}
			if !q.From.IsZero() && ts.Before(q.From) {
				if ordered {
					break
				}
				continue
			}
			if b := q.Before; b != nil && (ts.After(b.SubmittedAt) || ts.Equal(b.SubmittedAt) && id >= b.ID) {
				continue
			}
			t, err := readTaskHead(txn, id)
			if err != nil {
				return err
			}
			if taskMatches(&q, &t) {
				out = append(out, t)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if q.Unfinished || q.Family == "" && q.Collection == "" {
		// These walks do not come out in list order.
		slices.SortFunc(out, func(a, b store.Task) int {
			if c := b.SubmittedAt.Compare(a.SubmittedAt); c != 0 {
				return c
			}
			return -stringsCompare(a.ID, b.ID)
		})
		if len(out) > limit {
			out = out[:limit]
		}
	}
	return out, nil
}

func stringsCompare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func taskMatches(q *store.TaskQuery, t *store.Task) bool {
	if t.Hidden {
		return false
	}
	if q.Family != "" && t.Family != q.Family {
		return false
	}
	if q.Collection != "" && store.TaskCollection(t.ID) != q.Collection {
		return false
	}
	if q.KeyID != "" && t.KeyID != q.KeyID {
		return false
	}
	if q.Unfinished {
		return !store.TaskTerminal(t.Status)
	}
	if !q.From.IsZero() && t.SubmittedAt.Before(q.From) || !q.To.IsZero() && !t.SubmittedAt.Before(q.To) {
		return false
	}
	return len(q.Statuses) == 0 || slices.Contains(q.Statuses, t.Status)
}

// UpdateTask implements store.Tasks.
func (s *Store) UpdateTask(ctx context.Context, t store.Task) error {
	if err := checkTask(&t); err != nil {
		return err
	}
	if store.TaskTerminal(t.Status) {
		return fmt.Errorf("badgerstore: UpdateTask cannot end task %s: FinishTask does", t.ID)
	}
	// A FinishTask still on its way to Badger must be seen first.
	if err := s.seen(ctx); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		cur, err := readTaskHead(txn, t.ID)
		if err != nil {
			return err
		}
		if store.TaskTerminal(cur.Status) || cur.Owner != t.Owner {
			return store.ErrLeaseLost
		}
		if len(t.Job) > 0 {
			if err := txn.Set(taskJobKey(t.ID), t.Job); err != nil {
				return err
			}
		}
		t.Result = nil
		return writeTaskHead(txn, &t)
	})
}

// RenewTaskLeases implements store.Tasks.
func (s *Store) RenewTaskLeases(ctx context.Context, owner string, ids []string, until time.Time) ([]string, error) {
	if err := s.seen(ctx); err != nil {
		return nil, err
	}
	var lost []string
	err := s.update(ctx, func(txn *badger.Txn) error {
		lost = lost[:0]
		for _, id := range ids {
			t, err := readTaskHead(txn, id)
			if errors.Is(err, store.ErrNotFound) || err == nil && (store.TaskTerminal(t.Status) || t.Owner != owner) {
				lost = append(lost, id)
				continue
			}
			if err != nil {
				return err
			}
			t.LeaseUntil = until
			if err := writeTaskHead(txn, &t); err != nil {
				return err
			}
		}
		return nil
	})
	return lost, err
}

// ClaimTasks implements store.Tasks.
func (s *Store) ClaimTasks(ctx context.Context, owner string, expiredBefore, until time.Time, limit int) ([]store.Task, error) {
	if err := s.seen(ctx); err != nil {
		return nil, err
	}
	var out []store.Task
	err := s.update(ctx, func(txn *badger.Txn) error {
		out = out[:0]
		var ids []string
		err := scanPrefix(txn, []byte(pTaskOpen), false, func(it *badger.Item) error {
			k := it.Key()[len(pTaskOpen):]
			if i := bytes.IndexByte(k, sep); i >= 0 {
				ids = append(ids, string(k[i+1:]))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if len(out) >= limit {
				break
			}
			t, err := readTaskHead(txn, id)
			if err != nil {
				return err
			}
			if store.TaskTerminal(t.Status) || !t.LeaseUntil.Before(expiredBefore) {
				continue
			}
			claimed := t
			claimed.Owner, claimed.LeaseUntil = owner, until
			if err := writeTaskHead(txn, &claimed); err != nil {
				return err
			}
			if err := get(txn, taskJobKey(id), func(v []byte) error { t.Job = bytes.Clone(v); return nil }); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// FinishTask implements store.Tasks.
func (s *Store) FinishTask(ctx context.Context, t store.Task, st store.Settlement) error {
	if err := checkTask(&t); err != nil {
		return err
	}
	if !store.TaskTerminal(t.Status) || t.Result == nil {
		return fmt.Errorf("badgerstore: FinishTask of %s needs a terminal status and a result", t.ID)
	}
	if st.HoldID == "" || st.HoldID != t.HoldID {
		return fmt.Errorf("badgerstore: task %s settles hold %q, not its own %q", t.ID, st.HoldID, t.HoldID)
	}
	r := st.Row
	if r == nil || r.AccountID != t.AccountID {
		return fmt.Errorf("badgerstore: task %s: its row must be of account %s", t.ID, t.AccountID)
	}
	if st.Charge < 0 {
		return fmt.Errorf("badgerstore: negative charge %s", st.Charge)
	}
	// The owner check reads Badger, which must hold every earlier move.
	if err := s.seen(ctx); err != nil {
		return err
	}
	var cur store.Task
	if err := s.view(ctx, func(txn *badger.Txn) (err error) {
		cur, err = readTaskHead(txn, t.ID)
		return err
	}); err != nil {
		return err
	}
	if store.TaskTerminal(cur.Status) || cur.Owner != t.Owner {
		return store.ErrLeaseLost
	}
	head, err := encodeTask(&t)
	if err != nil {
		return err
	}
	if err := s.refuseMoves(); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	e := &entry{kind: kindFinish, account: r.AccountID, holdID: st.HoldID, charge: st.Charge,
		taskID: t.ID, taskVal: head, taskBody: t.Result.Body}
	settleKeys(e, r, true, nil)
	b := s.books
	w, err := s.lockWallet(r.AccountID)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	h, ok := b.holds[st.HoldID]
	if !ok || h.TaskID != t.ID {
		b.mu.Unlock()
		return store.ErrLeaseLost
	}
	e.amount, e.keyID = h.Amount, h.KeyID
	// As for Settle: nothing is booked that would take the balance out of
	// money's range.
	next, err := moved(*w, -e.charge, -e.amount)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	id, err := nextID(s.logSeq)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	setRowID(e, id)
	b.scratch = finishPayload(b.scratch[:0], e, id)
	if err := b.record(e, b.scratch); err != nil {
		b.mu.Unlock()
		return err
	}
	*w = next
	b.closed(*h, e.charge)
	delete(b.holds, st.HoldID)
	queued := len(b.queue)
	b.mu.Unlock()
	r.ID = id
	return s.settled(ctx, e.seq, queued)
}

func finishPayload(b []byte, e *entry, id uint64) []byte {
	p := enc{settlePayload(b, e, id)}
	p.str(e.taskID)
	p.bytes(e.taskVal)
	p.bytes(e.taskBody)
	return p.b
}

// writeFinish writes an ended task beside its settlement.
func writeFinish(txn *badger.Txn, e *entry) error {
	var t store.Task
	if err := json.Unmarshal(e.taskVal, &t); err != nil {
		return fmt.Errorf("task %s: %w", e.taskID, err)
	}
	if err := txn.Set(taskKey(e.taskID), e.taskVal); err != nil {
		return err
	}
	if len(e.taskBody) > 0 {
		if err := txn.Set(taskBodyKey(e.taskID), e.taskBody); err != nil {
			return err
		}
	}
	// The job is not needed once the task has ended.
	if err := txn.Delete(taskJobKey(e.taskID)); err != nil {
		return err
	}
	if t.Status == store.TaskSucceeded && !t.ExpireAt.IsZero() {
		if err := txn.Set(taskExpKey(t.ExpireAt, e.taskID), nil); err != nil {
			return err
		}
	}
	return txn.Delete(taskOpenKey(t.AccountID, e.taskID))
}

// DropTaskResult implements store.Tasks.
func (s *Store) DropTaskResult(ctx context.Context, id string) error {
	if err := s.seen(ctx); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		t, err := readTaskHead(txn, id)
		if err != nil {
			return err
		}
		if t.Result == nil || t.Result.BodyGone {
			return nil
		}
		t.Result.BodyGone = true
		if err := txn.Delete(taskBodyKey(id)); err != nil {
			return err
		}
		return writeTaskHead(txn, &t)
	})
}

// HideTask implements store.Tasks.
func (s *Store) HideTask(ctx context.Context, id string) error {
	if err := checkID("task", id); err != nil {
		return store.ErrNotFound
	}
	if err := s.seen(ctx); err != nil {
		return err
	}
	return s.update(ctx, func(txn *badger.Txn) error {
		t, err := readTaskHead(txn, id)
		if err != nil {
			return err
		}
		if !store.TaskTerminal(t.Status) {
			return store.ErrTaskRunning
		}
		t.Hidden = true
		return writeTaskHead(txn, &t)
	})
}

// TakeTask implements store.Tasks.
func (s *Store) TakeTask(ctx context.Context, id, owner string, until time.Time) (store.Task, error) {
	if err := checkID("task", id); err != nil {
		return store.Task{}, store.ErrNotFound
	}
	if err := s.seen(ctx); err != nil {
		return store.Task{}, err
	}
	var prev store.Task
	err := s.update(ctx, func(txn *badger.Txn) error {
		t, err := readTask(txn, id)
		if err != nil {
			return err
		}
		if store.TaskTerminal(t.Status) {
			return store.ErrLeaseLost
		}
		prev = t
		t.Job = nil
		t.Owner, t.LeaseUntil = owner, until
		return writeTaskHead(txn, &t)
	})
	return prev, err
}

// ExpireTasks implements store.Tasks.
func (s *Store) ExpireTasks(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if err := s.seen(ctx); err != nil {
		return nil, err
	}
	var ids []string
	err := s.update(ctx, func(txn *badger.Txn) error {
		ids = ids[:0]
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pTaskExp)})
		var due [][]byte
		for it.Rewind(); it.Valid() && len(due) < limit; it.Next() {
			k := it.Item().Key()
			if len(k) < len(pTaskExp)+tsLen || parseTS(k[len(pTaskExp):]).After(now) {
				break
			}
			due = append(due, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range due {
			id := string(k[len(pTaskExp)+tsLen:])
			if err := txn.Delete(k); err != nil {
				return err
			}
			t, err := readTaskHead(txn, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if t.Status != store.TaskSucceeded {
				continue
			}
			t.Status = store.TaskExpired
			if err := writeTaskHead(txn, &t); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// indexTaskCollections gives the tasks of a store written before the
// collection index their entries, once.
func (s *Store) indexTaskCollections() error {
	var done bool
	if err := s.db.View(func(txn *badger.Txn) (err error) {
		done, err = exists(txn, taskCollDoneKey)
		return err
	}); err != nil || done {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		return scanPrefix(txn, []byte(pTask), true, func(it *badger.Item) error {
			return it.Value(func(v []byte) error {
				var t store.Task
				if err := json.Unmarshal(v, &t); err != nil {
					return nil // not ours to judge here; reads report it
				}
				if !validID(t.AccountID) || !validID(t.ID) {
					return nil
				}
				n++
				return wb.Set(taskCollKey(&t), nil)
			})
		})
	})
	if err != nil {
		return fmt.Errorf("badgerstore: indexing tasks by collection: %w", err)
	}
	if err := wb.Set(taskCollDoneKey, nil); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	if n > 0 {
		s.log.Info("tasks indexed by collection", "tasks", n)
	}
	return nil
}

var _ store.Tasks = (*Store)(nil)
