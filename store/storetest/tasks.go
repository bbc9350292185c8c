package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// RunTasks is the conformance suite of the Tasks role.
func RunTasks(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("task lifecycle", func(t *testing.T) { t.Parallel(); testTaskLifecycle(t, open(t)) })
	t.Run("task refunded", func(t *testing.T) { t.Parallel(); testTaskRefund(t, open(t)) })
	t.Run("task list", func(t *testing.T) { t.Parallel(); testTaskList(t, open(t)) })
	t.Run("task leases", func(t *testing.T) { t.Parallel(); testTaskLeases(t, open(t)) })
	t.Run("task finish once", func(t *testing.T) { t.Parallel(); testTaskFinishOnce(t, open(t)) })
	t.Run("task claims race", func(t *testing.T) { t.Parallel(); testTaskClaimRace(t, open(t)) })
	t.Run("task collections", func(t *testing.T) { t.Parallel(); testTaskCollections(t, open(t)) })
	t.Run("task records, hide, take", func(t *testing.T) { t.Parallel(); testTaskHideTake(t, open(t)) })
	t.Run("task expiry", func(t *testing.T) { t.Parallel(); testTaskExpiry(t, open(t)) })
}

// newTask places the hold a task owns and writes the task, owned by owner.
func newTask(t *testing.T, s store.Store, account, id, owner string, amount money.Nano, at time.Time) store.Task {
	t.Helper()
	return newFamilyTask(t, s, "image", account, id, owner, amount, at)
}

func newFamilyTask(t *testing.T, s store.Store, family, account, id, owner string, amount money.Nano, at time.Time) store.Task {
	t.Helper()
	h := hold(account, "req-"+id, amount)
	h.TaskID, h.SubmittedAt = id, at
	_, err := s.PlaceHold(t.Context(), h)
	mustNil(t, "hold of "+id, err)
	tk := store.Task{
		ID: id, AccountID: account, KeyID: h.KeyID, KeyName: h.KeyName, KeyPrefix: h.KeyPrefix,
		Family: family, Operation: "generations", Model: "img-1", Status: store.TaskQueued,
		RequestID: h.ID, HoldID: h.ID, Hold: amount, Channel: "ch", Vendor: "sim",
		Job: []byte(`{"prompt":"a cat"}`), SubmittedAt: at, Deadline: at.Add(280 * time.Second),
		NextPollAt: at, Owner: owner, LeaseUntil: at.Add(30 * time.Second),
	}
	mustNil(t, "create task "+id, s.CreateTask(t.Context(), tk))
	return tk
}

// finish ends tk with status and charge, writing its row.
func finish(tk store.Task, status string, charge money.Nano, body string) (store.Task, store.Settlement) {
	end := tk.SubmittedAt.Add(10 * time.Second)
	tk.Status, tk.CompletedAt = status, end
	tk.Result = &store.TaskResult{HTTPStatus: 200, Body: []byte(body), Units: 2, Cost: charge,
		URLs: []string{"https://gw/files/f1"}}
	n := int64(2)
	row := &store.LogRow{
		AccountID: tk.AccountID, CreatedAt: end, SubmittedAt: tk.SubmittedAt, KeyID: tk.KeyID,
		KeyName: tk.KeyName, KeyPrefix: tk.KeyPrefix, Model: tk.Model, Status: store.StatusSuccess,
		UnitCount: &n, UnitType: "image", Cost: charge, RequestID: tk.RequestID, TaskID: tk.ID,
		ResultURLs: tk.Result.URLs,
	}
	if status != store.TaskSucceeded {
		row.Status, row.UnitCount, row.ResultURLs = store.StatusError, nil, nil
	}
	return tk, store.Settlement{HoldID: tk.HoldID, Charge: charge, Row: row}
}

func getTask(t *testing.T, s store.Store, id string) store.Task {
	t.Helper()
	tk, err := s.GetTask(t.Context(), id)
	mustNil(t, "get task "+id, err)
	return tk
}

func testTaskLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	tk := newTask(t, s, "a", "img_1", "gw1", cr(10), t0)
	mustIs(t, "create again", s.CreateTask(ctx, tk), store.ErrExists)
	wantWallet(t, s, "a", cr(100), cr(10))

	got := getTask(t, s, "img_1")
	same(t, "job", string(got.Job), `{"prompt":"a cat"}`)
	same(t, "status", got.Status, store.TaskQueued)

	// Progress by the owner is kept; by anyone else it is refused.
	tk.Status, tk.UpstreamRef, tk.StartedAt, tk.Polls = store.TaskRunning, "up-77", t0.Add(time.Second), 1
	mustNil(t, "update", s.UpdateTask(ctx, tk))
	other := tk
	other.Owner = "gw2"
	mustIs(t, "update by another owner", s.UpdateTask(ctx, other), store.ErrLeaseLost)
	missing := tk
	missing.ID = "img_none"
	mustIs(t, "update missing", s.UpdateTask(ctx, missing), store.ErrNotFound)
	got = getTask(t, s, "img_1")
	same(t, "upstream ref", got.UpstreamRef, "up-77")
	same(t, "status running", got.Status, store.TaskRunning)

	// The hold outlives nothing but the task: it is still open.
	holds, err := s.OpenHolds(ctx)
	mustNil(t, "open holds", err)
	same(t, "hold owner", len(holds) == 1 && holds[0].TaskID == "img_1", true)

	done, st := finish(tk, store.TaskSucceeded, cr(4), `{"data":[{"url":"https://gw/files/f1"}]}`)
	mustNil(t, "finish", s.FinishTask(ctx, done, st))
	wantWallet(t, s, "a", cr(96), 0)
	same(t, "key usage", keyUsage(t, s, "key-a"), cr(4))
	got = getTask(t, s, "img_1")
	same(t, "terminal status", got.Status, store.TaskSucceeded)
	same(t, "result body", string(got.Result.Body), `{"data":[{"url":"https://gw/files/f1"}]}`)
	same(t, "result cost", got.Result.Cost, cr(4))
	same(t, "job dropped", len(got.Job), 0)
	rows := accountRows(t, s, "a")
	same(t, "one row", len(rows), 1)
	same(t, "row task id", rows[0].TaskID, "img_1")
	same(t, "row cost", rows[0].Cost, cr(4))

	// Once ended, it stays ended.
	mustIs(t, "finish again", s.FinishTask(ctx, done, st), store.ErrLeaseLost)
	mustIs(t, "update ended", s.UpdateTask(ctx, tk), store.ErrLeaseLost)
	wantWallet(t, s, "a", cr(96), 0)

	mustNil(t, "drop result", s.DropTaskResult(ctx, "img_1"))
	got = getTask(t, s, "img_1")
	same(t, "body gone", got.Result.BodyGone && len(got.Result.Body) == 0, true)
	same(t, "urls kept", got.Result.URLs, []string{"https://gw/files/f1"})
}

func testTaskRefund(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(50))
	tk := newTask(t, s, "a", "img_r", "gw1", cr(20), t0)
	done, st := finish(tk, store.TaskFailed, 0, `{"error":{"message":"upstream failed"}}`)
	done.Result.HTTPStatus, done.Result.ErrorCode = 502, "upstream_error"
	mustNil(t, "finish failed", s.FinishTask(ctx, done, st))
	wantWallet(t, s, "a", cr(50), 0)
	got := getTask(t, s, "img_r")
	same(t, "failed", got.Status, store.TaskFailed)
	same(t, "http status", got.Result.HTTPStatus, 502)

	// A hidden task (refused at submit) is ended but never listed.
	h := newTask(t, s, "a", "img_h", "gw1", cr(5), t0.Add(time.Second))
	hd, hst := finish(h, store.TaskFailed, 0, `{}`)
	hd.Hidden = true
	hst.Row.Status = store.StatusRejected
	mustNil(t, "finish hidden", s.FinishTask(ctx, hd, hst))
	list, err := s.ListTasks(ctx, store.TaskQuery{AccountID: "a", Family: "image"})
	mustNil(t, "list", err)
	same(t, "hidden left out", len(list) == 1 && list[0].ID == "img_r", true)
	wantWallet(t, s, "a", cr(50), 0)

	// A settlement must name the task's own hold.
	other := newTask(t, s, "a", "img_x", "gw1", cr(1), t0)
	xd, xst := finish(other, store.TaskFailed, 0, `{}`)
	xst.HoldID = "req-img_r"
	if err := s.FinishTask(ctx, xd, xst); err == nil {
		t.Fatal("a task settled a hold not its own")
	}
}

