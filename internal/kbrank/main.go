// Command kbrank measures how the knowledge base ranks the project's own
// docs (the embedded default's `default` base, the one the banner's search
// line reads): for each query, the rank of the first page whose title or
// a heading holds it, and the mean reciprocal rank over the queries.
// docs/kb.md holds a run's figures.
//
//	go run ./internal/kbrank [-q "idempotency,metrics,..."]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/core/kb"
	"github.com/tollgate-gw/tollgate/docs"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// queries are topics the docs give a section to, each also mentioned in
// passing on other pages.
const queries = "idempotency,metrics,spend caps,rate limit,key layout,hosted files,reloading,organization agents," +
	"translation,upstream failures,postgresql,markers,probes,redaction,knowledge bases,durability,channel selection," +
	"retention,pre-charge,tool calls"

func main() {
	q := flag.String("q", queries, "comma-separated queries")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, strings.Split(*q, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "kbrank:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, qs []string) error {
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		return err
	}
	defer st.Close()
	const account = "acct_rank"
	if err := st.CreateAccount(ctx, store.Account{ID: account, Status: store.AccountActive, CreatedAt: time.Now()}, 0, ""); err != nil {
		return err
	}
	fs, err := files.Open(ctx, files.Options{URL: "mem://", Secret: []byte("kbrank-secret-0123456789")})
	if err != nil {
		return err
	}
	defer fs.Close()
	svc, err := kb.Open(ctx, kb.Options{Store: st, Files: fs})
	if err != nil {
		return err
	}
	defer svc.Close()
	if _, err := svc.SeedBase(ctx, "default", "Tollgate documentation", docs.FS); err != nil {
		return err
	}
	folder, err := kb.LoadFolder(docs.FS)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "| query | pages about it | first of them at | top 3 |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	var mrr float64
	var judged, first int
	for _, q := range qs {
		about := map[string]bool{}
		for _, p := range folder.Pages {
			if holds(p.Title, q) || holdsAny(kb.Headings(p.Body), q) {
				about[p.ID] = true
			}
		}
		res, err := svc.Search(ctx, account, kb.SearchRequest{Query: q, Limit: 50})
		if err != nil {
			return err
		}
		rank := 0
		var top []string
		for i, h := range res.Hits {
			if i < 3 {
				top = append(top, h.Page.ID)
			}
			if rank == 0 && about[h.Page.ID] {
				rank = i + 1
			}
		}
		at := "-"
		if len(about) > 0 {
			judged++
			if rank > 0 {
				mrr += 1 / float64(rank)
				at = fmt.Sprint(rank)
			}
			if rank == 1 {
				first++
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", q, strings.Join(keys(about), ", "), at, strings.Join(top, ", "))
	}
	if judged > 0 {
		fmt.Fprintf(w, "\nFirst result about the query: %d of %d; mean reciprocal rank %.2f.\n", first, judged, mrr/float64(judged))
	}
	return nil
}

func holds(s, q string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(q)) }

func holdsAny(ss []string, q string) bool {
	for _, s := range ss {
		if holds(s, q) {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
