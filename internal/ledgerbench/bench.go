package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/ratelimit"
	"github.com/tollgate-gw/tollgate/internal/ledgerseed"
	"github.com/tollgate-gw/tollgate/store"
)

// Config is one benchmark run.
type Config struct {
	Rows      int    // rows seeded over 30 days
	SmallRows int    // rows stored at the first chat-path measurement
	Dir       string // Badger directory; "" = a temporary one, removed after
	// Backend is Badger (default) or Postgres; a Postgres run needs
	// PostgresURL (an empty database) and, to count the server's CPU,
	// PostgresPID (its postmaster).
	Backend     string
	PostgresURL string
	PostgresPID int
	Workers     int // concurrent seeding writers
	// Samples per measurement.
	PageIters, ColdSummaries, WarmSummaries, ExportIters int
	ChatOps                                              int // PlaceHold+Settle pairs per chat-path round
	ChatConcurrency                                      int
	ChatRounds                                           int // rounds per size; the best one is reported
	// NoSettle skips waiting for background work before each measurement
	// (the unit test; its figures are not meant to be read).
	NoSettle bool
	Progress io.Writer
}

// Read is the measurement of one logs API request shape.
type Read struct {
	Name, Query    string
	Samples        int
	P50, P99       time.Duration
	AllocsPerOp    uint64
	BytesPerOp     uint64
	RowsPerAnswer  int
	BytesPerAnswer int
}

// ChatPath is PlaceHold+Settle measured at one store size.
type ChatPath struct {
	StoredRows int
	Ops        int
	Wall       time.Duration
	CPUPerOp   time.Duration
	// ServerCPUPerOp is the database server's CPU (PostgreSQL), beside
	// this process's.
	ServerCPUPerOp time.Duration
	WallPerOp      time.Duration
	AllocsPerOp    uint64
	BytesPerOp     uint64
	HeapInuse      uint64 // after GC, once the round is over
}

// Report is the outcome of Run.
type Report struct {
	Backend         string
	Rows, TotalRows int
	SeedTime        time.Duration
	DiskBytes       int64
	Reads           []Read
	Chat            []ChatPath
	GoVersion       string
	CPUs            int
	// LoadStart and LoadEnd are /proc/loadavg at the start and the end: the
	// machine may be shared, and the figures should be read with them.
	LoadStart, LoadEnd string
}

// acctID holds the seeded rows the reads measure; chatAcct takes the
// chat-path operations, so their rows (all stamped "now") do not crowd the
// newest end of the account the pages read.
const (
	acctID   = "acct-bench"
	chatAcct = "acct-chat"
)

func benchKeys() []store.Key {
	keys := make([]store.Key, 5)
	for i := range keys {
		keys[i] = store.Key{
			ID: "key-" + strconv.Itoa(i), AccountID: acctID, Name: "key " + strconv.Itoa(i),
			Prefix: "sk-tollgate-" + strconv.Itoa(i) + "a", Kind: store.KindConsole, Enabled: true,
			LogsAccountScope: true, Hash: sha256.New().Sum([]byte(strconv.Itoa(i))),
		}
	}
	return keys
}

