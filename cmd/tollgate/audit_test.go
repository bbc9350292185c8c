package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/store/audit"
)

// The books of a real gateway, audited live and from its stopped data
// directory, then broken by hand the way docs/store.md lays the keys out:
// `tollgate audit` names the account and the rule, and exits 1.
func TestBinaryAudit(t *testing.T) {
	g := testgw.Start(t, testgw.Options{NoAudit: "the test breaks its books on purpose"})
	acct := g.Account("10")
	_, key := g.Key(acct, nil)
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"sim-chat","messages":[{"role":"user","content":"audit me"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d", resp.StatusCode)
	}

	live := []string{"audit", "--url", g.URL, "--token", testgw.AdminToken}
	if out, errOut, code := tollgateCmd(t, nil, live...); code != 0 || !strings.HasPrefix(out, "the books hold: ") {
		t.Fatalf("live audit: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code := tollgateCmd(t, nil, append(live, "--json")...)
	var rep audit.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || rep.Rows != 1 || rep.Entries < 4 {
		t.Fatalf("live audit --json: exit %d: %s", code, out)
	}
	if _, errOut, code := tollgateCmd(t, nil, "audit", "--data-dir", g.DataDir); code != 2 || !strings.Contains(errOut, "audit it live with --url") {
		t.Fatalf("audit of a served data dir: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := tollgateCmd(t, nil, "audit", "--data-dir", g.DataDir, "--database", "postgres://x"); code != 2 || !strings.Contains(errOut, "give one") {
		t.Fatalf("two stores: exit %d, stderr %q", code, errOut)
	}
	g.Stop()
	if rep, code := testgw.AuditDir(t, g.DataDir); code != 0 || !rep.OK || rep.Rows != 1 {
		t.Fatalf("offline audit: exit %d, %+v", code, rep)
	}

	for _, c := range []struct {
		desc, rule string
		edit       func(t *testing.T, txn *badger.Txn)
	}{
		{"the wallet's held sum", audit.RuleHeld, func(t *testing.T, txn *badger.Txn) {
			k := []byte("wallet/" + acct)
			it, err := txn.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := it.ValueCopy(nil)
			binary.BigEndian.PutUint64(v[8:], binary.BigEndian.Uint64(v[8:])+1)
			if err := txn.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}},
		{"the call's row", audit.RuleSettlementRow, func(t *testing.T, txn *badger.Txn) {
			deleteFirst(t, txn, "log/", func([]byte) bool { return true })
		}},
		{"the wallet's balance", audit.RuleBalance, func(t *testing.T, txn *badger.Txn) {
			k := []byte("wallet/" + acct)
			it, err := txn.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := it.ValueCopy(nil)
			binary.BigEndian.PutUint64(v, binary.BigEndian.Uint64(v)+1)
			if err := txn.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(g.DataDir)); err != nil {
				t.Fatal(err)
			}
			db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "badger")).WithLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			txn := db.NewTransaction(true)
			c.edit(t, txn)
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			rep, code := testgw.AuditDir(t, dir)
			if code != 1 || rep.OK || rep.ByRule[c.rule] == 0 {
				t.Fatalf("exit %d, %+v", code, rep)
			}
			named := false
			for _, v := range rep.Violations {
				named = named || v.Rule == c.rule && v.AccountID == acct
			}
			if !named {
				t.Fatalf("no %s violation names account %s:\n%s", c.rule, acct, testgw.Violations(rep))
			}
			out, _, code := tollgateCmd(t, nil, "audit", "--data-dir", dir)
			if code != 1 || !strings.HasPrefix(out, "the books fail: ") || !strings.Contains(out, c.rule) || !strings.Contains(out, acct) {
				t.Fatalf("exit %d, stdout:\n%s", code, out)
			}
		})
	}
}

// deleteFirst deletes the first key under prefix whose value keep accepts.
func deleteFirst(t *testing.T, txn *badger.Txn, prefix string, keep func(v []byte) bool) {
	t.Helper()
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix), PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			t.Fatal(err)
		}
		if keep(v) {
			if err := txn.Delete(bytes.Clone(it.Item().Key())); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("nothing to delete under %s", prefix)
}
