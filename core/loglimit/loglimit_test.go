package loglimit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A flood of one error is written Burst times per interval, the lines held back
// counted on the next one written (or on their own when the interval
// ends); other messages, levels and loggers are apart; info and debug
// lines pass untouched.
func TestFloodIsCounted(t *testing.T) {
	var out bytes.Buffer
	base := hclog.New(&hclog.LoggerOptions{Name: "gw", Level: hclog.Debug, Output: &out})
	clock := time.Unix(0, 0)
	var flushes []func()
	l := Wrap(base, time.Second).(*logger)
	l.lim.now = func() time.Time { return clock }
	l.lim.after = func(_ time.Duration, f func()) *time.Timer { flushes = append(flushes, f); return nil }

	ledger := l.Named("ledger")
	for i := range 1000 {
		ledger.Error("settlement failed", "request_id", i)
		ledger.Debug("settled", "request_id", i)
	}
	l.Error("another thing")
	l.Named("other").Error("settlement failed")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if n := strings.Count(out.String(), "[ERROR] gw.ledger: settlement failed"); n != Burst {
		t.Fatalf("%d error lines of the flood before the interval ended:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "[DEBUG]"); n != 1000 {
		t.Errorf("%d debug lines, want all 1000", n)
	}
	if !strings.Contains(out.String(), "gw: another thing") || !strings.Contains(out.String(), "gw.other: settlement failed") {
		t.Errorf("other messages were held back:\n%s", lines)
	}
	if len(flushes) != 1 {
		t.Fatalf("%d flushes scheduled, want 1", len(flushes))
	}
	clock = clock.Add(time.Second)
	flushes[0]()
	if !strings.Contains(out.String(), "settlement failed: request_id=999 repeated=995") {
		t.Fatalf("the count of the held lines was not written:\n%s", tail(out.String()))
	}
	// A new interval writes the next one at once.
	clock = clock.Add(2 * time.Second)
	ledger.Error("settlement failed", "request_id", "later")
	if !strings.Contains(out.String(), "request_id=later\n") {
		t.Errorf("the first line of a new interval was held:\n%s", tail(out.String()))
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], "\n")
}