func (c *Config) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// Run seeds the store, measures, and checks the answers it measured.
func Run(ctx context.Context, c Config) (*Report, error) {
	if c.SmallRows > c.Rows {
		c.SmallRows = c.Rows
	}
	dir := c.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "ledgerbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	b, err := openBackend(ctx, &c, dir)
	if err != nil {
		return nil, err
	}
	defer b.close()
	st := b.st

	keys := benchKeys()
	t0 := time.Now().UTC()
	if err := st.CreateAccount(ctx, store.Account{ID: acctID, Name: "bench", Status: store.AccountActive, CreatedAt: t0},
		money.MustParse("1000000000"), "bench credit"); err != nil {
		return nil, err
	}
	chatKey := store.Key{ID: "key-chat", AccountID: chatAcct, Name: "chat", Prefix: "sk-tollgate-cc",
		Kind: store.KindConsole, Enabled: true, Hash: sha256.New().Sum([]byte("chat"))}
	if err := st.CreateAccount(ctx, store.Account{ID: chatAcct, Name: "chat", Status: store.AccountActive, CreatedAt: t0},
		money.MustParse("1000000000"), "bench credit"); err != nil {
		return nil, err
	}
	for _, k := range append(keys, chatKey) {
		if err := st.CreateKey(ctx, k); err != nil {
			return nil, err
		}
	}
	start, end := t0.Add(-30*24*time.Hour+2*time.Hour), t0.Add(-time.Minute)
	rep := &Report{Backend: cmpOr(c.Backend, Badger), Rows: c.Rows, GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), LoadStart: loadAvg()}
	progress := func(n int) { c.logf("seeded %d rows", n) }

	seedStart := time.Now()
	if err := b.seed(ctx, 0, c.SmallRows, c.Rows, start, end, keys, progress); err != nil {
		return nil, err
	}
	seedTime := time.Since(seedStart)
	chatRows := 0
	if err := b.settle(ctx); err != nil {
		return nil, err
	}
	cp, err := chatPath(ctx, &c, b, chatKey, c.SmallRows+chatRows, "small")
	if err != nil {
		return nil, err
	}
	chatRows += c.ChatOps * c.ChatRounds
	rep.Chat = append(rep.Chat, cp)

	seedStart = time.Now()
	if err := b.seed(ctx, c.SmallRows, c.Rows, c.Rows, start, end, keys, progress); err != nil {
		return nil, err
	}
	rep.SeedTime = seedTime + time.Since(seedStart)
	c.logf("seeded %d rows in %s", c.Rows, rep.SeedTime.Round(time.Millisecond))
	if err := b.settle(ctx); err != nil {
		return nil, err
	}
	cp, err = chatPath(ctx, &c, b, chatKey, c.Rows+chatRows, "large")
	if err != nil {
		return nil, err
	}
	chatRows += c.ChatOps * c.ChatRounds
	rep.Chat = append(rep.Chat, cp)
	rep.TotalRows = c.Rows + chatRows

	if err := b.settle(ctx); err != nil {
		return nil, err
	}
	if rep.Reads, err = reads(ctx, &c, st, keys, c.Rows); err != nil {
		return nil, err
	}
	rep.DiskBytes = b.diskBytes(ctx)
	rep.LoadEnd = loadAvg()
	return rep, nil
}

// chatPath measures PlaceHold+Settle pairs, as the chat path makes them,
// from ChatConcurrency goroutines; the best of ChatRounds rounds counts, so
// a compaction left over from seeding does not pass for the chat path.
func chatPath(ctx context.Context, c *Config, b *backend, key store.Key, stored int, tag string) (ChatPath, error) {
	st := b.st
	var best ChatPath
	for round := 0; round < c.ChatRounds; round++ {
		runtime.GC()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		cpu0, server0 := cpuTime(), b.serverCPU()
		t0 := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		errc := make(chan error, c.ChatConcurrency)
		for w := 0; w < c.ChatConcurrency; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > int64(c.ChatOps) {
						return
					}
					if err := holdAndSettle(ctx, st, key, tag+"-"+strconv.Itoa(round)+"-"+strconv.FormatInt(i, 10)); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		wall := time.Since(t0)
		cpu, server := cpuTime()-cpu0, b.serverCPU()-server0
		runtime.ReadMemStats(&ms1)
		close(errc)
		if err := <-errc; err != nil {
			return best, err
		}
		runtime.GC()
		var ms2 runtime.MemStats
		runtime.ReadMemStats(&ms2)
		n := uint64(c.ChatOps)
		r := ChatPath{
			StoredRows: stored + round*c.ChatOps, Ops: c.ChatOps, Wall: wall,
			CPUPerOp: cpu / time.Duration(n), ServerCPUPerOp: server / time.Duration(n), WallPerOp: wall / time.Duration(n),
			AllocsPerOp: (ms1.Mallocs - ms0.Mallocs) / n, BytesPerOp: (ms1.TotalAlloc - ms0.TotalAlloc) / n,
			HeapInuse: ms2.HeapInuse,
		}
		c.logf("chat path at %d rows, round %d: %s cpu/op, %s wall/op, %d allocs/op", stored, round, r.CPUPerOp, r.WallPerOp, r.AllocsPerOp)
		if round == 0 || r.CPUPerOp+r.ServerCPUPerOp < best.CPUPerOp+best.ServerCPUPerOp {
			best = r
		}
	}
	best.StoredRows = stored
	return best, nil
}

