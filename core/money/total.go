package money

import (
	"math/big"
	"math/bits"
)

// Total is an exact sum of amounts for reports that add many of them (a
// period's cost, a key's usage plus a balance). It is 128 bits wide, so no
// sum of fewer than 2^64 amounts leaves its range: a total beyond Max is
// still rendered exactly rather than refused or wrapped. The zero value is 0.
type Total struct {
	hi int64
	lo uint64
}

// Add adds n to the total.
func (t *Total) Add(n Nano) {
	var carry uint64
	t.lo, carry = bits.Add64(t.lo, uint64(n), 0)
	ext := int64(0) // sign extension of n into the high word
	if n < 0 {
		ext = -1
	}
	t.hi += ext + int64(carry)
}

// TotalOf is the exact sum of ns.
func TotalOf(ns ...Nano) Total {
	var t Total
	for _, n := range ns {
		t.Add(n)
	}
	return t
}

// Cmp compares t and u: -1, 0 or +1.
func (t Total) Cmp(u Total) int {
	switch {
	case t.hi < u.hi:
		return -1
	case t.hi > u.hi:
		return 1
	case t.lo < u.lo:
		return -1
	case t.lo > u.lo:
		return 1
	}
	return 0
}

// Nano is the total as an amount; ok is false when it is outside [Min, Max].
func (t Total) Nano() (n Nano, ok bool) {
	n = Nano(t.lo)
	if t.hi != int64(n)>>63 || !n.Valid() { // the high word must be n's sign
		return 0, false
	}
	return n, true
}

// String renders the total as Nano.String does: "12.5", "0", "-0.000001".
func (t Total) String() string {
	if n, ok := t.Nano(); ok {
		return n.String()
	}
	v := new(big.Int).Lsh(big.NewInt(t.hi), 64)
	v.Add(v, new(big.Int).SetUint64(t.lo))
	neg := v.Sign() < 0
	v.Abs(v)
	q, r := new(big.Int).QuoRem(v, big.NewInt(Scale), new(big.Int))
	b := make([]byte, 0, 48)
	if neg {
		b = append(b, '-')
	}
	b = q.Append(b, 10)
	if r.Sign() != 0 {
		// r < Scale, so it is a valid Nano below one credit: reuse its form.
		frac := Nano(r.Int64()).String() // "0.xxx"
		b = append(b, frac[1:]...)
	}
	return string(b)
}

// MarshalJSON writes the total as a JSON string, as amounts are.
func (t Total) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.String() + `"`), nil
}

// AddTotal adds u to the total.
func (t *Total) AddTotal(u Total) {
	var carry uint64
	t.lo, carry = bits.Add64(t.lo, u.lo, 0)
	t.hi += u.hi + int64(carry)
}