func testTaskList(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(1000))
	newAccount(t, s, "b", cr(1000))
	var all []store.Task
	for i := range 12 {
		at := t0.Add(time.Duration(i) * time.Hour)
		tk := newTask(t, s, "a", fmt.Sprintf("img_%02d", i), "gw1", cr(1), at)
		if i%3 == 0 {
			done, st := finish(tk, store.TaskSucceeded, cr(1), `{}`)
			mustNil(t, "finish", s.FinishTask(ctx, done, st))
			tk.Status = store.TaskSucceeded
		}
		all = append(all, tk)
	}
	// Same instant: ids break the tie.
	twin := newTask(t, s, "a", "img_11b", "gw1", cr(1), all[11].SubmittedAt)
	_ = newFamilyTask(t, s, "video", "a", "vid_1", "gw1", cr(1), t0)
	_ = newTask(t, s, "b", "img_b", "gw1", cr(1), t0)
	_ = twin

	ids := func(ts []store.Task) []string {
		out := []string{}
		for _, tk := range ts {
			out = append(out, tk.ID)
		}
		return out
	}
	list := func(q store.TaskQuery) []string {
		t.Helper()
		q.AccountID = "a"
		got, err := s.ListTasks(ctx, q)
		mustNil(t, "list", err)
		return ids(got)
	}
	same(t, "newest first, limit", list(store.TaskQuery{Family: "image", Limit: 4}),
		[]string{"img_11b", "img_11", "img_10", "img_09"})
	same(t, "cursor", list(store.TaskQuery{Family: "image", Limit: 3,
		Before: &store.TaskPosition{SubmittedAt: all[11].SubmittedAt, ID: "img_11"}}),
		[]string{"img_10", "img_09", "img_08"})
	same(t, "status", list(store.TaskQuery{Family: "image", Statuses: []string{store.TaskSucceeded}}),
		[]string{"img_09", "img_06", "img_03", "img_00"})
	same(t, "window", list(store.TaskQuery{Family: "image", From: all[2].SubmittedAt, To: all[5].SubmittedAt}),
		[]string{"img_04", "img_03", "img_02"})
	same(t, "unfinished", list(store.TaskQuery{Unfinished: true, Limit: 3}),
		[]string{"img_11b", "img_11", "img_10"})
	same(t, "all families", len(list(store.TaskQuery{})), 14)
	got, err := s.ListTasks(ctx, store.TaskQuery{AccountID: "b", Family: "image"})
	mustNil(t, "list b", err)
	same(t, "account scope", ids(got), []string{"img_b"})
}

func testTaskLeases(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	live := newTask(t, s, "a", "img_live", "gw1", cr(1), t0)
	dead := newTask(t, s, "a", "img_dead", "gw-old", cr(1), t0)
	dead.LeaseUntil = t0.Add(-time.Minute)
	mustNil(t, "age dead", s.UpdateTask(ctx, dead))
	ended := newTask(t, s, "a", "img_ended", "gw-old", cr(1), t0)
	ended.LeaseUntil = t0.Add(-time.Minute)
	mustNil(t, "age ended", s.UpdateTask(ctx, ended))
	done, st := finish(ended, store.TaskSucceeded, 0, `{}`)
	mustNil(t, "finish", s.FinishTask(ctx, done, st))

	claimed, err := s.ClaimTasks(ctx, "gw2", t0, t0.Add(30*time.Second), 10)
	mustNil(t, "claim", err)
	same(t, "only the dead one", len(claimed) == 1 && claimed[0].ID == "img_dead", true)
	same(t, "previous owner shown", claimed[0].Owner, "gw-old")
	same(t, "job shown", string(claimed[0].Job), `{"prompt":"a cat"}`)
	got := getTask(t, s, "img_dead")
	same(t, "new owner", got.Owner, "gw2")
	mustIs(t, "old owner lost it", s.UpdateTask(ctx, dead), store.ErrLeaseLost)
	again, err := s.ClaimTasks(ctx, "gw3", t0, t0.Add(time.Minute), 10)
	mustNil(t, "claim again", err)
	same(t, "nothing left to claim", len(again), 0)

	lost, err := s.RenewTaskLeases(ctx, "gw1", []string{"img_live", "img_dead", "img_ended", "img_none"}, t0.Add(time.Hour))
	mustNil(t, "renew", err)
	same(t, "lost", lost, []string{"img_dead", "img_ended", "img_none"})
	same(t, "renewed", getTask(t, s, "img_live").LeaseUntil.Equal(t0.Add(time.Hour)), true)
	_ = live
}

func testTaskFinishOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	tk := newTask(t, s, "a", "img_once", "gw1", cr(10), t0)
	errs := run(workers, func(i int) error {
		done, st := finish(tk, store.TaskSucceeded, cr(3), `{}`)
		return s.FinishTask(ctx, done, st)
	})
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrLeaseLost):
			t.Fatalf("finish: %v", err)
		}
	}
	same(t, "exactly one finish", won, 1)
	wantWallet(t, s, "a", cr(97), 0)
	same(t, "one row", len(accountRows(t, s, "a")), 1)
}

func testTaskClaimRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	for i := range 20 {
		tk := newTask(t, s, "a", fmt.Sprintf("img_%d", i), "gw-dead", cr(1), t0)
		tk.LeaseUntil = t0.Add(-time.Second)
		mustNil(t, "age", s.UpdateTask(ctx, tk))
	}
	got := make([][]store.Task, 8)
	errs := run(8, func(i int) (err error) {
		got[i], err = s.ClaimTasks(ctx, fmt.Sprintf("gw%d", i), t0, t0.Add(time.Minute), 20)
		return err
	})
	seen := map[string]int{}
	for i, err := range errs {
		mustNil(t, "claim", err)
		for _, tk := range got[i] {
			seen[tk.ID]++
		}
	}
	same(t, "every task claimed", len(seen), 20)
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("task %s claimed %d times", id, n)
		}
	}
}

// A collection (an id prefix) lists the tasks of every family on one
// route, newest first, with the filters of a family list.
func testTaskCollections(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(1000))
	newAccount(t, s, "b", cr(1000))
	_ = newFamilyTask(t, s, "video", "a", "vid_1", "gw1", cr(1), t0)
	_ = newFamilyTask(t, s, "clip", "a", "vid_2", "gw1", cr(1), t0.Add(time.Minute))
	av := newFamilyTask(t, s, "avatar", "a", "vid_3", "gw1", cr(1), t0.Add(2*time.Minute))
	_ = newFamilyTask(t, s, "avatar", "a", "avt_1", "gw1", cr(1), t0.Add(3*time.Minute))
	_ = newFamilyTask(t, s, "video", "b", "vid_b", "gw1", cr(1), t0)
	done, st := finish(av, store.TaskSucceeded, cr(1), `{}`)
	mustNil(t, "finish", s.FinishTask(ctx, done, st))
	list := func(q store.TaskQuery) []string {
		t.Helper()
		if q.AccountID == "" {
			q.AccountID = "a"
		}
		got, err := s.ListTasks(ctx, q)
		mustNil(t, "list", err)
		out := []string{}
		for _, tk := range got {
			out = append(out, tk.ID)
		}
		return out
	}
	same(t, "a collection of three families", list(store.TaskQuery{Collection: "vid_"}), []string{"vid_3", "vid_2", "vid_1"})
	same(t, "limit and cursor", list(store.TaskQuery{Collection: "vid_", Limit: 1,
		Before: &store.TaskPosition{SubmittedAt: t0.Add(2 * time.Minute), ID: "vid_3"}}), []string{"vid_2"})
	same(t, "status", list(store.TaskQuery{Collection: "vid_", Statuses: []string{store.TaskSucceeded}}), []string{"vid_3"})
	same(t, "window", list(store.TaskQuery{Collection: "vid_", From: t0.Add(time.Second)}), []string{"vid_3", "vid_2"})
	same(t, "another collection of one family", list(store.TaskQuery{Collection: "avt_"}), []string{"avt_1"})
	same(t, "account scope", list(store.TaskQuery{AccountID: "b", Collection: "vid_"}), []string{"vid_b"})
	same(t, "collection of an id", store.TaskCollection("vid_0f3a"), "vid_")
	same(t, "no collection", store.TaskCollection("plain"), "")
}

// A record travels with the task; an ended task hides; an operator takes
// a running task from its owner.
func testTaskHideTake(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	tk := newFamilyTask(t, s, "voice", "a", "voc_1", "gw1", cr(1), t0)
	tk.Record = []byte(`{"id":"voc_1","name":"Ada"}`)
	mustNil(t, "update with a record", s.UpdateTask(ctx, tk))
	same(t, "record", string(getTask(t, s, "voc_1").Record), `{"id":"voc_1","name":"Ada"}`)
	mustIs(t, "hide running", s.HideTask(ctx, "voc_1"), store.ErrTaskRunning)
	mustIs(t, "hide missing", s.HideTask(ctx, "voc_none"), store.ErrNotFound)

	prev, err := s.TakeTask(ctx, "voc_1", "admin", t0.Add(time.Hour))
	mustNil(t, "take", err)
	same(t, "taken as it was", prev.Owner == "gw1" && string(prev.Job) == `{"prompt":"a cat"}`, true)
	mustIs(t, "the old owner lost it", s.UpdateTask(ctx, tk), store.ErrLeaseLost)
	done, st := finish(tk, store.TaskSucceeded, cr(1), `{}`)
	mustIs(t, "the old owner cannot end it", s.FinishTask(ctx, done, st), store.ErrLeaseLost)
	done.Owner = "admin"
	mustNil(t, "the new owner ends it", s.FinishTask(ctx, done, st))
	mustIs(t, "take an ended task", func() error { _, err := s.TakeTask(ctx, "voc_1", "x", t0); return err }(), store.ErrLeaseLost)
	mustIs(t, "take a missing task", func() error { _, err := s.TakeTask(ctx, "voc_none", "x", t0); return err }(), store.ErrNotFound)

	got := getTask(t, s, "voc_1")
	same(t, "record kept at the end", string(got.Record), `{"id":"voc_1","name":"Ada"}`)
	mustNil(t, "hide", s.HideTask(ctx, "voc_1"))
	same(t, "hidden", getTask(t, s, "voc_1").Hidden, true)
	list, err := s.ListTasks(ctx, store.TaskQuery{AccountID: "a", Collection: "voc_"})
	mustNil(t, "list", err)
	same(t, "a hidden task is not listed", len(list), 0)
	wantWallet(t, s, "a", cr(99), 0)
}

