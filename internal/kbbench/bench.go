package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/core/kb"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// Config sizes a run.
type Config struct {
	Pages   int    // pages in the corpus
	Batch   int    // pages per write (the admin API takes up to 1000)
	Queries int    // queries per query class
	Dir     string // data dir (kept); "" = a temporary one, removed after
	Seed    uint64
	// CPUProfile, when set, receives a CPU profile of the queries.
	CPUProfile string
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

func (c *Config) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// QueryStat is one query class's latencies.
type QueryStat struct {
	Name     string
	Samples  int
	P50, P99 time.Duration
	AvgHits  float64 // total_hits, averaged
}

// Report is a run's figures.
type Report struct {
	Pages       int
	BodyBytes   int64         // total Markdown body bytes
	ImportTime  time.Duration // store writes and index updates, batch by batch
	RebuildTime time.Duration // the index rebuilt from the store, from nothing
	ReopenTime  time.Duration // the index opened when current
	IndexBytes  int64         // <data dir>/kb.bleve
	StoreBytes  int64         // the Badger directory
	Queries     []QueryStat
	GoVersion   string
	CPUs        int
	LoadStart   string
	LoadEnd     string
}

const (
	kbID    = "bench"
	account = "acct-bench"
)

// Run builds the corpus, imports it, measures queries, then rebuilds the
// index from the store.
func Run(ctx context.Context, c Config) (*Report, error) {
	if c.Batch <= 0 || c.Batch > kb.MaxPagesPerWrite {
		c.Batch = kb.MaxPagesPerWrite
	}
	dir := c.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kbbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	rep := &Report{Pages: c.Pages, GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), LoadStart: loadAvg()}
	st, err := badgerstore.Open(filepath.Join(dir, "badger"), badgerstore.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.CreateAccount(ctx, store.Account{ID: account, Status: store.AccountActive, CreatedAt: time.Now()}, 0, ""); err != nil && !errors.Is(err, store.ErrExists) {
		return nil, err
	}
	fstore, err := files.Open(ctx, files.Options{URL: "mem://", Secret: []byte("kbbench-secret-0123456789")})
	if err != nil {
		return nil, err
	}
	defer fstore.Close()
	indexPath := filepath.Join(dir, "kb.bleve")
	open := func() (*kb.Service, time.Duration, error) {
		t := time.Now()
		svc, err := kb.Open(ctx, kb.Options{Store: st, Files: fstore, IndexPath: indexPath})
		return svc, time.Since(t), err
	}
	svc, _, err := open()
	if err != nil {
		return nil, err
	}
	everyone := []string{store.KBEveryone}
	if _, _, err := svc.PutBase(ctx, kbID, kb.BaseSpec{Readers: &everyone}); err != nil {
		svc.Close()
		return nil, err
	}

	gen := newCorpus(c.Seed, c.Pages)
	start := time.Now()
	for i := 0; i < c.Pages; i += c.Batch {
		pages := make([]kb.PageInput, 0, c.Batch)
		for j := i; j < min(i+c.Batch, c.Pages); j++ {
			p := gen.page(j)
			rep.BodyBytes += int64(len(p.Body))
			pages = append(pages, p)
		}
		if _, err := svc.PutPages(ctx, kbID, pages); err != nil {
			svc.Close()
			return nil, err
		}
		if n := i + len(pages); n%(10*c.Batch) == 0 || n == c.Pages {
			c.logf("imported %d pages (%.0f/s)", n, float64(n)/time.Since(start).Seconds())
		}
	}
	rep.ImportTime = time.Since(start)

	classes := gen.queries(c.Queries)
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			svc.Close()
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			svc.Close()
			return nil, err
		}
	}
	var all []string
	for _, qc := range classes {
		all = append(all, qc.qs...)
	}
	all = shuffle(all, c.Seed)
	// First right after the import, while the index still merges the
	// import's segments in the background; then by class, settled.
	for _, qc := range append(append([]queryClass{{name: "all classes, right after the import", qs: all}}, classes...),
		queryClass{name: "all classes, shuffled", qs: all}) {
		stat, err := measure(ctx, svc, qc)
		if err != nil {
			svc.Close()
			return nil, err
		}
		rep.Queries = append(rep.Queries, stat)
		c.logf("%s: p50 %s p99 %s", stat.Name, stat.P50, stat.P99)
	}
	if c.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	probe := classes[4].qs[0]
	before, err := svc.Search(ctx, account, kb.SearchRequest{Query: probe, KB: kbID, Limit: 5})
	if err != nil {
		svc.Close()
		return nil, err
	}
	if err := svc.Close(); err != nil {
		return nil, err
	}
	rep.IndexBytes, rep.StoreBytes = dirSize(indexPath), dirSize(filepath.Join(dir, "badger"))

	if svc, rep.ReopenTime, err = open(); err != nil {
		return nil, err
	}
	svc.Close()
	if err := os.RemoveAll(indexPath); err != nil {
		return nil, err
	}
	c.logf("rebuilding the index from the store")
	if svc, rep.RebuildTime, err = open(); err != nil {
		return nil, err
	}
	// The rebuilt index answers as the imported one did.
	after, err := svc.Search(ctx, account, kb.SearchRequest{Query: probe, KB: kbID, Limit: 5})
	svc.Close()
	if err != nil {
		return nil, err
	}
	if after.Total != before.Total || before.Total == 0 {
		return nil, fmt.Errorf("the rebuilt index finds %d pages for %q, the imported one %d", after.Total, probe, before.Total)
	}
	rep.LoadEnd = loadAvg()
	return rep, nil
}

type queryClass struct {
	name string
	qs   []string
}

// measure runs each query once through the service, as the REST search
// does (BM25 over the base, pages read from the store, snippets), limit 20.
func measure(ctx context.Context, svc *kb.Service, qc queryClass) (QueryStat, error) {
	lat := make([]time.Duration, 0, len(qc.qs))
	var hits uint64
	for _, q := range qc.qs {
		t := time.Now()
		res, err := svc.Search(ctx, account, kb.SearchRequest{Query: q, KB: kbID, Limit: 20})
		if err != nil {
			return QueryStat{}, fmt.Errorf("query %q: %w", q, err)
		}
		lat = append(lat, time.Since(t))
		hits += res.Total
		if res.Total > 0 && len(res.Hits) == 0 {
			return QueryStat{}, fmt.Errorf("query %q: %d hits and an empty page", q, res.Total)
		}
	}
	slices.Sort(lat)
	s := QueryStat{Name: qc.name, Samples: len(lat)}
	if len(lat) > 0 {
		s.P50 = lat[len(lat)/2]
		s.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
		s.AvgHits = float64(hits) / float64(len(lat))
	}
	return s, nil
}

func shuffle(qs []string, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	out := slices.Clone(qs)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// dirSize is the disk space the files under dir take (allocated blocks:
// Badger's value log files are sparse where unused).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				} else {
					n += info.Size()
				}
			}
		}
		return nil
	})
	return n
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
