// Package money holds credit amounts as fixed-point integers.
//
// One credit is 1e9 nano-credits. Amounts never pass through floats: they are
// parsed from and rendered to decimal strings. The range is symmetric,
// [Min, Max] = ±9223372036.854775807 credits, so every amount has a negation;
// arithmetic that would leave it is refused (Add, Sub, Mul and MulPerMillion
// report it), never wrapped.
package money

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Nano is an amount of credits in units of 1e-9 credit.
type Nano int64

// Scale is the number of Nano in one credit.
const Scale = 1_000_000_000

const scaleDigits = 9

// Max and Min bound every amount: ±(2^63-1) nano. The int64 minimum, one
// below Min, is not an amount (it has no negation).
const (
	Max Nano = 1<<63 - 1
	Min Nano = -Max
)

// ErrOutOfRange is returned (wrapped) for an amount, or the result of
// arithmetic on amounts, outside [Min, Max].
var ErrOutOfRange = errors.New("amount out of range (at most ±9223372036.854775807 credits)")

// Valid reports whether n is within [Min, Max].
func (n Nano) Valid() bool { return n >= Min }

// Credits returns n whole credits; n must be within ±9223372036.
func Credits(n int64) Nano { return Nano(n * Scale) }

// Parse reads a decimal string such as "121.32", "-5" or "0.075".
// At most nine fractional digits are accepted, and the value must be
// within [Min, Max]: anything beyond is refused, never wrapped.
func Parse(s string) (Nano, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty amount")
	}
	orig := s
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" && (!hasDot || frac == "") {
		return 0, fmt.Errorf("invalid amount %q", orig)
	}
	if len(frac) > scaleDigits {
		return 0, fmt.Errorf("amount %q has more than %d decimal places", orig, scaleDigits)
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, fmt.Errorf("invalid amount %q", orig)
			}
		}
	}
	// Accumulate the magnitude in nano, refusing as soon as it passes Max:
	// the whole part and the fraction together must fit, not each alone.
	var u uint64
	for _, part := range []string{whole, frac + strings.Repeat("0", scaleDigits-len(frac))} {
		for i := 0; i < len(part); i++ {
			d := uint64(part[i] - '0')
			if u > (uint64(Max)-d)/10 {
				return 0, fmt.Errorf("amount %q: %w", orig, ErrOutOfRange)
			}
			u = u*10 + d
		}
	}
	n := Nano(u)
	if neg {
		n = -n
	}
	return n, nil
}

// MustParse is Parse for constants; it panics on a bad literal.
func MustParse(s string) Nano {
	n, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return n
}

// String renders the amount as a decimal string without trailing zeros:
// "121.32", "0", "-0.000075".
func (n Nano) String() string {
	var buf [32]byte
	return string(n.Append(buf[:0]))
}

// Append appends the decimal form of n to b.
func (n Nano) Append(b []byte) []byte {
	u := uint64(n)
	if n < 0 {
		b = append(b, '-')
		u = -u // two's complement: right for the int64 minimum too
	}
	b = strconv.AppendUint(b, u/Scale, 10)
	frac := u % Scale
	if frac == 0 {
		return b
	}
	var digits [scaleDigits]byte
	for i := scaleDigits - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := scaleDigits
	for end > 0 && digits[end-1] == '0' {
		end--
	}
	b = append(b, '.')
	return append(b, digits[:end]...)
}

// MarshalJSON writes the amount as a JSON string, as the spec's wire format wants.
func (n Nano) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 24)
	b = append(b, '"')
	b = n.Append(b)
	return append(b, '"'), nil
}

