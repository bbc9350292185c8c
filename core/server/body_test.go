package server

import "testing"

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