// holdAndSettle is the money part of one chat call: a hold at precharge,
// then the settlement with the call's row.
func holdAndSettle(ctx context.Context, st store.Store, key store.Key, id string) error {
	now := time.Now().UTC()
	h := store.Hold{ID: "req_" + id, AccountID: key.AccountID, KeyID: key.ID, KeyName: key.Name, KeyPrefix: key.Prefix,
		Model: "gpt-4o-mini", Amount: money.MustParse("0.0099"), SubmittedAt: now}
	if _, err := st.PlaceHold(ctx, h); err != nil {
		return err
	}
	one := 1
	charge := money.Nano(1200*150 + 300*600)
	row := store.LogRow{
		AccountID: key.AccountID, CreatedAt: time.Now().UTC(), SubmittedAt: now, KeyID: key.ID, KeyName: key.Name,
		KeyPrefix: key.Prefix, Model: h.Model, Status: store.StatusSuccess, InputTokens: 1200, OutputTokens: 300,
		Cost: charge, LatencyMS: 420, RequestID: h.ID, AttemptsCount: &one,
		Tech: &store.TechView{
			Request:  []store.KV{{K: "protocol", V: "openai_chat"}, {K: "stream", V: "false"}, {K: "body_bytes", V: "4800"}},
			Upstream: []store.KV{{K: "protocol", V: "openai_chat"}, {K: "model", V: h.Model}},
			Gateway:  []store.KV{{K: "hold", V: h.Amount.String()}},
		},
	}
	return st.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: charge, Row: &row})
}

// quiesce waits until Badger's background work (memtable flushes and
// compactions after a burst of writes) has settled: at least 5 s, then
// until the process has used under 5% of a CPU for 3 seconds in a row, for
// at most 5 minutes. Memory statistics are process-wide, so compaction
// left over from seeding would otherwise count as the chat path's.
func quiesce(c *Config) {
	if c.NoSettle {
		return
	}
	t0 := time.Now()
	time.Sleep(5 * time.Second)
	for quiet := 0; quiet < 3 && time.Since(t0) < 5*time.Minute; {
		cpu0 := cpuTime()
		time.Sleep(time.Second)
		if cpuTime()-cpu0 < 50*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
	}
	c.logf("background work settled after %s", time.Since(t0).Round(time.Second))
}

// loadAvg is the 1, 5 and 15 minute load averages ("" where unknown).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			// Blocks, not the apparent size: Badger's value log is a
			// sparse preallocated file.
			if fi, err := d.Info(); err == nil {
				if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += sys.Blocks * 512
				} else {
					n += fi.Size()
				}
			}
		}
		return nil
	})
	return n
}

