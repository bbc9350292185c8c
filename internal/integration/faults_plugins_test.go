package integration

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/testkind"
)

// A storm of SIGKILLs of the sim plugin, one every 3 to 5 s under 16
// callers (half streaming), for 25 s and at least 4 kills, each on calls
// in flight (issue 22, item 11). A call that arrives while the plugin
// restarts waits for it; a call that had sent nothing to its client when
// the plugin died is made again. At least 99%
// of the calls that had not begun streaming succeed, and the books are
// exact: no hold left, one row per call, balance plus the rows' costs is
// the credit (each row's cost is checked against its upstream's usage
// when the test ends).
func TestPluginCrashStorm(t *testing.T) {
	g := startGateway(t, testgw.Options{Config: opsConfig})
	const credit = "1000"
	acct := g.Account(credit)
	_, key := g.Key(acct, nil)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22))

	l := startLoad(g, key, 16, "[sim:latency=80ms]")
	murl := metricsURL(t, g)
	// simUp reports whether the gateway has the sim's process serving
	// (restarted and configured after the last kill).
	simUp := func() bool {
		fams, _ := scrape(t, murl)
		return value(series(t, fams, "tollgate_plugin_up", map[string]string{"plugin": "sim"})) == 1
	}
	kills := 0
	for end := time.Now().Add(25 * time.Second); time.Now().Before(end) || kills < 4; {
		time.Sleep(time.Duration(3000+rng.IntN(2000)) * time.Millisecond)
		// Each kill falls on calls under way: the gateway has the plugin
		// serving again, holds are open (calls between their hold and
		// their settlement) and the callers have calls out. Under load the
		// restart from the last kill may still be under way, and the
		// calls it failed may be pausing; the kill waits for them.
		waitStorm(t, fmt.Sprintf("kill %d: calls in flight", kills+1), func() (bool, string) {
			open, up := l.inFlight.Load(), simUp()
			_, held := g.Balance(acct)
			return open > 0 && up && held != "0", fmt.Sprintf("sim up %v, %s held, %d calls open", up, held, open)
		})
		pids := pluginPids(t, g, "sim")
		if len(pids) == 0 {
			t.Fatalf("kill %d: the gateway has the sim up but it has no process", kills+1)
		}
		testkind.Mark(t, testkind.SIGKILL)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		kills++
	}
	// The last restart, before the callers stop.
	waitStorm(t, "the sim back after the last kill", func() (bool, string) { return simUp(), "down" })
	outs := l.end()

	var notBegun, ok, cut int
	failures := map[string]int{}
	for _, o := range outs {
		if o.begun() {
			if !o.whole {
				cut++
			}
			continue
		}
		notBegun++
		if o.served() {
			ok++
		} else {
			failures[itoa(o.status)+" "+tail(o.body, 1)]++
		}
	}
	rate := float64(ok) / float64(max(notBegun, 1))
	t.Logf("%d kills, %d calls: %d had not begun streaming, %d of them succeeded (%.2f%%); %d streams cut", kills, len(outs), notBegun, ok, 100*rate, cut)
	if rate < 0.99 {
		t.Errorf("%.2f%% of the calls that had not begun streaming succeeded, want at least 99%%; failures: %v", 100*rate, failures)
	}
	// Exact books, with no restart of the gateway.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, held := g.Balance(acct); held == "0" || time.Now().After(deadline) {
			break
		}
	}
	rows := checkBooks(t, g, acct, credit)
	for _, o := range outs {
		if o.trace != "" && rows[o.trace] != 1 {
			t.Errorf("call %s (%d) has %d rows", o.trace, o.status, rows[o.trace])
		}
	}
}
