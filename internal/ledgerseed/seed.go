// Package ledgerseed writes a realistic call log into a store for the
// benchmarks (ledgerbench, consolebench): a model mix with a rare model,
// 90% successes, errors, interruptions and refusals, retried attempts and
// technical views, spread evenly over a period.
package ledgerseed

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// benchModel is a model of the seeded traffic: its share of calls (per
// mille) and its prices in credits per million tokens, as nano per token.
type benchModel struct {
	id                 string
	share              uint64
	inNano, outNano    money.Nano // per token
	cachedNano         money.Nano
	defaultOutputLimit int64
}

// The traffic mix. The rare model (1%) is what a model filter is measured on.
var models = []benchModel{
	{id: "gpt-4o-mini", share: 400, inNano: 150, outNano: 600, cachedNano: 75, defaultOutputLimit: 16384},
	{id: "claude-sonnet-4-5", share: 250, inNano: 3000, outNano: 15000, cachedNano: 300, defaultOutputLimit: 8192},
	{id: "gemini-2.5-flash", share: 150, inNano: 300, outNano: 2500, cachedNano: 75, defaultOutputLimit: 8192},
	{id: "gpt-4o", share: 100, inNano: 2500, outNano: 10000, cachedNano: 1250, defaultOutputLimit: 16384},
	{id: "claude-opus-4-1", share: 90, inNano: 15000, outNano: 75000, cachedNano: 1500, defaultOutputLimit: 8192},
	{id: "o3-pro", share: 10, inNano: 20000, outNano: 80000, cachedNano: 0, defaultOutputLimit: 32768},
}

// RareModel is the 1% model.
const RareModel = "o3-pro"

// splitmix64 gives each row index its own reproducible random bits.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func pickModel(r uint64) *benchModel {
	p := r % 1000
	for i := range models {
		if p < models[i].share {
			return &models[i]
		}
		p -= models[i].share
	}
	return &models[0]
}

// RowAt builds seeded row i of total, spread evenly over [start, end).
// Statuses: 90% success, 6% error, 2% interrupted, 2% rejected.
func RowAt(i, total int, start, end time.Time, acct string, keys []store.Key) store.LogRow {
	r := splitmix64(uint64(i))
	r2 := splitmix64(r)
	span := end.Sub(start)
	created := start.Add(time.Duration(float64(span) * float64(i) / float64(total)))
	created = created.Add(time.Duration(r2%uint64(time.Second)) - time.Second/2)
	k := &keys[(r>>8)%uint64(len(keys))]
	m := pickModel(r >> 16)
	in := int64(200 + (r>>26)%7800)
	out := int64(50 + (r>>40)%1950)
	var cached int64
	if (r>>52)%4 == 0 {
		cached = in / 2
	}
	latency := int64(300 + r2%15000)
	row := store.LogRow{
		AccountID: acct, CreatedAt: created, SubmittedAt: created.Add(-time.Duration(latency) * time.Millisecond),
		KeyID: k.ID, KeyName: k.Name, KeyPrefix: k.Prefix, Model: m.id, Status: store.StatusSuccess,
		InputTokens: in, OutputTokens: out, CachedTokens: cached, LatencyMS: latency,
		RequestID: "req_" + strconv.FormatUint(r|1<<63, 16)[:16] + strconv.FormatUint(uint64(i)|1<<40, 16),
	}
	one := 1
	row.AttemptsCount = &one
	switch p := (r2 >> 20) % 100; {
	case p < 6:
		row.Status = store.StatusError
		row.ErrorCode, row.ErrorMessage = "upstream_error", "upstream answered 500: internal server error"
		row.OutputTokens = out / 3
	case p < 8:
		row.Status = store.StatusInterrupted
		row.OutputTokens = out / 2
	case p < 10:
		row.Status = store.StatusRejected
		row.ErrorCode, row.ErrorMessage = "quota_exceeded", "insufficient balance"
		row.InputTokens, row.OutputTokens, row.CachedTokens, row.AttemptsCount = 0, 0, 0, nil
	}
	if row.Status == store.StatusSuccess && (r2>>30)%20 == 0 {
		two := 2
		row.AttemptsCount = &two
		row.Attempts = []store.Attempt{{Seq: 1, CreatedAt: row.SubmittedAt.Add(time.Second), LatencyMS: 1000,
			ErrorCode: "upstream_error", ErrorMessage: "connection reset by peer"}}
	}
	if row.Status != store.StatusRejected {
		row.Cost = money.Nano(row.InputTokens-row.CachedTokens)*m.inNano + money.Nano(row.CachedTokens)*m.cachedNano +
			money.Nano(row.OutputTokens)*m.outNano
	}
	row.Tech = &store.TechView{
		Request: []store.KV{{K: "protocol", V: "openai_chat"}, {K: "stream", V: strconv.FormatBool(r%2 == 0)},
			{K: "body_bytes", V: strconv.FormatInt(in*4, 10)}},
		Upstream: []store.KV{{K: "protocol", V: "openai_chat"}, {K: "model", V: m.id}},
		Gateway:  []store.KV{{K: "hold", V: (money.Nano(in)*m.inNano + money.Nano(m.defaultOutputLimit)*m.outNano).String()}},
	}
	return row
}

// Seed writes rows [from, to) of total through store.Settle without a
// hold, from workers goroutines, so the store group-commits them.
func Seed(ctx context.Context, st store.Store, from, to, total, workers int, start, end time.Time,
	acct string, keys []store.Key, progress func(done int)) error {
	var next atomic.Int64
	next.Store(int64(from))
	const chunk = 500
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	var done atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= to || ctx.Err() != nil {
					return
				}
				for i := lo; i < min(lo+chunk, to); i++ {
					row := RowAt(i, total, start, end, acct, keys)
					if err := st.Settle(ctx, store.Settlement{Row: &row}); err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("seed row %d: %w", i, err) })
						return
					}
				}
				if n := done.Add(int64(min(lo+chunk, to) - lo)); progress != nil && n%100_000 < chunk {
					progress(from + int(n))
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
