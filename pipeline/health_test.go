package pipeline

import (
	"testing"
	"time"
)

func TestHealthBreaker(t *testing.T) {
	now := time.Unix(1000, 0)
	h := NewHealth(func() time.Time { return now })
	for i := 0; i < 2; i++ {
		h.Failure("a")
	}
	if !h.Usable("a") {
		t.Fatal("opened before the threshold")
	}
	h.Failure("a")
	if h.Usable("a") || !h.Open("a") {
		t.Fatal("not opened at the threshold")
	}
	now = now.Add(31 * time.Second)
	if !h.Usable("a") {
		t.Fatal("no probe after the cooldown")
	}
	if h.Usable("a") {
		t.Fatal("a second probe was admitted while the first is out")
	}
	h.Failure("a")
	if h.Usable("a") {
		t.Fatal("a failed probe did not reopen the breaker")
	}
	now = now.Add(31 * time.Second)
	if !h.Usable("a") {
		t.Fatal("no probe after the second cooldown")
	}
	h.Success("a")
	if !h.Usable("a") || !h.Usable("a") || h.Open("a") {
		t.Fatal("a successful probe did not close the breaker")
	}
	if !h.Usable("b") {
		t.Fatal("an unknown channel is not usable")
	}
}
