package integration

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// Logs rules that the in-process tests of core/logsapi cover, once more
// against the real binary: the CSV cap, redaction of upstream errors, and
// the summary cache.

// CSV export: at most 10,000 rows, then x-truncated: true. The rows are
// written into the data dir's store before the gateway starts.
func TestLedgerExportCapAgainstBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	raw, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	st, err := badgerstore.Open(filepath.Join(dir, "badger"), badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.CreateAccount(ctx, store.Account{ID: "acct_cap", Name: "cap", Status: store.AccountActive, CreatedAt: time.Now()}, money.Credits(10), ""); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateKey(ctx, store.Key{ID: "key_cap", AccountID: "acct_cap", Name: "cap", Prefix: keys.Display(raw),
		Hash: keys.Hash(raw), Enabled: true, Kind: store.KindConsole, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const n = 10_001
	start := time.Now().Add(-time.Hour)
	for i := range n {
		r := &store.LogRow{AccountID: "acct_cap", KeyID: "key_cap", KeyName: "cap", KeyPrefix: keys.Display(raw),
			CreatedAt: start.Add(time.Duration(i) * time.Millisecond), SubmittedAt: start, Model: "sim-chat",
			Status: store.StatusSuccess, InputTokens: 3, OutputTokens: 4, RequestID: fmt.Sprintf("req_cap_%05d", i)}
		if err := st.Settle(ctx, store.Settlement{Row: r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Not audited: its rows were written to the store directly, by no call.
	g := testgw.Start(t, testgw.Options{DataDir: dir})

	req, _ := http.NewRequest("GET", g.URL+"/v1/logs/export.csv?period=7d", nil)
	req.Header.Set("Authorization", "Bearer "+raw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("x-truncated") != "true" {
		t.Fatalf("status %d, x-truncated %q", resp.StatusCode, resp.Header.Get("x-truncated"))
	}
	recs, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+10_000 || recs[0][0] != "id" || recs[0][len(recs[0])-2] != "result_urls" {
		t.Fatalf("%d records, header %v", len(recs), recs[0])
	}
	// Newest first: the last row written leads, the first one is cut.
	if recs[1][15] != fmt.Sprintf("req_cap_%05d", n-1) || recs[10_000][15] != "req_cap_00001" {
		t.Fatalf("first %v, last %v", recs[1], recs[10_000])
	}
}

// An upstream error carrying a URL, key material and the channel's name
// reaches the row masked (calls logs rule 9), in both error fields.
func TestLedgerRedactionAgainstBinary(t *testing.T) {
	t.Parallel()
	leak := "your key sk-live-4f9a8b7c6d5e4f3a is not valid for redact-chan, see https://internal.example.com/debug?trace=91"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":null}}`, leak)
	}))
	t.Cleanup(up.Close)
	g := startGateway(t, testgw.Options{Config: channelBlock("redact-chan", up.URL, 0, "leaky") + modelBlock("leaky")})
	w := newWallet(g)
	if r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("leaky", "hi", "")); r.Status != 400 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	row := w.last(t, 1)
	msg, _ := row["error_message"].(string)
	for _, secret := range []string{"sk-live-4f9a8b7c6d5e4f3a", "internal.example.com", "redact-chan"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error_message keeps %q: %q", secret, msg)
		}
	}
	if !strings.Contains(msg, "sk-[redacted]") || !strings.Contains(msg, "[url]") || !strings.Contains(msg, "[channel]") {
		t.Errorf("error_message %q, want the key, URL and channel masked", msg)
	}
	view := do(t, "GET", g.URL+"/v1/logs/"+idStr(uint64(row["id"].(float64))), bearer(w.key), "")
	if strings.Contains(string(view.Body), "sk-live") || strings.Contains(string(view.Body), "internal.example.com") {
		t.Errorf("the technical view leaks: %s", view.Body)
	}
}

// The summary is cached in minute-aligned buckets: a call made within the
// same minute as a cached summary does not show in the next one.
func TestLedgerSummaryCachedAgainstBinary(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testgw.Options{})
	for try := 0; ; try++ {
		w := newWallet(g)
		if r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("sim-chat", "one", "")); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		w.last(t, 1)
		minute := time.Now().Truncate(time.Minute)
		first := do(t, "GET", g.URL+"/v1/logs/summary?period=today", bearer(w.key), "")
		if r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), chatBody("sim-chat", "two", "")); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		w.last(t, 2)
		second := do(t, "GET", g.URL+"/v1/logs/summary?period=today", bearer(w.key), "")
		if !time.Now().Truncate(time.Minute).Equal(minute) {
			if try < 3 {
				continue // a minute boundary passed between the two: try again
			}
			t.Fatal("four tries in a row crossed a minute boundary") // never skipped in silence
		}
		n1, n2 := gjson.GetBytes(first.Body, "total.requests").Int(), gjson.GetBytes(second.Body, "total.requests").Int()
		if first.Status != 200 || second.Status != 200 || n1 != 1 || n2 != 1 {
			t.Fatalf("summaries %d %s / %d %s: want both to count 1 request (the second cached)", first.Status, first.Body, second.Status, second.Body)
		}
		return
	}
}