// UnmarshalJSON accepts a JSON string holding a decimal amount ("12.5"),
// the wire format, or a bare JSON number written in plain decimal (12.5),
// which is read from its text, never through a float. Exponents, a lone
// quote, escapes and values out of range are refused; null leaves n as it
// is, as encoding/json does for other types.
func (n *Nano) UnmarshalJSON(data []byte) error {
	s := string(data)
	switch {
	case s == "null":
		return nil
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		s = s[1 : len(s)-1]
		if strings.ContainsAny(s, "\"\\") {
			return fmt.Errorf("invalid amount %s: a decimal string such as \"12.5\"", data)
		}
	case len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9'):
		// A JSON number: no '+', no leading '.', no exponent.
		if strings.ContainsAny(s, "eE+") || strings.HasPrefix(strings.TrimPrefix(s, "-"), ".") {
			return fmt.Errorf("invalid amount %s: write it as a decimal string such as \"12.5\"", data)
		}
	default:
		return fmt.Errorf("invalid amount %s: a decimal string such as \"12.5\"", data)
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// Add returns a+b; ok is false (and the sum 0) when it is outside [Min, Max].
func Add(a, b Nano) (sum Nano, ok bool) {
	s := a + b // wraps only when a and b share a sign and s has the other
	if !a.Valid() || !b.Valid() || !s.Valid() || (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, false
	}
	return s, true
}

// Sub returns a-b; ok is false (and the difference 0) when it is outside
// [Min, Max].
func Sub(a, b Nano) (diff Nano, ok bool) {
	if !b.Valid() {
		return 0, false
	}
	return Add(a, -b)
}

// Mul returns count×unit (a unit price times a number of units); ok is
// false (and the product 0) when it is outside [Min, Max].
func Mul(count int64, unit Nano) (Nano, bool) {
	if !unit.Valid() {
		return 0, false
	}
	neg := (count < 0) != (unit < 0)
	c, u := uint64(count), uint64(unit)
	if count < 0 {
		c = -c
	}
	if unit < 0 {
		u = -u
	}
	hi, lo := bits.Mul64(c, u)
	if hi != 0 || lo > uint64(Max) {
		return 0, false
	}
	if neg {
		return -Nano(lo), true
	}
	return Nano(lo), true
}

// MulPerMillion multiplies a count (tokens, characters) by a price quoted
// per million units, rounding half up to the nano. A count or price of 0
// or less costs 0. ok is false when the cost exceeds Max; the cost is then
// Max, so a caller that must charge something charges the most it can.
func MulPerMillion(count int64, pricePerMillion Nano) (cost Nano, ok bool) {
	if count <= 0 || pricePerMillion <= 0 {
		return 0, true
	}
	hi, lo := bits.Mul64(uint64(count), uint64(pricePerMillion))
	lo, carry := bits.Add64(lo, 500_000, 0)
	hi += carry
	if hi >= 1_000_000 {
		return Max, false
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > uint64(Max) {
		return Max, false
	}
	return Nano(q), true
}

// PerMillion is MulPerMillion without its flag: a cost beyond Max is
// clamped to Max.
//
// Deprecated: a clamp silently changes a charge; use MulPerMillion, which
// reports it.
func PerMillion(count int64, pricePerMillion Nano) Nano {
	n, _ := MulPerMillion(count, pricePerMillion)
	return n
}

// Times is Mul for non-negative operands, clamped to Max instead of
// reporting an overflow (0 for a count or unit of 0 or less).
//
// Deprecated: a clamp silently changes a charge; use Mul, which reports it.
func Times(count int64, unit Nano) Nano {
	if count <= 0 || unit <= 0 {
		return 0
	}
	n, ok := Mul(count, unit)
	if !ok {
		return Max
	}
	return n
}

// CountWithin is the largest count whose MulPerMillion cost at
// pricePerMillion is at most budget: how many tokens a balance still
// pays for. It is -1 when the budget is negative, and math.MaxInt64 when
// the price is 0 or less (or the count would pass it).
func CountWithin(budget, pricePerMillion Nano) int64 {
	if budget < 0 {
		return -1
	}
	if pricePerMillion <= 0 {
		return math.MaxInt64
	}
	// cost(n) = floor((n×p + 500000) / 1e6) <= b  ⟺  n×p <= (b+1)×1e6 − 500001
	hi, lo := bits.Mul64(uint64(budget)+1, 1_000_000)
	lo, borrow := bits.Sub64(lo, 500_001, 0)
	hi -= borrow
	if hi >= uint64(pricePerMillion) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(pricePerMillion))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}
