package badgerstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

func fullRow() store.LogRow {
	n, a := int64(4), 2
	exp := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	return store.LogRow{
		ID: 77, AccountID: "acct", CreatedAt: time.Date(2025, 5, 6, 7, 8, 9, 123456789, time.UTC),
		SubmittedAt: time.Date(1969, 12, 31, 23, 59, 59, 999, time.UTC), KeyID: "k", KeyName: "n", KeyPrefix: "p",
		Model: "m", Status: store.StatusError, ErrorCode: "e", ErrorMessage: "msg", InputTokens: -5,
		OutputTokens: 1 << 62, CachedTokens: 3, UnitCount: &n, UnitType: "video", Cost: money.Min,
		LatencyMS: 9, RequestID: "r", TaskID: "t", ResultURLs: []string{"u1", ""}, ResultExpiresAt: &exp,
		AttemptsCount: &a, Attempts: []store.Attempt{{Seq: 1, CreatedAt: exp, LatencyMS: 2, ErrorCode: "x", ErrorMessage: "y"}},
		Tech: &store.TechView{Kind: "video", Request: []store.KV{{K: "a", V: "b"}}, RequestNote: "note"},
	}
}

func TestRowCodec(t *testing.T) {
	tests := []struct {
		desc string
		row  store.LogRow
	}{
		{"every field", fullRow()},
		{"zero row", store.LogRow{ID: 1}},
		{"empty tech view", store.LogRow{ID: 2, Tech: &store.TechView{}}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			v := encodeRow(nil, &tc.row)
			got, err := decodeRow(v, tc.row.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.row) {
				t.Fatalf("round trip:\n got  %+v\n want %+v", got, tc.row)
			}
			for n := range len(v) {
				if _, err := decodeRow(v[:n], 1); err == nil {
					t.Fatalf("a row cut to %d of %d bytes decoded", n, len(v))
				}
			}
			if _, err := decodeRow(append(v, 0), 1); err == nil {
				t.Fatal("a row with a trailing byte decoded")
			}
		})
	}
}

func TestRecordCodecs(t *testing.T) {
	ts := time.Date(2025, 1, 1, 0, 0, 0, 1, time.UTC)
	k := store.Key{ID: "k", AccountID: "a", Name: "n", Prefix: "p", Hash: []byte{0, 1}, Sealed: []byte{2},
		RestrictModels: true, AllowedModels: []string{"m"}, ExpiresAt: &ts, Enabled: true, LogsAccountScope: true,
		Kind: store.KindDesktop, CreatedAt: ts, LastUsedAt: &ts}
	gotK, err := decodeKey(encodeKey(&k))
	if err != nil || !reflect.DeepEqual(gotK, k) {
		t.Fatalf("key round trip = %+v, %v", gotK, err)
	}
	h := store.Hold{ID: "h", AccountID: "a", KeyID: "k", KeyName: "n", KeyPrefix: "p", Model: "m", UnitType: "image", Amount: 5, SubmittedAt: ts}
	gotH, err := decodeHold(encodeHold(nil, &h))
	if err != nil || gotH != h {
		t.Fatalf("hold round trip = %+v, %v", gotH, err)
	}
	a := store.Account{ID: "a", Name: "n", Status: store.AccountDisabled, CreatedAt: ts, RPM: 1, Concurrency: 2}
	gotA, err := decodeAccount(encodeAccount(&a))
	if err != nil || gotA != a {
		t.Fatalf("account round trip = %+v, %v", gotA, err)
	}
	if _, err := decodeKey([]byte{vKey + 1}); err == nil {
		t.Fatal("a key of an unknown version decoded")
	}
}