// A succeeded task whose result passed its retention becomes expired; no
// money moves.
func testTaskExpiry(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(100))
	var want []string
	for i, at := range []time.Duration{time.Hour, 2 * time.Hour, 48 * time.Hour} {
		tk := newFamilyTask(t, s, "video", "a", fmt.Sprintf("vid_e%d", i), "gw1", cr(2), t0)
		done, st := finish(tk, store.TaskSucceeded, cr(1), `{}`)
		done.ExpireAt = t0.Add(at)
		mustNil(t, "finish", s.FinishTask(ctx, done, st))
		if at < 24*time.Hour {
			want = append(want, tk.ID)
		}
	}
	failed := newFamilyTask(t, s, "video", "a", "vid_f", "gw1", cr(2), t0)
	fd, fst := finish(failed, store.TaskFailed, 0, `{}`)
	fd.ExpireAt = t0
	mustNil(t, "finish failed", s.FinishTask(ctx, fd, fst))
	noExpiry := newFamilyTask(t, s, "image", "a", "img_n", "gw1", cr(2), t0)
	nd, nst := finish(noExpiry, store.TaskSucceeded, cr(1), `{}`)
	mustNil(t, "finish without expiry", s.FinishTask(ctx, nd, nst))
	wantWallet(t, s, "a", cr(96), 0)

	got, err := s.ExpireTasks(ctx, t0.Add(3*time.Hour), 10)
	mustNil(t, "expire", err)
	same(t, "expired", got, want)
	for _, id := range want {
		same(t, id+" status", getTask(t, s, id).Status, store.TaskExpired)
	}
	same(t, "a later one still succeeded", getTask(t, s, "vid_e2").Status, store.TaskSucceeded)
	same(t, "a failed task is not expired", getTask(t, s, "vid_f").Status, store.TaskFailed)
	same(t, "a task without expiry is kept", getTask(t, s, "img_n").Status, store.TaskSucceeded)
	again, err := s.ExpireTasks(ctx, t0.Add(3*time.Hour), 10)
	mustNil(t, "expire again", err)
	same(t, "once", len(again), 0)
	wantWallet(t, s, "a", cr(96), 0)
	list, err := s.ListTasks(ctx, store.TaskQuery{AccountID: "a", Collection: "vid_", Statuses: []string{store.TaskExpired}})
	mustNil(t, "list expired", err)
	same(t, "listed as expired", len(list), 2)
}

// RunDurableTasks checks that tasks, ended or not, outlive Close. open
// opens the same storage anew each time.
func RunDurableTasks(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := t.Context()
	s := open(t)
	newAccount(t, s, "a", cr(100))
	running := newTask(t, s, "a", "img_run", "gw1", cr(10), t0)
	ended := newTask(t, s, "a", "img_end", "gw1", cr(10), t0.Add(time.Second))
	done, st := finish(ended, store.TaskSucceeded, cr(3), `{"data":[]}`)
	mustNil(t, "finish", s.FinishTask(ctx, done, st))
	mustNil(t, "close", s.Close())

	s = open(t)
	defer s.Close()
	wantWallet(t, s, "a", cr(97), cr(10))
	got := getTask(t, s, "img_run")
	same(t, "running task", got.Status == running.Status && string(got.Job) == string(running.Job), true)
	got = getTask(t, s, "img_end")
	same(t, "ended task", got.Status == store.TaskSucceeded && string(got.Result.Body) == `{"data":[]}`, true)
	holds, err := s.OpenHolds(ctx)
	mustNil(t, "open holds", err)
	same(t, "task hold kept", len(holds) == 1 && holds[0].TaskID == "img_run", true)
}