type listPage struct {
	Data []struct {
		ID        uint64 `json:"id"`
		CreatedAt string `json:"created_at"`
		Model     string `json:"model"`
		Status    string `json:"status"`
	} `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

type summaryBody struct {
	Total struct {
		Requests int64 `json:"requests"`
	} `json:"total"`
}

// reads measures the logs API over httptest, with the real handler on the
// real store, and checks what it answers.
func reads(ctx context.Context, c *Config, st store.Store, keys []store.Key, totalRows int) ([]Read, error) {
	lim := ratelimit.NewPerKey(1<<30, time.Minute, nil)
	key := keys[0]
	var h atomic.Pointer[logsapi.Handler]
	h.Store(logsapi.New(st, lim, nil, nil))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Load().Serve(w, r, key)
	}))
	defer srv.Close()
	cl := srv.Client()

	get := func(target string) ([]byte, http.Header, time.Duration, error) {
		t0 := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+target, nil)
		resp, err := cl.Do(req)
		if err != nil {
			return nil, nil, 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("GET %s: %d %s", target, resp.StatusCode, body)
		}
		return body, resp.Header, d, err
	}
	// allocs runs the handler in process n times (no HTTP) and returns the
	// allocations per call; fresh, when set, builds a new handler per call.
	allocs := func(target string, n int, fresh bool) (uint64, uint64) {
		req := httptest.NewRequest(http.MethodGet, target, nil).WithContext(ctx)
		hs := make([]*logsapi.Handler, n)
		for i := range hs {
			hs[i] = h.Load()
			if fresh {
				hs[i] = logsapi.New(st, lim, nil, nil)
			}
		}
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for i := 0; i < n; i++ {
			hs[i].Serve(&discard{}, req, key)
		}
		runtime.ReadMemStats(&m1)
		return (m1.Mallocs - m0.Mallocs) / uint64(n), (m1.TotalAlloc - m0.TotalAlloc) / uint64(n)
	}
	var out []Read
	record := func(name, query string, lat []time.Duration, rows, size int, allocN int, fresh bool) {
		r := Read{Name: name, Query: query, Samples: len(lat), RowsPerAnswer: rows, BytesPerAnswer: size}
		r.P50, r.P99 = percentile(lat, 50), percentile(lat, 99)
		if allocN == 0 {
			allocN = 1
		}
		r.AllocsPerOp, r.BytesPerOp = allocs(query, allocN, fresh)
		c.logf("%-40s p50 %8s p99 %8s %6d allocs/op", name, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.AllocsPerOp)
		out = append(out, r)
	}

	// (a) pages.
	pages := []struct {
		name, query string
		empty       bool // the answer has no rows
	}{
		{name: "page, account, desc, no filter", query: "/v1/logs?scope=account&limit=50"},
		{name: "page, one key, desc, no filter", query: "/v1/logs?limit=50"},
		{name: "page, status=error (6%)", query: "/v1/logs?scope=account&limit=50&status=error"},
		{name: "page, status=rejected (2%)", query: "/v1/logs?scope=account&limit=50&status=rejected"},
		{name: "page, model=" + ledgerseed.RareModel + " (1%)", query: "/v1/logs?scope=account&limit=50&model=" + ledgerseed.RareModel},
		{name: "page, model matching no row (per-value index)", query: "/v1/logs?scope=account&limit=50&model=no-such-model", empty: true},
		{name: "page, error_code matching no row, one key (per-value index)", query: "/v1/logs?limit=50&error_code=no_such_code", empty: true},
		{name: "page, unit_type matching no row (whole 30d index walked)", query: "/v1/logs?scope=account&limit=50&unit_type=image", empty: true},
	}
	for _, p := range pages {
		iters := c.PageIters
		if p.empty {
			iters = max(1, iters/10) // each walks the whole window
		}
		lat := make([]time.Duration, 0, iters)
		var rows, size int
		for i := 0; i < iters; i++ {
			body, _, d, err := get(p.query)
			if err != nil {
				return nil, err
			}
			lat = append(lat, d)
			if i == 0 {
				var pg listPage
				if err := json.Unmarshal(body, &pg); err != nil {
					return nil, err
				}
				if p.empty && (len(pg.Data) != 0 || pg.HasMore) {
					return nil, fmt.Errorf("%s: %d rows", p.query, len(pg.Data))
				}
				if err := checkPage(p.query, &pg, false); !p.empty && err != nil {
					return nil, err
				}
				rows, size = len(pg.Data), len(body)
			}
		}
		record(p.name, p.query, lat, rows, size, min(iters, 50), false)
	}

	// asc with cursor continuation: each sample is the next page.
	q := "/v1/logs?scope=account&limit=50&order=asc"
	body, _, _, err := get(q)
	if err != nil {
		return nil, err
	}
	seen := map[uint64]bool{}
	var lastAt time.Time
	var lastID uint64
	var cursor string
	lat := make([]time.Duration, 0, c.PageIters)
	for i := 0; ; i++ {
		var pg listPage
		if err := json.Unmarshal(body, &pg); err != nil {
			return nil, err
		}
		if err := checkPage(q, &pg, true); err != nil {
			return nil, err
		}
		for _, r := range pg.Data {
			if seen[r.ID] {
				return nil, fmt.Errorf("cursor walk: row %d twice", r.ID)
			}
			seen[r.ID] = true
			at, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
			if err != nil {
				return nil, err
			}
			if c := at.Compare(lastAt); c < 0 || c == 0 && r.ID < lastID {
				return nil, fmt.Errorf("cursor walk: row %d out of order", r.ID)
			}
			lastAt, lastID = at, r.ID
		}
		if i == c.PageIters || !pg.HasMore {
			break
		}
		if i == 0 {
			cursor = *pg.NextCursor
		}
		var d time.Duration
		if body, _, d, err = get(q + "&cursor=" + url.QueryEscape(*pg.NextCursor)); err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	record("page, account, asc, cursor continuation", q+"&cursor="+url.QueryEscape(cursor), lat, 50, len(body), min(c.PageIters, 50), false)

	// (b) summary over 30 days: cold (a new handler, so an empty summary
	// cache; Badger's own caches stay warm), then cached.
	sq := "/v1/logs/summary?scope=account&period=30d"
	lat = lat[:0]
	for i := 0; i < c.ColdSummaries; i++ {
		h.Store(logsapi.New(st, lim, nil, nil))
		var d time.Duration
		body, _, d, err = get(sq)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
		var sb summaryBody
		if err := json.Unmarshal(body, &sb); err != nil {
			return nil, err
		}
		if sb.Total.Requests != int64(totalRows) {
			return nil, fmt.Errorf("summary counts %d requests, %d rows are stored", sb.Total.Requests, totalRows)
		}
	}
	record("summary 30d, cold", sq, lat, 0, len(body), min(c.ColdSummaries, 3), true)
	lat = lat[:0]
	for i := 0; i < c.WarmSummaries; i++ {
		_, _, d, err := get(sq)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	record("summary 30d, cached", sq, lat, 0, len(body), min(c.WarmSummaries, 100), false)

	// (c) CSV export of 10,000 rows (the window holds more: truncated).
	eq := "/v1/logs/export.csv?scope=account&period=30d"
	lat = lat[:0]
	var size int
	for i := 0; i < c.ExportIters; i++ {
		body, hdr, d, err := get(eq)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
		if i == 0 {
			recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
			if err != nil {
				return nil, err
			}
			want := min(totalRows, logsapi.ExportMaxRows)
			if len(recs) != want+1 || (hdr.Get("x-truncated") == "true") != (totalRows > logsapi.ExportMaxRows) {
				return nil, fmt.Errorf("export: %d records, x-truncated %q, want %d rows", len(recs)-1, hdr.Get("x-truncated"), want)
			}
			size = len(body)
		}
	}
	record("CSV export, 10,000 rows", eq, lat, min(totalRows, logsapi.ExportMaxRows), size, min(c.ExportIters, 5), false)
	return out, nil
}

// checkPage checks a full page in the expected order and filter.
func checkPage(query string, pg *listPage, asc bool) error {
	if len(pg.Data) == 0 {
		return fmt.Errorf("%s: empty page", query)
	}
	u, _ := url.Parse(query)
	st, model := u.Query().Get("status"), u.Query().Get("model")
	for i, r := range pg.Data {
		if st != "" && r.Status != st || model != "" && r.Model != model {
			return fmt.Errorf("%s: row %d (%s, %s) does not match the filter", query, r.ID, r.Status, r.Model)
		}
		if i > 0 {
			a, _ := time.Parse(time.RFC3339Nano, pg.Data[i-1].CreatedAt)
			b, _ := time.Parse(time.RFC3339Nano, r.CreatedAt)
			if asc && b.Before(a) || !asc && b.After(a) {
				return fmt.Errorf("%s: rows out of order at %d", query, r.ID)
			}
		}
	}
	if pg.HasMore && (len(pg.Data) != 50 || pg.NextCursor == nil) {
		return errors.New(query + ": short page with has_more")
	}
	return nil
}

// percentile is the nearest-rank p-th percentile.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