func TestTimeKeysSortInTimeOrder(t *testing.T) {
	times := []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Unix(1, 0),
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		a, b := appendTS(nil, times[i-1]), appendTS(nil, times[i])
		if bytes.Compare(a, b) >= 0 {
			t.Fatalf("%v does not sort before %v", times[i-1], times[i])
		}
		if got := parseTS(b); !got.Equal(times[i]) {
			t.Fatalf("parseTS = %v, want %v", got, times[i])
		}
		// Within one time, positions sort by id.
		if p, q := appendPos(nil, times[i], 255), appendPos(nil, times[i], 256); bytes.Compare(p, q) >= 0 {
			t.Fatal("id 255 does not sort before 256")
		}
	}
}

func TestPrefixesAreDistinct(t *testing.T) {
	ps := []string{pAccount, pWallet, pLedger, pHold, pKey, pKeyHash, pKeyAcct, pKeyUse, pLog, pLogAcct, pLogKey, pLogRef, pModel, pSeq,
		pMeta, pKeyUsed, pIdem, pLogMod, pLogErr, pTask, pTaskJob, pTaskBody, pTaskAcct, pTaskOpen, pBook}
	for i, a := range ps {
		if !strings.HasSuffix(a, "/") {
			t.Errorf("prefix %q does not end in /", a)
		}
		for j, b := range ps {
			if i != j && strings.HasPrefix(b, a) {
				t.Errorf("prefix %q is a prefix of %q", a, b)
			}
		}
	}
}

// abandon stops s without applying the moves still queued and without
// handing back its id leases, so the journal holds moves Badger lacks, as
// after a crash; Badger itself is then closed cleanly (a real kill, which
// leaves Badger to recover too, is TestMoneyMovesSurviveSIGKILL's).
func abandon(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.health.stop)
	<-s.health.done
	b := s.books
	b.mu.Lock()
	b.discard = true
	b.mu.Unlock()
	close(b.stop)
	<-b.done
	if b.j != nil {
		if err := b.j.close(false); err != nil {
			t.Fatal(err)
		}
	}
	close(s.stopGC)
	<-s.gcDone
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestIDsNotReusedAfterCrash(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openTemp(t, dir, Options{})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, 1, "x"); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 3 {
		r := &store.LogRow{AccountID: "a", RequestID: "r"}
		if err := s.Settle(ctx, store.Settlement{Row: r}); err != nil {
			t.Fatal(err)
		}
		last = r.ID
	}
	abandon(t, s)

	s = openTemp(t, dir, Options{})
	r := &store.LogRow{AccountID: "a", RequestID: "after"}
	if err := s.Settle(ctx, store.Settlement{Row: r}); err != nil {
		t.Fatal(err)
	}
	if r.ID <= last {
		t.Fatalf("id %d after a crash, want above %d", r.ID, last)
	}
	rows, err := s.QueryLogs(ctx, store.LogQuery{AccountID: "a"})
	if err != nil || len(rows) != 4 {
		t.Fatalf("rows after crash = %d, %v; want 4", len(rows), err)
	}
	if l, err := s.ListLedger(ctx, "a"); err != nil || len(l) != 1 {
		t.Fatalf("ledger after crash = %+v, %v", l, err)
	}
}

