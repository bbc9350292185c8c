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
	if !h.Ready("a") {
		t.Fatal("opened before the threshold")
	}
	h.Failure("a")
	if h.Ready("a") || !h.Open("a") {
		t.Fatal("not opened at the threshold")
	}
	now = now.Add(31 * time.Second)
	if !h.Ready("a") || !h.Ready("a") {
		t.Fatal("not ready for a probe after the cooldown (asking must not claim it)")
	}
	h.Begin("a")
	if h.Ready("a") {
		t.Fatal("a second probe was admitted while the first is out")
	}
	h.Failure("a")
	if h.Ready("a") {
		t.Fatal("a failed probe did not reopen the breaker")
	}
	now = now.Add(31 * time.Second)
	h.Begin("a")
	h.Release("a")
	if !h.Ready("a") {
		t.Fatal("a probe whose client went away was not given back")
	}
	h.Begin("a")
	h.Success("a")
	if !h.Ready("a") || h.Open("a") {
		t.Fatal("a successful probe did not close the breaker")
	}
	if !h.Ready("b") {
		t.Fatal("an unknown channel is not ready")
	}
}
