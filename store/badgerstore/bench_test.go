package badgerstore

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// BenchmarkSettle64 is the request path's store work, a hold then its
// settlement, from 64 goroutines on one account.
func BenchmarkSettle64(b *testing.B) { benchSettle(b, 64) }

// BenchmarkSettle1 is the same one call at a time: what a call at c=1
// waits for.
func BenchmarkSettle1(b *testing.B) { benchSettle(b, 1) }

func benchSettle(b *testing.B, conc int) {
	for _, strict := range []bool{false, true} {
		b.Run(fmt.Sprintf("strict=%v", strict), func(b *testing.B) {
			s := benchStore(b, Options{Strict: strict}, money.Credits(1<<30))
			ctx := b.Context()
			var n atomic.Int64
			call := func() bool {
				id := "req-" + strconv.FormatInt(n.Add(1), 10)
				if _, err := s.PlaceHold(ctx, benchHold(id)); err != nil {
					b.Error(err)
					return false
				}
				if err := s.Settle(ctx, benchSettlement(id)); err != nil {
					b.Error(err)
					return false
				}
				return true
			}
			b.ReportAllocs()
			b.ResetTimer()
			if conc == 1 {
				for b.Loop() {
					if !call() {
						return
					}
				}
				return
			}
			b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !call() {
						return
					}
				}
			})
		})
	}
}

// BenchmarkSettleApart is BenchmarkSettle1 with each hold settled in a
// later batch than the one that placed it, as a call longer than the
// apply delay is (a model's answer takes seconds): Badger then gets the
// hold and its deletion too, where the other benchmarks' holds, settled
// at once, are never written.
func BenchmarkSettleApart(b *testing.B) {
	s := benchStore(b, Options{}, money.Credits(1<<30))
	ctx := b.Context()
	// More calls than the queue can hold lie between a hold and its
	// settlement, so they are never in one batch.
	const apart = maxQueued
	hold := func(i int) string {
		id := "req-" + strconv.Itoa(i)
		if _, err := s.PlaceHold(ctx, benchHold(id)); err != nil {
			b.Fatal(err)
		}
		return id
	}
	ids := make([]string, 0, apart)
	for i := range apart {
		ids = append(ids, hold(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := apart; b.Loop(); i++ {
		if err := s.Settle(ctx, benchSettlement(ids[i%apart])); err != nil {
			b.Fatal(err)
		}
		ids[i%apart] = hold(i)
	}
}

// benchStore opens a store in a temporary directory with the account
// "a" holding credit, closed when the benchmark ends.
func benchStore(b *testing.B, o Options, credit money.Nano) *Store {
	s, err := Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.CreateAccount(b.Context(), store.Account{ID: "a"}, credit, ""); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchHold and benchSettlement are a chat call's store work: a hold,
// then its settlement with a row.
func benchHold(id string) store.Hold {
	return store.Hold{ID: id, AccountID: "a", KeyID: "k", Model: "m", Amount: 1000, SubmittedAt: time.Now()}
}

func benchSettlement(id string) store.Settlement {
	row := &store.LogRow{AccountID: "a", CreatedAt: time.Now(), KeyID: "k", Model: "m",
		Status: store.StatusSuccess, InputTokens: 100, OutputTokens: 200, Cost: 900, RequestID: id}
	return store.Settlement{HoldID: id, Charge: 900, Row: row}
}

// benchRows is how many rows BenchmarkQueryLogsPage seeds; set
// TOLLGATE_BENCH_ROWS=1000000 for the full-size figure.
func benchRows(b *testing.B) int {
	if v := os.Getenv("TOLLGATE_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	return 100_000
}

// seedBench writes n rows of one account straight through a write batch,
// with the same keys Settle writes.
func seedBench(b *testing.B, s *Store, n int) {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	statuses := []string{store.StatusSuccess, store.StatusSuccess, store.StatusSuccess, store.StatusError}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := uint64(i + 1)
		r := &store.LogRow{
			AccountID: "a", CreatedAt: base.Add(time.Duration(i) * time.Second), KeyID: fmt.Sprintf("k%d", i%10),
			Model: fmt.Sprintf("m%d", i%7), Status: statuses[i%4], InputTokens: 1000, OutputTokens: 500,
			Cost: money.Nano(i), RequestID: "req-" + strconv.Itoa(i), KeyName: "main", KeyPrefix: "tg-abcd",
		}
		if r.Status == store.StatusError {
			r.ErrorCode = "upstream_error"
		}
		idx := encodeIndex(nil, r)
		for _, e := range [][2][]byte{
			{logKey(id), encodeRow(nil, r)},
			{appendPos(logAcctPrefix("a"), r.CreatedAt, id), idx},
			{appendPos(logKeyPrefix("a", r.KeyID), r.CreatedAt, id), idx},
			{appendID(logRefPrefix(r.RequestID), id), nil},
		} {
			if err := wb.Set(e[0], e[1]); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := wb.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkQueryLogsPage reads one 50-row page of a large account.
func BenchmarkQueryLogsPage(b *testing.B) {
	n := benchRows(b)
	dir := b.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	seedBench(b, s, n)
	// Reopen so the rows sit in tables, as an account's history does,
	// not in the memtable (whose reverse walk is a search per step).
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mid := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n/2) * time.Second)
	queries := []struct {
		desc string
		q    store.LogQuery
	}{
		{"newest", store.LogQuery{}},
		{"filtered", store.LogQuery{Statuses: []string{store.StatusError}, Models: []string{"m3"}}},
		{"rare filter", store.LogQuery{Models: []string{"nope"}, From: mid}},
		{"one key", store.LogQuery{KeyID: "k3"}},
		{"cursor mid-way", store.LogQuery{After: &store.LogPosition{CreatedAt: mid, ID: uint64(n / 2)}, Asc: true}},
		{"ref", store.LogQuery{Ref: "req-" + strconv.Itoa(n/3)}},
	}
	for _, tc := range queries {
		b.Run(tc.desc, func(b *testing.B) {
			q := tc.q
			q.AccountID, q.Limit = "a", 50
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.QueryLogs(b.Context(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkKeyByHash(b *testing.B) {
	s := benchStore(b, Options{}, 0)
	ctx := b.Context()
	hash := []byte("0123456789abcdef0123456789abcdef")
	k := store.Key{ID: "k", AccountID: "a", Name: "main", Prefix: "tg-0123", Hash: hash, Sealed: make([]byte, 60), Enabled: true, Kind: store.KindConsole}
	if err := s.CreateKey(ctx, k); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.KeyByHash(ctx, hash); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRowCodec compares the row encoding with encoding/json.
func BenchmarkRowCodec(b *testing.B) {
	r := fullRow()
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = encodeRow(buf[:0], &r)
			if _, err := decodeRow(buf, 1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes/row")
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		var v []byte
		for b.Loop() {
			var err error
			if v, err = json.Marshal(&r); err != nil {
				b.Fatal(err)
			}
			var got store.LogRow
			if err := json.Unmarshal(v, &got); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(v)), "bytes/row")
	})
}
