package pipeline

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/config"
)

func TestSessionPinning(t *testing.T) {
	chans := []*config.Channel{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "c", Weight: 2}, {Name: "backup", Priority: -1}}
	cands := func() []Candidate {
		out := make([]Candidate, len(chans))
		for i, ch := range chans {
			out[i] = Candidate{Channel: ch}
		}
		return out
	}
	call := func(header, session string) *Call {
		r, _ := http.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		if session != "" {
			r.Header.Set(header, session)
		}
		return &Call{Request: r}
	}
	now := time.Unix(0, 0)
	d := &dispatchStage{health: NewHealth(func() time.Time { return now })}
	first := func(c *Call) string { return d.order(nil, orderFor(c, cands()))[0].Channel.Name }

	const sessions = 600
	pinned := map[string]string{}
	count := map[string]int{}
	for i := range sessions {
		s := fmt.Sprintf("session-%d", i)
		pinned[s] = first(call("session_id", s))
		count[pinned[s]]++
		for range 3 {
			if got := first(call("session_id", s)); got != pinned[s] {
				t.Fatalf("%s: first %s, then %s", s, pinned[s], got)
			}
		}
		if got := first(call("conversation_id", s)); got != pinned[s] {
			t.Fatalf("%s by conversation_id: %s, by session_id %s", s, got, pinned[s])
		}
	}
	// Weights share the sessions (c has twice a's); the lower priority
	// gets none while the others are up.
	if count["backup"] != 0 || count["a"] < sessions/8 || count["b"] < sessions/8 || count["c"] < count["a"] {
		t.Fatalf("sessions per channel: %v", count)
	}
	// b goes down: only its sessions move, to a or c; when it is back,
	// they come back.
	for range d.health.Threshold {
		d.health.Failure("b")
	}
	for s, ch := range pinned {
		got := first(call("session_id", s))
		switch {
		case ch != "b" && got != ch:
			t.Fatalf("%s moved from %s to %s when b went down", s, ch, got)
		case ch == "b" && got != "a" && got != "c":
			t.Fatalf("%s of b went to %s", s, got)
		}
	}
	d.health.Success("b")
	for s, ch := range pinned {
		if got := first(call("session_id", s)); got != ch {
			t.Fatalf("%s: %s after b came back, want %s", s, got, ch)
		}
	}
	// Without a session, calls spread as before.
	spread := map[string]bool{}
	for range 200 {
		spread[first(call("", ""))] = true
	}
	if len(spread) != 3 {
		t.Fatalf("calls without a session reached %v", spread)
	}
}
