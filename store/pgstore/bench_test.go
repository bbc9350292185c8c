package pgstore

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
)

// The request path's store work on PostgreSQL, one round trip each (the
// test server runs without fsync: these are the CPU and loopback costs,
// not a disk's). docs/performance-ledger.md has the figures at a million
// rows; these run in make test once each so they cannot rot.

func benchStore(b *testing.B) *Store {
	s, err := Open(b.Context(), Options{URL: testpg.Schema(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.CreateAccount(b.Context(), store.Account{ID: "a", Status: store.AccountActive, CreatedAt: t0}, money.Credits(1_000_000), "x"); err != nil {
		b.Fatal(err)
	}
	return s
}

var benchSeq atomic.Int64

// BenchmarkPlaceHoldSettle is a chat call's money: a hold, then its
// settlement with the row.
func BenchmarkPlaceHoldSettle(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("h", benchSeq.Add(1))
			h := store.Hold{ID: id, AccountID: "a", KeyID: "k", Model: "m", Amount: money.Credits(1), SubmittedAt: t0}
			if _, err := s.PlaceHold(ctx, h); err != nil {
				b.Fatal(err)
			}
			r := &store.LogRow{AccountID: "a", CreatedAt: time.Now(), KeyID: "k", Model: "m", Status: store.StatusSuccess,
				Cost: 1000, RequestID: id}
			if err := s.Settle(ctx, store.Settlement{HoldID: id, Charge: 1000, Row: r}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAdmitRelease is the account limits of one call: admitted in
// the minute and among those in flight, then its place given back.
func BenchmarkAdmitRelease(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if a, err := s.Admit(ctx, "a", 1<<30, 1<<20); err != nil || !a.Allowed {
				b.Fatal(a, err)
			}
			if err := s.Release(ctx, "a"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKeyByHash is the authentication lookup, from the cache.
func BenchmarkKeyByHash(b *testing.B) {
	s := benchStore(b)
	k := store.Key{ID: "k", AccountID: "a", Hash: []byte("h"), Enabled: true, CreatedAt: t0}
	if err := s.CreateKey(b.Context(), k); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.KeyByHash(b.Context(), k.Hash); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetWallet is the balance check at authentication.
func BenchmarkGetWallet(b *testing.B) {
	s := benchStore(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.GetWallet(b.Context(), "a"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