// A batch too big for one transaction is committed in several, and every
// settlement in it is applied once.
func TestBatchSplitsOnTxnTooBig(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t, t.TempDir(), Options{memTableSize: 256 << 10, applyDelay: time.Hour})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(1000), ""); err != nil {
		t.Fatal(err)
	}
	const n = 2 * maxBatch
	ids := map[uint64]bool{}
	for i := range n {
		h := store.Hold{ID: fmt.Sprintf("h%03d", i), AccountID: "a", KeyID: "k", Amount: 1}
		if _, err := s.PlaceHold(ctx, h); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			continue // half the holds stay open: written to Badger, not cancelled in the batch
		}
		r := &store.LogRow{AccountID: "a", KeyID: "k", RequestID: h.ID, TaskID: "t" + h.ID, ErrorMessage: strings.Repeat("x", 500)}
		if err := s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: 1, Row: r}); err != nil {
			t.Fatal(err)
		}
		if ids[r.ID] {
			t.Fatalf("id %d twice", r.ID)
		}
		ids[r.ID] = true
	}
	if got := s.books.applied.Load(); got >= s.books.seq {
		t.Fatalf("the moves were applied already (%d of %d); the test needs them queued", got, s.books.seq)
	}
	// The reads wait for the queue, which the urge commits in several parts.
	rows, err := s.QueryLogs(ctx, store.LogQuery{AccountID: "a"})
	if err != nil || len(rows) != n/2 {
		t.Fatalf("%d rows, %v; want %d", len(rows), err, n/2)
	}
	if u, _ := s.KeyUsage(ctx, "k"); u != n/2 {
		t.Fatalf("key usage = %d, want %d", u, n/2)
	}
	s2 := reopen(t, s)
	w, err := s2.GetWallet(ctx, "a")
	if err != nil || w.Balance != money.Credits(1000)-n/2 || w.Held != n/2 {
		t.Fatalf("wallet after reopen = %+v, %v", w, err)
	}
	holds, err := s2.OpenHolds(ctx)
	if err != nil || len(holds) != n/2 {
		t.Fatalf("%d open holds after reopen, %v; want %d", len(holds), err, n/2)
	}
}

// reopen closes s cleanly and opens its directory again.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	dir := s.db.Opts().Dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return openTemp(t, dir, Options{})
}

func TestBadgerLogsRoutedToHclog(t *testing.T) {
	tests := []struct {
		desc  string
		level hclog.Level
		log   func(badgerLogger)
		want  string // "" for nothing
	}{
		{"error", hclog.Info, func(b badgerLogger) { b.Errorf("disk %s\n", "full") }, "[ERROR] disk full"},
		{"warning", hclog.Info, func(b badgerLogger) { b.Warningf("slow") }, "[WARN]  slow"},
		{"info is debug", hclog.Info, func(b badgerLogger) { b.Infof("replaying") }, ""},
		{"info at debug", hclog.Debug, func(b badgerLogger) { b.Infof("replaying") }, "[DEBUG] replaying"},
		{"debug is trace", hclog.Debug, func(b badgerLogger) { b.Debugf("detail") }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(badgerLogger{hclog.New(&hclog.LoggerOptions{Output: &buf, Level: tc.level})})
			if got := buf.String(); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("logged %q, want %q", got, tc.want)
			}
		})
	}
}

// Every kind of money move that was journaled but not yet applied when the
// process died is applied on the next open, once.
func TestJournalReplayAfterCrash(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openTemp(t, dir, Options{applyDelay: time.Hour})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(50), "sign-up"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Credit(ctx, "a", money.Credits(10), "top-up"); err != nil {
		t.Fatal(err)
	}
	// Queued only from here on: CreateAccount and Credit wait for Badger.
	for _, id := range []string{"settled", "open"} {
		if _, err := s.PlaceHold(ctx, store.Hold{ID: id, AccountID: "a", KeyID: "k", Amount: money.Credits(4)}); err != nil {
			t.Fatal(err)
		}
	}
	r := &store.LogRow{AccountID: "a", KeyID: "k", RequestID: "settled", Status: store.StatusSuccess, Cost: money.Credits(3)}
	if err := s.Settle(ctx, store.Settlement{HoldID: "settled", Charge: money.Credits(3), Row: r}); err != nil {
		t.Fatal(err)
	}
	if s.books.applied.Load() == s.books.seq {
		t.Fatal("the moves were applied before the crash; the test needs them queued")
	}
	abandon(t, s)

	for round := range 2 { // the second open finds a journal already replayed
		s = openTemp(t, dir, Options{})
		w, err := s.GetWallet(ctx, "a")
		if err != nil || w.Balance != money.Credits(57) || w.Held != money.Credits(4) {
			t.Fatalf("round %d: wallet %+v, %v; want balance 57 held 4", round, w, err)
		}
		holds, err := s.OpenHolds(ctx)
		if err != nil || len(holds) != 1 || holds[0].ID != "open" {
			t.Fatalf("round %d: open holds %+v, %v", round, holds, err)
		}
		if u, err := s.KeyUsage(ctx, "k"); err != nil || u != money.Credits(3) {
			t.Fatalf("round %d: key usage %s, %v", round, u, err)
		}
		got, err := s.GetLog(ctx, r.ID)
		if err != nil || got.RequestID != "settled" || got.Cost != money.Credits(3) {
			t.Fatalf("round %d: row %+v, %v", round, got, err)
		}
		if err := s.Settle(ctx, store.Settlement{HoldID: "settled", Row: &store.LogRow{AccountID: "a"}}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: settling the settled hold again: %v", round, err)
		}
		if l, err := s.ListLedger(ctx, "a"); err != nil || len(l) != 2 {
			t.Fatalf("round %d: ledger %+v, %v", round, l, err)
		}
		abandon(t, s)
	}
}

