package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testdisk"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// Store faults (issue 22, items 1, 5 and 12), against the real binary on a
// real file system: a data directory on a tmpfs filled in the middle of a
// load, and a flood of readiness probes.

// readyz reads /readyz: its status and problems.
func readyz(t *testing.T, g *testgw.Gateway) (int, []string) {
	t.Helper()
	c := do(t, "GET", g.URL+"/readyz", nil, "")
	var p struct{ Problems []string }
	_ = json.Unmarshal(c.Body, &p)
	return c.Status, p.Problems
}

// The data directory's disk fills for 7 s in the middle of a load of 16
// callers, half of them streaming. The gateway never dies (Badger must
// not fault on the full disk); while it cannot write, /readyz says so and
// new calls are refused in their protocol's shape; the settlements of
// the calls it served wait in memory, their holds kept. Within 5 s of the
// space returning, without a restart, every served call has its one row
// at its real cost (checked against the usage the upstream reported), no
// hold is open, and balance plus the rows' costs is the credit.
func TestDiskFullMidLoad(t *testing.T) {
	dir := testdisk.Mount(t, "24m")
	// A reserve that fits the small disk (the default is 32 MB).
	g := startGateway(t, testgw.Options{Config: opsConfig + `store "badger" {
  reserve_mb = 4
}
`, DataDir: dir})
	pid := g.Cmd.Process.Pid
	const credit = "1000"
	acct := g.Account(credit)
	_, key := g.Key(acct, nil)

	l := startLoad(g, key, 16, "")
	time.Sleep(2 * time.Second)
	t.Logf("before the fill: %d bytes free", testdisk.Free(t, dir))
	free := testdisk.Fill(t, dir)
	t.Logf("disk full (%d bytes free)", testdisk.Free(t, dir))
	var status int
	var problems []string
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if status, problems = readyz(t, g); status == 503 {
			break
		}
	}
	if status != 503 || !strings.Contains(strings.Join(problems, " "), "store") {
		t.Errorf("readyz with the disk full: %d %q", status, problems)
	}
	for _, p := range problems {
		if strings.Contains(p, dir) {
			t.Errorf("readyz names a file path: %q", p)
		}
	}
	time.Sleep(7 * time.Second)
	if !g.Alive() {
		t.Fatalf("the gateway died on the full disk:\n%s", tail(g.Output(), 60))
	}
	free()
	freed := time.Now()
	outs := l.end()

	// Within 5 s of the space returning the books are whole again: no
	// hold left (a settlement writes the charge and the row in one store
	// step), every call its one row, the gateway ready.
	deadline := freed.Add(5 * time.Second)
	var bal, held string
	for {
		bal, held = g.Balance(acct)
		if held == "0" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	settled := time.Since(freed)
	if held != "0" {
		t.Fatalf("%s still held %s after the space returned:\n%s", held, settled, tail(g.Output(), 40))
	}
	traced := 0
	for _, o := range outs {
		if o.trace != "" {
			traced++
		}
	}
	// The store says it works again at its next probe (every 2 s), not
	// at the first write it takes: the reader's key is made once it does.
	for st, _ := readyz(t, g); st != 200 && time.Now().Before(deadline); st, _ = readyz(t, g) {
		time.Sleep(100 * time.Millisecond)
	}
	rows := rowsByRequest(t, g, acct)
	for len(rows) < traced && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond) // the rows of refused calls (no hold) come last
		rows = rowsByRequest(t, g, acct)
	}
	sum := money.TotalOf(money.MustParse(bal))
	for id, rs := range rows {
		if len(rs) != 1 {
			t.Fatalf("request %s has %d rows", id, len(rs))
		}
		sum.Add(checkCost(t, rs[0]))
	}
	if sum.Cmp(money.TotalOf(money.MustParse(credit))) != 0 {
		t.Fatalf("balance %s plus the rows' costs is %s, but %s was credited", bal, sum, credit)
	}
	for _, o := range outs {
		if o.trace != "" && len(rows[o.trace]) != 1 {
			t.Errorf("call %s (%d) has %d rows 5 s after the space returned", o.trace, o.status, len(rows[o.trace]))
		}
	}
	var served, refused, other int
	for _, o := range outs {
		switch {
		case o.served():
			served++
			if rs := rows[o.trace]; len(rs) != 1 || rs[0]["status"] != "success" {
				t.Errorf("served call %s (stream %v): rows %v", o.trace, o.stream, rs)
			}
		case o.status >= 500:
			refused++
			if !errorInShape(o.body) {
				t.Errorf("refusal %d not in its protocol's shape: %s", o.status, o.body)
			}
		default:
			other++
		}
	}
	if g.Cmd.Process.Pid != pid || !g.Alive() {
		t.Fatal("the gateway restarted")
	}
	t.Logf("%d calls: %d served, %d refused, %d other; %d rows; settled %s after the space returned",
		len(outs), served, refused, other, len(rows), settled)
	if refused == 0 || served == 0 {
		t.Errorf("the load saw %d served and %d refused calls: the disk did not fill mid-load", served, refused)
	}
	// The gateway serves again, with no restart.
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "back?", "")); c.Status != 200 {
		t.Errorf("after the space returned: %d %s", c.Status, c.Body)
	}
	if st, p := readyz(t, g); st != 200 {
		t.Errorf("readyz after the space returned: %d %q", st, p)
	}
}

