package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

func running(owner string, now time.Time) store.IdemRecord {
	return store.IdemRecord{Owner: owner, Fingerprint: []byte("fp-" + owner), State: store.IdemRunning,
		CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
}

func testIdempotency(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := t0

	got, won, err := s.ClaimIdempotencyKey(ctx, "a", "k1", running("r1", now), now)
	mustNil(t, "claim", err)
	if !won || got.Owner != "r1" {
		t.Fatalf("first claim: won=%v owner=%q", won, got.Owner)
	}
	got, won, err = s.ClaimIdempotencyKey(ctx, "a", "k1", running("r2", now), now.Add(time.Second))
	mustNil(t, "second claim", err)
	if won || got.Owner != "r1" || got.State != store.IdemRunning || string(got.Fingerprint) != "fp-r1" {
		t.Fatalf("second claim: won=%v record %+v", won, got)
	}
	// Keys are per account.
	if _, won, err := s.ClaimIdempotencyKey(ctx, "b", "k1", running("r3", now), now); err != nil || !won {
		t.Fatalf("another account's claim: won=%v, %v", won, err)
	}

	// A failed call releases the key; only its owner can.
	mustNil(t, "release by another", s.ReleaseIdempotencyKey(ctx, "a", "k1", "r2"))
	if _, won, _ := s.ClaimIdempotencyKey(ctx, "a", "k1", running("r2", now), now); won {
		t.Fatal("a release by a non-owner freed the key")
	}
	mustNil(t, "release", s.ReleaseIdempotencyKey(ctx, "a", "k1", "r1"))
	mustNil(t, "release twice", s.ReleaseIdempotencyKey(ctx, "a", "k1", "r1"))
	if _, won, err := s.ClaimIdempotencyKey(ctx, "a", "k1", running("r4", now), now); err != nil || !won {
		t.Fatalf("claim after release: won=%v, %v", won, err)
	}

	// Success: the record keeps the response for replay.
	done := running("r4", now)
	done.State, done.Status = store.IdemDone, 200
	done.Header = map[string][]string{"Content-Type": {"text/event-stream"}}
	done.Body = []byte("data: {\"x\":1}\n\ndata: [DONE]\n\n")
	done.ExpiresAt = now.Add(7 * 24 * time.Hour)
	wrong := done
	wrong.Owner = "r1"
	mustIs(t, "complete by a non-owner", s.CompleteIdempotencyKey(ctx, "a", "k1", wrong), store.ErrNotFound)
	mustNil(t, "complete", s.CompleteIdempotencyKey(ctx, "a", "k1", done))
	mustIs(t, "complete twice", s.CompleteIdempotencyKey(ctx, "a", "k1", done), store.ErrNotFound)
	mustNil(t, "release a done record", s.ReleaseIdempotencyKey(ctx, "a", "k1", "r4"))
	got, won, err = s.ClaimIdempotencyKey(ctx, "a", "k1", running("r5", now), now.Add(6*24*time.Hour))
	mustNil(t, "claim a done key", err)
	if won {
		t.Fatal("a done key was claimed again within its retention")
	}
	same(t, "done record", got, done)
	if _, won, _ := s.ClaimIdempotencyKey(ctx, "a", "k1", running("r5", now), done.ExpiresAt); !won {
		t.Fatal("a done key was not free after its retention")
	}

	// A running call whose process died frees the key at the lease's end.
	if _, won, _ := s.ClaimIdempotencyKey(ctx, "a", "k2", running("r6", now), now.Add(10*time.Minute-time.Nanosecond)); !won {
		t.Fatal("claim k2")
	}
	if _, won, _ := s.ClaimIdempotencyKey(ctx, "a", "k2", running("r7", now), now.Add(time.Minute)); won {
		t.Fatal("a live lease was taken over")
	}
	later := now.Add(20 * time.Minute)
	if _, won, _ := s.ClaimIdempotencyKey(ctx, "a", "k2", running("r7", later), later); !won {
		t.Fatal("an expired lease was not taken over")
	}
	mustIs(t, "the old owner completes", s.CompleteIdempotencyKey(ctx, "a", "k2", done), store.ErrNotFound)
}

// Of concurrent claims of one key exactly one wins.
func testIdempotencyRace(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 16
	var wg sync.WaitGroup
	wins := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("r%d", i)
			got, won, err := s.ClaimIdempotencyKey(ctx, "a", "k", running(owner, t0), t0)
			if err != nil {
				t.Error(err)
				return
			}
			if won {
				wins <- owner
			} else if got.State != store.IdemRunning {
				t.Errorf("loser saw %+v", got)
			}
		}()
	}
	wg.Wait()
	close(wins)
	var winners []string
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("winners %v, want exactly one", winners)
	}
}