// A record cut by the crash (the process died inside its write) is
// dropped; the records before it are applied.
func TestJournalTornTail(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openTemp(t, dir, Options{applyDelay: time.Hour})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(50), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlaceHold(ctx, store.Hold{ID: "h1", AccountID: "a", Amount: money.Credits(1)}); err != nil {
		t.Fatal(err)
	}
	path := s.books.j.path(s.books.j.segments[len(s.books.j.segments)-1])
	abandon(t, s)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 40, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = openTemp(t, dir, Options{})
	if w, err := s.GetWallet(ctx, "a"); err != nil || w.Held != money.Credits(1) {
		t.Fatalf("wallet %+v, %v; want the first hold only", w, err)
	}
	if _, err := s.PlaceHold(ctx, store.Hold{ID: "h2", AccountID: "a", Amount: money.Credits(1)}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if w, err := s.GetWallet(ctx, "a"); err != nil || w.Held != money.Credits(2) {
		t.Fatalf("wallet after reopen %+v, %v", w, err)
	}
}

// A hold settled before Badger got it is never written there; one that
// was applied first is deleted by its settlement.
func TestHoldsSettledInTheBatchSkipBadger(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t, t.TempDir(), Options{applyDelay: time.Hour})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(50), ""); err != nil {
		t.Fatal(err)
	}
	holdInBadger := func(id string) bool {
		var ok bool
		_ = s.db.View(func(txn *badger.Txn) error {
			var err error
			ok, err = exists(txn, holdKey(id))
			return err
		})
		return ok
	}
	place := func(id string) {
		if _, err := s.PlaceHold(ctx, store.Hold{ID: id, AccountID: "a", Amount: money.Credits(1)}); err != nil {
			t.Fatal(err)
		}
	}
	settle := func(id string) {
		if err := s.Settle(ctx, store.Settlement{HoldID: id, Charge: money.Credits(1), Row: &store.LogRow{AccountID: "a", RequestID: id}}); err != nil {
			t.Fatal(err)
		}
	}
	place("quick")
	settle("quick")
	place("slow")
	if err := s.seen(ctx); err != nil {
		t.Fatal(err)
	}
	if holdInBadger("quick") || !holdInBadger("slow") {
		t.Fatalf("after the first batch: quick in Badger %v (want false), slow %v (want true)", holdInBadger("quick"), holdInBadger("slow"))
	}
	settle("slow")
	if err := s.seen(ctx); err != nil {
		t.Fatal(err)
	}
	if holdInBadger("slow") {
		t.Fatal("the settled hold is still in Badger")
	}
	var w store.Wallet
	err := s.db.View(func(txn *badger.Txn) error {
		var refused, err error
		w, refused, err = readWallet(txn, "a")
		return errors.Join(refused, err)
	})
	if err != nil || w.Balance != money.Credits(48) || w.Held != 0 {
		t.Fatalf("wallet in Badger %+v, %v", w, err)
	}
}

