package badgerstore

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/storetest"
)

// A task's end journaled but not yet in Badger when the process died is
// applied on the next open, with its settlement, once.
func TestFinishTaskReplayAfterCrash(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openTemp(t, dir, Options{applyDelay: time.Hour})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(50), "sign-up"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := store.Hold{ID: "req-1", AccountID: "a", KeyID: "k", Amount: money.Credits(8), TaskID: "img_1", SubmittedAt: at}
	if _, err := s.PlaceHold(ctx, h); err != nil {
		t.Fatal(err)
	}
	tk := store.Task{ID: "img_1", AccountID: "a", KeyID: "k", Family: "image", Model: "m", Status: store.TaskRunning,
		RequestID: "req-1", HoldID: "req-1", Hold: h.Amount, SubmittedAt: at, Owner: "gw", Job: []byte("job")}
	if err := s.CreateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	tk.Status, tk.Result = store.TaskSucceeded, &store.TaskResult{HTTPStatus: 200, Body: []byte(`{"ok":1}`), Units: 1, Cost: money.Credits(2)}
	row := &store.LogRow{AccountID: "a", KeyID: "k", RequestID: "req-1", TaskID: "img_1", Status: store.StatusSuccess, Cost: money.Credits(2)}
	if err := s.FinishTask(ctx, tk, store.Settlement{HoldID: "req-1", Charge: money.Credits(2), Row: row}); err != nil {
		t.Fatal(err)
	}
	if s.books.applied.Load() == s.books.seq {
		t.Fatal("the end was applied before the crash; the test needs it queued")
	}
	abandon(t, s)
	for round := range 2 {
		s = openTemp(t, dir, Options{})
		w, err := s.GetWallet(ctx, "a")
		if err != nil || w.Balance != money.Credits(48) || w.Held != 0 {
			t.Fatalf("round %d: wallet %+v, %v; want balance 48 held 0", round, w, err)
		}
		got, err := s.GetTask(ctx, "img_1")
		if err != nil || got.Status != store.TaskSucceeded || string(got.Result.Body) != `{"ok":1}` || len(got.Job) != 0 {
			t.Fatalf("round %d: task %+v, %v", round, got, err)
		}
		open, err := s.ListTasks(ctx, store.TaskQuery{AccountID: "a", Unfinished: true})
		if err != nil || len(open) != 0 {
			t.Fatalf("round %d: unfinished %+v, %v", round, open, err)
		}
		if r, err := s.GetLog(ctx, row.ID); err != nil || r.TaskID != "img_1" {
			t.Fatalf("round %d: row %+v, %v", round, r, err)
		}
		if err := s.FinishTask(ctx, tk, store.Settlement{HoldID: "req-1", Charge: money.Credits(2), Row: row}); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("round %d: finishing again: %v", round, err)
		}
		abandon(t, s)
	}
}

func TestTasksDurable(t *testing.T) {
	dir := t.TempDir()
	storetest.RunDurableTasks(t, func(t *testing.T) store.Store { return openTemp(t, dir, Options{}) })
}

// A store whose tasks were written before the collection index gets their
// entries once, at open.
func TestTaskCollectionsIndexedAtOpen(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openTemp(t, dir, Options{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, id := range []string{"vid_1", "vid_2", "img_1"} {
		tk := store.Task{ID: id, AccountID: "a", KeyID: "k", Family: "video", Model: "m", Status: store.TaskRunning,
			RequestID: "req-" + id, HoldID: "req-" + id, SubmittedAt: at, Owner: "gw"}
		if err := s.CreateTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	// As an older version left it: no collection entries, no marker.
	if err := s.db.DropPrefix([]byte(pTaskColl), taskCollDoneKey); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListTasks(ctx, store.TaskQuery{AccountID: "a", Collection: "vid_"}); len(got) != 0 {
		t.Fatalf("entries survived the drop: %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTemp(t, dir, Options{})
	got, err := s.ListTasks(ctx, store.TaskQuery{AccountID: "a", Collection: "vid_"})
	if err != nil || len(got) != 2 || got[0].ID != "vid_2" || got[1].ID != "vid_1" {
		t.Fatalf("after the index: %v %v", got, err)
	}
}