// errorInShape reports whether body is an error object of one of the
// protocols' shapes with a message that says something.
func errorInShape(body string) bool {
	var e struct {
		Type  string
		Error *struct {
			Message, Type string
			Code          any
			Status        string
		}
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Error == nil {
		return false
	}
	return e.Error.Message != "" && e.Error.Message != "internal error"
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Two loops of GET /readyz without a key, while 20 paid calls run: every
// call is served and every probe says ready (each probe used to write and
// remove one fixed file, and overlapping probes failed each other).
func TestReadyzFloodKeepsBilling(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testgw.Options{Config: opsConfig})
	acct := g.Account("50")
	_, key := g.Key(acct, nil)
	stop := make(chan struct{})
	var probes, unready atomic.Int64
	var last atomic.Value
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get(g.URL + "/readyz")
				if err != nil {
					continue
				}
				var p struct{ Problems []string }
				_ = json.NewDecoder(resp.Body).Decode(&p)
				resp.Body.Close()
				probes.Add(1)
				if resp.StatusCode != 200 {
					unready.Add(1)
					last.Store(strings.Join(p.Problems, "; "))
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	for i := range 20 {
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "flood "+itoa(i), ""))
		if c.Status != 200 {
			t.Errorf("paid call %d during the flood: %d %s", i, c.Status, c.Body)
		}
	}
	close(stop)
	wg.Wait()
	if n := unready.Load(); n > 0 {
		t.Errorf("%d of %d probes said not ready: %v", n, probes.Load(), last.Load())
	}
	t.Logf("%d probes", probes.Load())
}

// With the store failing (its disk full) every refusal is in its
// protocol's shape with a message that says the store is failing, never a
// bare "internal error"; a call without a hold logs no "hold stays open";
// and a flood of refusals writes a line a second per message, with the
// count of those held back.
func TestStoreFailingErrorsInShapeAndLogsCounted(t *testing.T) {
	dir := testdisk.Mount(t, "24m")
	g := startGateway(t, testgw.Options{Config: opsConfig + `store "badger" {
  reserve_mb = 4
}
`, DataDir: dir})
	acct := g.Account("50")
	_, key := g.Key(acct, nil)
	free := testdisk.Fill(t, dir)
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, _ := readyz(t, g); st == 503 {
			break
		}
	}
	before := len(g.Output())
	goog := map[string]string{"x-goog-api-key": key}
	calls := []struct {
		name, path string
		headers    map[string]string
		body       string
		check      func(m map[string]any) bool
	}{
		{"completions", "/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", ""), completionsShape},
		{"completions stream", "/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", `"stream":true`), completionsShape},
		{"responses", "/v1/responses", bearer(key), `{"model":"sim-chat","input":"hi"}`, completionsShape},
		{"messages", "/v1/messages", msgHeaders(key), `{"model":"sim-chat","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, messagesShape},
		{"messages stream", "/v1/messages", msgHeaders(key), `{"model":"sim-chat","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, messagesShape},
		{"generate content", "/v1beta/models/sim-chat:generateContent", goog, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, geminiShape},
		{"stream generate content", "/v1beta/models/sim-chat:streamGenerateContent?alt=sse", goog, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, geminiShape},
	}
	const rounds = 30
	began := time.Now()
	for i := range rounds {
		for _, c := range calls {
			got := do(t, "POST", g.URL+c.path, c.headers, c.body)
			var m map[string]any
			if got.Status != 500 || json.Unmarshal(got.Body, &m) != nil || !c.check(m) ||
				!strings.Contains(string(got.Body), "store is failing") {
				t.Fatalf("%s (round %d) with the store failing: %d %s", c.name, i, got.Status, got.Body)
			}
		}
	}
	t.Logf("%d refusals in %s", rounds*len(calls), time.Since(began))
	time.Sleep(1500 * time.Millisecond) // an interval of the log limit ends: the counts are written
	out := g.Output()[before:]
	if strings.Contains(out, "hold stays open") {
		t.Errorf("a call without a hold logged that its hold stays open:\n%s", grepLines(out, "hold stays open", 3))
	}
	errors := strings.Count(out, "[ERROR]")
	if errors > 20 || !strings.Contains(out, "repeated=") {
		t.Errorf("%d refusals wrote %d ERROR lines (want a few, with a count):\n%s", rounds*len(calls), errors, grepLines(out, "[ERROR]", 10))
	}
	free()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, _ := readyz(t, g); st == 200 {
			break
		}
	}
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "back?", "")); c.Status != 200 {
		t.Fatalf("after the space returned: %d %s", c.Status, c.Body)
	}
	// Every refusal has its row, written once the space returned.
	want := rounds*len(calls) + 1
	rows := rowsByRequest(t, g, acct)
	for deadline := time.Now().Add(5 * time.Second); len(rows) < want && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		rows = rowsByRequest(t, g, acct)
	}
	if len(rows) != want {
		t.Errorf("%d rows for %d calls", len(rows), want)
	}
}

func completionsShape(m map[string]any) bool {
	e, _ := m["error"].(map[string]any)
	return e != nil && e["message"] != "" && e["type"] == "server_error" && e["code"] == "internal_error"
}

func messagesShape(m map[string]any) bool {
	e, _ := m["error"].(map[string]any)
	return m["type"] == "error" && e != nil && e["type"] == "api_error" && e["message"] != ""
}

func geminiShape(m map[string]any) bool {
	e, _ := m["error"].(map[string]any)
	return e != nil && e["code"] == float64(500) && e["status"] == "INTERNAL" && e["message"] != ""
}

// grepLines is up to n lines of s containing sub.
func grepLines(s, sub string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && len(out) < n {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