// Concurrent moves in strict mode across many small segments: every one
// is fsynced before it returns (group commit), rotation never loses or
// reorders one, and applied segments are removed.
func TestJournalRotatesUnderConcurrentStrictMoves(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s := openTemp(t, dir, Options{Strict: true, segmentMax: 4 << 10, applyDelay: time.Hour})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(1000), ""); err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make(chan error, n)
	for i := range n {
		go func() {
			id := fmt.Sprintf("h%03d", i)
			if _, err := s.PlaceHold(ctx, store.Hold{ID: id, AccountID: "a", KeyID: "k", Amount: 2}); err != nil {
				errs <- err
				return
			}
			errs <- s.Settle(ctx, store.Settlement{HoldID: id, Charge: 1, Row: &store.LogRow{AccountID: "a", KeyID: "k", RequestID: id}})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// The applier may drop applied segments meanwhile (a long queue urges
	// it), so count the rotations, under the books lock.
	s.books.mu.Lock()
	segs := s.books.j.rotated
	s.books.mu.Unlock()
	if segs < 3 {
		t.Fatalf("%d segments; the test needs rotations", segs)
	}
	abandon(t, s)
	s = openTemp(t, dir, Options{})
	w, err := s.GetWallet(ctx, "a")
	if err != nil || w.Balance != money.Credits(1000)-n || w.Held != 0 {
		t.Fatalf("wallet %+v, %v", w, err)
	}
	rows, err := s.QueryLogs(ctx, store.LogQuery{AccountID: "a"})
	if err != nil || len(rows) != n {
		t.Fatalf("%d rows, %v; want %d", len(rows), err, n)
	}
	if segs, _ := os.ReadDir(filepath.Join(dir, journalDirName)); len(segs) != 1 {
		t.Fatalf("%d journal files after the replay, want the fresh one only", len(segs))
	}
}

// The applier sizes its transactions before setting them: the prefix
// txnFit picks is taken by Badger, and is not far below what Badger takes
// (a third more is refused), so a big batch is never set twice. Half the
// holds are settled within the batch (never written), half stay open.
func TestTxnFitPrefixCommits(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t, t.TempDir(), Options{memTableSize: 256 << 10})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(1000), ""); err != nil {
		t.Fatal(err)
	}
	var es []*entry
	seq := s.books.seq
	for i := range 1000 {
		h := store.Hold{ID: fmt.Sprintf("h%04d", i), AccountID: "a", KeyID: "k", Amount: 1}
		seq++
		es = append(es, &entry{seq: seq, kind: kindHold, account: "a", amount: 1, holdID: h.ID, holdVal: encodeHold(nil, &h)})
		if i%2 == 1 {
			continue
		}
		r := &store.LogRow{AccountID: "a", KeyID: "k", Model: "m", RequestID: h.ID,
			CreatedAt: time.Now(), ErrorMessage: strings.Repeat("x", 100*(i%5))}
		seq++
		e := &entry{seq: seq, kind: kindSettle, account: "a", holdID: h.ID, keyID: "k", amount: 1, charge: 1}
		settleKeys(e, r, true, nil)
		setRowID(e, uint64(i+1))
		es = append(es, e)
	}
	n := s.txnFit.prefix(es)
	if n <= 1 || 2*n+n/3 > len(es) {
		t.Fatalf("prefix of %d moves: %d", len(es), n)
	}
	if err := s.commitEntries(es[:n]); err != nil {
		t.Fatalf("the fitted prefix of %d moves: %v", n, err)
	}
	if err := s.commitEntries(es[n : 2*n+n/3]); !errors.Is(err, badger.ErrTxnTooBig) {
		t.Fatalf("a third more than the fitted prefix (%d moves): %v, want ErrTxnTooBig", n, err)
	}
}
