package integration

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// auditEvery is opsConfig with the periodic audit of the books every second.
const auditEvery = opsConfig + `
audit {
  every = "1s"
}
`

// The gateway audits its own books every `audit { every }`: the result is
// on /metrics and in the log, passing on books that hold, then naming the
// rule and the account once a wallet was changed behind the store's back.
func TestPeriodicAudit(t *testing.T) {
	dir := t.TempDir()
	// Audited here, before its books are broken below.
	g := startGateway(t, testgw.Options{Config: auditEvery, DataDir: dir, NoAudit: "audited before the test breaks its books"})
	acct := g.Account("10")
	_, key := g.Key(acct, nil)
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "audit me", "")); c.Status != 200 {
		t.Fatalf("chat: %d %s", c.Status, c.Body)
	}
	murl := metricsURL(t, g)
	runs := awaitAudit(t, g, murl, "passed")
	fams, _ := scrape(t, murl)
	for _, rule := range audit.Rules {
		if v := value(series(t, fams, "tollgate_audit_violations", map[string]string{"rule": rule})); v != 0 {
			t.Errorf("tollgate_audit_violations{rule=%q} = %v after passing audits", rule, v)
		}
	}
	if v := value(series(t, fams, "tollgate_audit_runs_total", map[string]string{"result": "failed"})); v != 0 {
		t.Errorf("%v failed audits of books that hold", v)
	}
	if last := value(series(t, fams, "tollgate_audit_last_run_timestamp_seconds", nil)); time.Since(time.Unix(int64(last), 0)) > time.Minute {
		t.Errorf("last audit at %v", last)
	}
	if !strings.Contains(g.Output(), "audit of the books passed") {
		t.Errorf("%v passed audits, none logged:\n%s", runs, g.Output())
	}
	auditBooks(t, g)
	g.CheckBooks()
	g.Stop()
	g.CheckStoppedBooks()

	// One nano-credit more in the wallet than its entries give it.
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "badger")).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		it, err := txn.Get([]byte("wallet/" + acct))
		if err != nil {
			return err
		}
		v, err := it.ValueCopy(nil)
		if err != nil {
			return err
		}
		binary.BigEndian.PutUint64(v, binary.BigEndian.Uint64(v)+1)
		return txn.Set([]byte("wallet/"+acct), v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	g = testgw.Start(t, testgw.Options{Config: auditEvery, DataDir: dir, NoAudit: "its wallet is broken on purpose"})
	murl = metricsURL(t, g)
	awaitAudit(t, g, murl, "failed")
	fams, _ = scrape(t, murl)
	if v := value(series(t, fams, "tollgate_audit_violations", map[string]string{"rule": audit.RuleBalance})); v != 1 {
		t.Errorf("tollgate_audit_violations{rule=\"balance\"} = %v, want 1", v)
	}
	out := g.Output()
	if !strings.Contains(out, "audit of the books found violations") || !strings.Contains(out, "by_rule=balance=1") ||
		!strings.Contains(out, "audit violation: rule=balance account_id="+acct) {
		t.Errorf("the failed audit is not in the log as an operator would read it:\n%s", out)
	}
	if rep := g.Audit(); rep.OK || rep.ByRule[audit.RuleBalance] != 1 || rep.Violations[0].AccountID != acct {
		t.Errorf("GET /admin/v1/audit: %+v", rep)
	}
}

// awaitAudit waits until the gateway's periodic audit has ended with
// result at least once, and returns how many times.
func awaitAudit(t *testing.T, g *testgw.Gateway, murl, result string) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fams, _ := scrape(t, murl)
		if v := value(series(t, fams, "tollgate_audit_runs_total", map[string]string{"result": result})); v > 0 {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s audit in 30 s:\n%s", result, g.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
