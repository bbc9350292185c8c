package integration

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLedgerIncrementalSync runs the recommended sync against the binary
// while chat calls write rows concurrently: order=asc, a timestamp-form
// window, next_cursor to the end, the next pull from the previous to
// rewound 5 minutes, dedupe on id. Every call's row (found by its
// x-gateway-trace) must be seen, and no pass may return a row twice.
func TestLedgerIncrementalSync(t *testing.T) {
	g, acct, _ := startDefault(t)
	_, writer := g.Key(acct, nil)
	// Several account-scope readers share the polling, so it stays under
	// each key's 60 logs requests per minute.
	rd := readers{g, acct}
	var pool []string
	for i := 0; i < 8; i++ {
		pool = append(pool, rd.next())
	}
	var turn atomic.Int64
	reader := func() string { return pool[int(turn.Add(1))%len(pool)] }

	const writers, perWriter = 3, 15
	var mu sync.Mutex
	traces := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				prompt := "sync " + strconv.Itoa(w) + "/" + strconv.Itoa(i)
				if i%5 == 4 {
					prompt += " [sim:latency=150ms]"
				}
				c, err := tryDo("POST", g.URL+"/v1/chat/completions", bearer(writer), chatBody("sim-chat", prompt, ""))
				if err != nil {
					t.Error(err)
					return
				}
				if c.Status != 200 {
					t.Errorf("chat: %d %s", c.Status, c.Body)
					return
				}
				mu.Lock()
				traces[c.Header.Get("x-gateway-trace")] = true
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	seen := map[uint64]string{} // id -> request_id, deduped across passes
	from := time.Now().UTC().Add(-time.Minute)
	passes := 0
	pass := func() {
		passes++
		to := time.Now().UTC()
		query := q("scope", "account", "order", "asc", "limit", "7",
			"from", from.Format(time.RFC3339Nano), "to", to.Format(time.RFC3339Nano))
		p := getLogs(t, g, reader(), query)
		inPass := map[uint64]bool{}
		var last time.Time
		for {
			if p.PeriodTo != to.Format(time.RFC3339Nano) {
				t.Fatalf("period_to %s, want %s", p.PeriodTo, to.Format(time.RFC3339Nano))
			}
			for _, r := range p.Data {
				id := uint64(r["id"].(float64))
				if inPass[id] {
					t.Fatalf("row %d twice in one pass", id)
				}
				inPass[id] = true
				at, err := time.Parse(time.RFC3339Nano, r["created_at"].(string))
				if err != nil || at.Before(last) || !at.Before(to) || at.Before(from) {
					t.Fatalf("row %d at %s: out of order or outside [%s, %s)", id, r["created_at"], from, to)
				}
				last = at
				seen[id] = r["request_id"].(string)
			}
			if !p.HasMore {
				break
			}
			p = getLogs(t, g, reader(), q("scope", "account", "order", "asc", "limit", "7", "cursor", *p.NextCursor))
		}
		from = to.Add(-5 * time.Minute)
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(150 * time.Millisecond):
		}
		pass()
	}
	pass() // a periodic sync runs once more after the writers stop

	if len(traces) != writers*perWriter {
		t.Fatalf("%d calls recorded", len(traces))
	}
	got := map[string]int{}
	for _, reqID := range seen {
		got[reqID]++
	}
	for tr := range traces {
		if got[tr] != 1 {
			t.Errorf("call %s seen %d times after dedupe", tr, got[tr])
		}
	}
	// The readers' own requests are not rows; the demo key made none.
	if len(seen) != len(traces) {
		t.Errorf("%d rows seen, %d calls made", len(seen), len(traces))
	}
	if passes < 3 {
		t.Errorf("only %d passes: the sync did not overlap the writes", passes)
	}
}
