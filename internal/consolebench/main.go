// Command consolebench measures the server time of each page of the web
// console over an account holding 100,000 call-log rows (by default) on
// Badger: the console's own handler, in process, as a signed-in owner and
// as a member with one key of eight. Each page is asked once on a fresh
// console (cold: no summary and no day cached), then -iters times (warm).
// It prints Markdown; make bench writes it to bench-results/console.md.
//
//	go run ./internal/consolebench [-rows 100000] [-iters 200]
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/console"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/users"
	"github.com/tollgate-gw/tollgate/internal/ledgerseed"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// target is the budget for a page's server time at p95.
const target = 50 * time.Millisecond

func main() {
	rows := flag.Int("rows", 100_000, "rows seeded over the last 30 days")
	iters := flag.Int("iters", 200, "warm samples per page")
	flag.Parse()
	if err := run(context.Background(), *rows, *iters, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "consolebench:", err)
		os.Exit(1)
	}
}

const password = "bench password"

type bench struct {
	st      store.Store
	adm     *admin.Service
	usr     *users.Service
	cfg     *config.Config
	account string
	keys    []store.Key
}

func run(ctx context.Context, n, iters int, out io.Writer) error {
	dir, err := os.MkdirTemp("", "consolebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	b, err := setUp(ctx, st)
	if err != nil {
		return err
	}
	end := time.Now().UTC()
	start := end.Add(-30 * 24 * time.Hour)
	t0 := time.Now()
	if err := ledgerseed.Seed(ctx, st, 0, n, n, 64, start, end, b.account, b.keys, nil); err != nil {
		return err
	}
	seeded := time.Since(t0)

	who := []struct {
		name, email, key string
	}{{"owner (the whole account)", "owner@bench.example", ""}, {"member (one key of eight)", "member@bench.example", b.keys[0].ID}}
	pages := []struct{ name, path string }{
		{"overview", "/console/"},
		{"keys", "/console/keys"},
		{"logs, last 30 days", "/console/logs"},
		{"logs, status=error", "/console/logs?status=error"},
		{"logs, model=" + ledgerseed.RareModel, "/console/logs?model=" + ledgerseed.RareModel},
		{"logs, 7 days, page 1 of many", "/console/logs?period=7d"},
		{"logs, a row's technical view", "/console/logs/{row}"},
		{"agents", "/console/agents"},
		{"account", "/console/account"},
		{"members (owner)", "/console/members"},
		{"billing (owner)", "/console/billing"},
	}
	fmt.Fprintf(out, "### Console pages at %d rows (Badger)\n\n", n)
	fmt.Fprintf(out, "%d rows over the last 30 days in one account of 8 keys, seeded in %s. %s, %d CPUs; load average %s at the start.\n",
		n, seeded.Round(time.Second), runtime.Version(), runtime.NumCPU(), loadAvg())
	fmt.Fprintf(out, "Server time of the console's handler in process (httptest), as the signed-in person; cold is the first\n")
	fmt.Fprintf(out, "request on a fresh console (no summary and no closed day cached), p50 and p95 over %d more. Target: p95 under %s.\n\n", iters, target)
	fmt.Fprintf(out, "| who | page | cold | p50 | p95 | bytes | p95 under %s |\n|---|---|---:|---:|---:|---:|:-:|\n", target)
	fail := false
	for _, w := range who {
		for _, p := range pages {
			if w.email != "owner@bench.example" && (p.path == "/console/members" || p.path == "/console/billing") {
				continue
			}
			path := p.path
			if path == "/console/logs/{row}" {
				id, err := b.lastRow(ctx, w.key)
				if err != nil {
					return err
				}
				path = "/console/logs/" + strconv.FormatUint(id, 10)
			}
			// A fresh console per page: its logs handler's caches start empty.
			c, cookie, err := b.console(ctx, w.email)
			if err != nil {
				return err
			}
			cold, size, err := get(c, path, cookie)
			if err != nil {
				return fmt.Errorf("%s %s: %w", w.name, path, err)
			}
			samples := make([]time.Duration, 0, iters)
			for range iters {
				d, _, err := get(c, path, cookie)
				if err != nil {
					return fmt.Errorf("%s %s: %w", w.name, path, err)
				}
				samples = append(samples, d)
			}
			p50, p95 := percentile(samples, 50), percentile(samples, 95)
			ok := "yes"
			if p95 >= target {
				ok, fail = "no", true
			}
			fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %d | %s |\n", w.name, p.name, ms(cold), ms(p50), ms(p95), size, ok)
		}
	}
	// The export is a download, not a page: shown for scale.
	c, cookie, err := b.console(ctx, "owner@bench.example")
	if err != nil {
		return err
	}
	var ex []time.Duration
	for range 10 {
		d, _, err := get(c, "/console/logs/export.csv", cookie)
		if err != nil {
			return err
		}
		ex = append(ex, d)
	}
	fmt.Fprintf(out, "\nThe CSV export of the last 30 days (10,000 rows, the cap; a download, not a page): p50 %s over 10.\n", ms(percentile(ex, 50)))
	if fail {
		fmt.Fprintf(out, "\nA page is over the target.\n")
	}
	return nil
}

// setUp makes the account, its eight keys (one the member's), the owner
// and the member.
func setUp(ctx context.Context, st store.Store) (*bench, error) {
	sealer, err := keys.NewSealer(make([]byte, 32))
	if err != nil {
		return nil, err
	}
	b := &bench{st: st, cfg: config.Default(func(string) string { return "" })}
	b.adm = admin.NewService(st, sealer, time.Now, config.DefaultSignupCredit)
	b.usr = users.New(users.Options{Store: st, Admin: b.adm, Signup: config.SignupOpen})
	a, err := b.adm.CreateAccount(ctx, "bench", nil)
	if err != nil {
		return nil, err
	}
	b.account = a.ID
	owner, err := b.usr.CreateUser(ctx, a.ID, "owner@bench.example", password, store.RoleOwner)
	if err != nil {
		return nil, err
	}
	member, err := b.usr.CreateUser(ctx, a.ID, "member@bench.example", password, store.RoleMember)
	if err != nil {
		return nil, err
	}
	for i := range 8 {
		name := "key " + strconv.Itoa(i)
		userID := owner.ID
		if i == 0 {
			userID = member.ID
		}
		k, _, err := b.adm.CreateKey(ctx, a.ID, admin.KeySpec{Name: &name, UserID: userID})
		if err != nil {
			return nil, err
		}
		b.keys = append(b.keys, k)
	}
	return b, nil
}

// lastRow is the newest row's id (of one key when keyID is set).
func (b *bench) lastRow(ctx context.Context, keyID string) (uint64, error) {
	rows, err := b.st.QueryLogs(ctx, store.LogQuery{AccountID: b.account, KeyID: keyID, Limit: 1})
	if err != nil || len(rows) == 0 {
		return 0, errors.Join(err, errors.New("no row"))
	}
	return rows[0].ID, nil
}

// console is a fresh console and a session cookie of email.
func (b *bench) console(ctx context.Context, email string) (*console.Console, *http.Cookie, error) {
	c, err := console.New(console.Options{
		Config: b.cfg, Store: b.st, Admin: b.adm, Users: b.usr, Logs: logsapi.New(b.st, nil, nil, nil),
		Bases: noBases{}, Secret: sha256.New().Sum(nil),
	})
	if err != nil {
		return nil, nil, err
	}
	s, err := b.usr.SignIn(ctx, email, password, users.Client{Address: "192.0.2.1"})
	if err != nil {
		return nil, nil, err
	}
	return c, &http.Cookie{Name: "tollgate_session", Value: s.Token}, nil
}

type noBases struct{}

func (noBases) ReadableBases(context.Context, string) ([]store.KnowledgeBase, error) { return nil, nil }

// get asks for path and returns the handler's time and the body's size.
func get(h http.Handler, path string, cookie *http.Cookie) (time.Duration, int, error) {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.AddCookie(cookie)
	w := httptest.NewRecorder()
	t0 := time.Now()
	h.ServeHTTP(w, r)
	d := time.Since(t0)
	if w.Code != http.StatusOK {
		return d, 0, fmt.Errorf("status %d: %.300s", w.Code, w.Body.String())
	}
	return d, w.Body.Len(), nil
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(b) < 14 {
		return "?"
	}
	return string(b[:14])
}
