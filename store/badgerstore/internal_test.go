package badgerstore

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

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
		OutputTokens: 1 << 62, CachedTokens: 3, UnitCount: &n, UnitType: "video", Cost: money.Nano(-1 << 63),
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
	gotH, err := decodeHold(encodeHold(&h))
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
	ps := []string{pAccount, pWallet, pLedger, pHold, pKey, pKeyHash, pKeyAcct, pKeyUse, pLog, pLogAcct, pLogKey, pLogRef, pModel, pSeq}
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

// crash stops s the way a killed process would: sequences are not
// released, so their leases are lost.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	s.closed = true
	close(s.ops)
	s.mu.Unlock()
	<-s.writerDone
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
	crash(t, s)

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
// settlement in it succeeds once.
func TestBatchSplitsOnTxnTooBig(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t, t.TempDir(), Options{memTableSize: 256 << 10})
	if err := s.CreateAccount(ctx, store.Account{ID: "a"}, money.Credits(1000), ""); err != nil {
		t.Fatal(err)
	}
	const n = maxBatch
	ops := make([]*op, n)
	for i := range ops {
		h := store.Hold{ID: fmt.Sprintf("h%03d", i), AccountID: "a", KeyID: "k", Amount: 1}
		if _, err := s.PlaceHold(ctx, h); err != nil {
			t.Fatal(err)
		}
		o, err := newSettleOp(ctx, store.Settlement{HoldID: h.ID, Charge: 1, Row: &store.LogRow{
			AccountID: "a", KeyID: "k", RequestID: h.ID, TaskID: "t" + h.ID, ErrorMessage: strings.Repeat("x", 500),
		}})
		if err != nil {
			t.Fatal(err)
		}
		ops[i] = o
	}
	// Run the batch here as the writer would; the writer goroutine is
	// idle meanwhile.
	txns := 0
	for batch := ops; len(batch) > 0; txns++ {
		k := s.commitSome(batch)
		batch = batch[k:]
	}
	if txns < 2 {
		t.Fatalf("%d settlements went in %d transaction(s); the test needs a split", n, txns)
	}
	seen := map[uint64]bool{}
	for _, o := range ops {
		<-o.done
		if o.err != nil {
			t.Fatalf("settle %s: %v", o.row.RequestID, o.err)
		}
		if seen[o.row.ID] {
			t.Fatalf("id %d twice", o.row.ID)
		}
		seen[o.row.ID] = true
	}
	w, err := s.GetWallet(ctx, "a")
	if err != nil || w.Balance != money.Credits(1000)-n || w.Held != 0 {
		t.Fatalf("wallet = %+v, %v", w, err)
	}
	if u, _ := s.KeyUsage(ctx, "k"); u != n {
		t.Fatalf("key usage = %d, want %d", u, n)
	}
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
