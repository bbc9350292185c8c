package server

import (
	"slices"
	"testing"
)

func TestBodiesBudget(t *testing.T) {
	b := NewBodies(10)
	if !b.take(6) || b.take(6) || !b.take(4) || b.InUse() != 10 {
		t.Fatalf("in use %d", b.InUse())
	}
	b.give(10)
	// Larger than the whole budget: only alone.
	if !b.take(30) || b.take(1<<20) {
		t.Fatalf("in use %d", b.InUse())
	}
	b.give(30)
	if b.InUse() != 0 {
		t.Fatalf("in use %d", b.InUse())
	}
	var none *Bodies
	if !none.take(1 << 40) {
		t.Fatal("no budget refused a body")
	}
}

// A watcher sees the bytes held after every change, in order, so the
// last value it is told is what is held now.
func TestBodiesWatch(t *testing.T) {
	b := NewBodies(100)
	var seen []int64
	b.Watch(func(n int64) { seen = append(seen, n) })
	b.take(30)
	b.take(90) // refused: no change
	b.take(20)
	b.give(30)
	b.give(20)
	if want := []int64{30, 50, 20, 0}; !slices.Equal(seen, want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
}
