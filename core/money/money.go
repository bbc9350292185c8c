// Package money holds credit amounts as fixed-point integers.
//
// One credit is 1e9 nano-credits. Amounts never pass through floats: they are
// parsed from and rendered to decimal strings.
package money

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Nano is an amount of credits in units of 1e-9 credit.
type Nano int64

// Scale is the number of Nano in one credit.
const Scale = 1_000_000_000

const scaleDigits = 9

// Credits returns n whole credits.
func Credits(n int64) Nano { return Nano(n * Scale) }

// Parse reads a decimal string such as "121.32", "-5" or "0.075".
// At most nine fractional digits are accepted.
func Parse(s string) (Nano, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty amount")
	}
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" && (!hasDot || frac == "") {
		return 0, fmt.Errorf("invalid amount %q", s)
	}
	if len(frac) > scaleDigits {
		return 0, fmt.Errorf("amount %q has more than %d decimal places", s, scaleDigits)
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, fmt.Errorf("invalid amount %q", s)
			}
		}
	}
	var w int64
	if whole != "" {
		v, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || v > (1<<63-1)/Scale {
			return 0, fmt.Errorf("amount %q is too large", s)
		}
		w = v
	}
	var f int64
	if frac != "" {
		v, _ := strconv.ParseInt(frac+strings.Repeat("0", scaleDigits-len(frac)), 10, 64)
		f = v
	}
	n := w*Scale + f
	if neg {
		n = -n
	}
	return Nano(n), nil
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
		u = uint64(-n)
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

// UnmarshalJSON accepts a JSON string or a bare JSON number in decimal form.
func (n *Nano) UnmarshalJSON(data []byte) error {
	s := strings.Trim(string(data), `"`)
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// PerMillion multiplies a count (tokens, characters) by a price quoted per
// million units, rounding half up. It does not overflow for any count below
// 2^63 and any price below 2^63 nano.
func PerMillion(count int64, pricePerMillion Nano) Nano {
	if count <= 0 || pricePerMillion <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(count), uint64(pricePerMillion))
	lo, carry := bits.Add64(lo, 500_000, 0)
	hi += carry
	if hi >= 1_000_000 {
		return Nano(1<<63 - 1)
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > 1<<63-1 {
		return Nano(1<<63 - 1)
	}
	return Nano(q)
}

// Times multiplies a unit price by a count, saturating instead of overflowing.
func Times(count int64, unit Nano) Nano {
	if count <= 0 || unit <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(count), uint64(unit))
	if hi != 0 || lo > 1<<63-1 {
		return Nano(1<<63 - 1)
	}
	return Nano(lo)
}
