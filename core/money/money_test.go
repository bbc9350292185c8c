package money

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestParseAndString(t *testing.T) {
	cases := []struct {
		in   string
		want Nano
		out  string
	}{
		{"121.32", 121_320_000_000, "121.32"},
		{"0", 0, "0"},
		{"0.075", 75_000_000, "0.075"},
		{"-5", -5 * Scale, "-5"},
		{"404.4", 404_400_000_000, "404.4"},
		{".5", Scale / 2, "0.5"},
		{"0.000000001", 1, "0.000000001"},
		{"9223372036.854775807", Max, "9223372036.854775807"},
		{"-9223372036.854775807", Min, "-9223372036.854775807"},
		{"+9223372036.854775806", Max - 1, "9223372036.854775806"},
		{"0009223372036", 9223372036 * Scale, "9223372036"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q) = %d, want %d", tc.in, got, tc.want)
			}
			if got.String() != tc.out {
				t.Fatalf("String() = %q, want %q", got.String(), tc.out)
			}
		})
	}
	for _, bad := range []string{"", "abc", "1.2.3", "0.0000000001", "1e5", "-", ".", "+", "1,5", "--1", "0x10"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// The whole part alone fitting is not enough: the fraction can still take
// the value past the range (a wrap to the other sign before this check).
func TestParseRefusesOutOfRange(t *testing.T) {
	for _, s := range []string{
		"9223372036.9", "-9223372036.999999999", "9223372036.854775808",
		"-9223372036.854775808", // the int64 minimum: no negation, so not an amount
		"9223372037", "99999999999999999999", "-18446744073.709551616",
		"18446744073709551616", "184467440737.09551616",
	} {
		n, err := Parse(s)
		if !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Parse(%q) = %s, %v; want ErrOutOfRange", s, n, err)
		}
	}
}

func TestMinInt64Renders(t *testing.T) {
	if got := Nano(-1 << 63).String(); got != "-9223372036.854775808" {
		t.Fatalf("got %s", got)
	}
	if Nano(-1<<63).Valid() || !Min.Valid() || !Max.Valid() {
		t.Fatal("Valid")
	}
}

func TestUnmarshalJSON(t *testing.T) {
	good := map[string]Nano{
		`"5"`: 5 * Scale, `"-0.25"`: -Scale / 4, `5`: 5 * Scale, `0.000000001`: 1, `-3`: -3 * Scale,
		`"9223372036.854775807"`: Max,
	}
	for in, want := range good {
		var n Nano
		if err := json.Unmarshal([]byte(in), &n); err != nil || n != want {
			t.Errorf("%s: %s, %v; want %s", in, n, err, want)
		}
	}
	for _, in := range []string{`"5`, `5"`, `"`, `""`, `"1e3"`, `1e3`, `1E3`, `.5`, `-.5`, `true`, `[]`, `{}`,
		`"5\u0030"`, `"9223372036.9"`, `9223372036.9`, `"-9223372036.999999999"`, `"a"`} {
		var n Nano
		if err := json.Unmarshal([]byte(in), &n); err == nil {
			t.Errorf("%s accepted as %s", in, n)
		}
	}
	// null leaves the value, as encoding/json does for other types.
	n := Nano(7)
	if err := json.Unmarshal([]byte(`null`), &n); err != nil || n != 7 {
		t.Errorf("null: %s, %v", n, err)
	}
	// A struct field: the error names the problem.
	var body struct{ Amount *Nano }
	err := json.Unmarshal([]byte(`{"Amount":"99999999999"}`), &body)
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("out-of-range field: %v", err)
	}
}

func TestAddSub(t *testing.T) {
	cases := []struct {
		a, b    Nano
		sum     Nano
		sumOK   bool
		diff    Nano
		diffOK  bool
		comment string
	}{
		{1, 2, 3, true, -1, true, "small"},
		{Max, 0, Max, true, Max, true, "max"},
		{Max, 1, 0, false, Max - 1, true, "past max"},
		{Min, -1, 0, false, Min + 1, true, "past min"},
		{Min, 1, Min + 1, true, 0, false, "min minus one"},
		{Max, Max, 0, false, 0, true, "twice max"},
		{Max, Min, 0, true, 0, false, "max minus min"},
		{Nano(-1 << 63), 0, 0, false, 0, false, "int64 minimum is no amount"},
		{0, Nano(-1 << 63), 0, false, 0, false, "nor as b"},
	}
	for _, tc := range cases {
		s, ok := Add(tc.a, tc.b)
		if s != tc.sum || ok != tc.sumOK {
			t.Errorf("%s: Add(%d, %d) = %d, %v", tc.comment, tc.a, tc.b, s, ok)
		}
		d, ok := Sub(tc.a, tc.b)
		if d != tc.diff || ok != tc.diffOK {
			t.Errorf("%s: Sub(%d, %d) = %d, %v", tc.comment, tc.a, tc.b, d, ok)
		}
	}
}

func TestMul(t *testing.T) {
	cases := []struct {
		count int64
		unit  Nano
		want  Nano
		ok    bool
	}{
		{3, 7, 21, true},
		{-3, 7, -21, true},
		{3, -7, -21, true},
		{0, Max, 0, true},
		{1, Max, Max, true},
		{-1, Max, Min, true},
		{2, Max, 0, false},
		{1 << 62, 2, 0, false},
		{-1 << 63, 1, 0, false},
		{1, Nano(-1 << 63), 0, false},
	}
	for _, tc := range cases {
		if got, ok := Mul(tc.count, tc.unit); got != tc.want || ok != tc.ok {
			t.Errorf("Mul(%d, %d) = %d, %v; want %d, %v", tc.count, tc.unit, got, ok, tc.want, tc.ok)
		}
	}
	if Times(2, Max) != Max || Times(-1, 5) != 0 || Times(3, 7) != 21 {
		t.Error("Times")
	}
}

func TestPerMillion(t *testing.T) {
	// 1000 tokens at 0.15 per million = 0.00015 credits.
	if got, ok := MulPerMillion(1000, MustParse("0.15")); !ok || got.String() != "0.00015" {
		t.Fatalf("got %s", got)
	}
	// rounding half up at the nano
	if got, _ := MulPerMillion(1, Nano(500_000)); got != 1 {
		t.Fatalf("got %d", got)
	}
	if got, _ := MulPerMillion(1, Nano(499_999)); got != 0 {
		t.Fatalf("got %d", got)
	}
	if got, ok := MulPerMillion(1<<62, Credits(1000)); ok || got != Max {
		t.Fatalf("an overflow is reported and clamped: %d, %v", got, ok)
	}
	if got, ok := MulPerMillion(-5, Credits(1)); !ok || got != 0 {
		t.Fatalf("negative count: %d, %v", got, ok)
	}
	if PerMillion(1<<62, Credits(1000)) != Max {
		t.Fatal("PerMillion clamps")
	}
}

// Seeds of FuzzParse: the overflow cases of issue 10 among ordinary ones.
var parseSeeds = []string{
	"9223372036.9", "-9223372036.999999999", "9223372036.854775807", "-9223372036.854775807",
	"-9223372036.854775808", "9223372036.854775808", "121.32", "0", "-0", ".5", "0.000000001",
	"+1", "00012.3400", "1e5", "", "-", " 7 ", "18446744073.709551615",
}

// Parse and String round-trip: every accepted string is in range and reads
// back from its rendering; a refused string is one whose exact value (read
// with big numbers) is out of range or not a decimal of at most 9 places.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	maxR := new(big.Rat).SetFrac(new(big.Int).SetUint64(uint64(Max)), big.NewInt(Scale))
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			if errors.Is(err, ErrOutOfRange) {
				r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
				if !ok || new(big.Rat).Abs(r).Cmp(maxR) <= 0 {
					t.Fatalf("Parse(%q) out of range, but it is not: %v", s, r)
				}
			}
			return
		}
		if !n.Valid() {
			t.Fatalf("Parse(%q) = the int64 minimum", s)
		}
		// The exact value agrees with a big-number reading.
		r, ok := new(big.Rat).SetString(strings.TrimPrefix(strings.TrimSpace(s), "+"))
		if !ok {
			t.Fatalf("Parse(%q) accepted what big.Rat refuses", s)
		}
		if want := new(big.Rat).SetFrac(big.NewInt(int64(n)), big.NewInt(Scale)); r.Cmp(want) != 0 {
			t.Fatalf("Parse(%q) = %s, exact value %s", s, n, r.FloatString(9))
		}
		back, err := Parse(n.String())
		if err != nil || back != n {
			t.Fatalf("Parse(%q) = %s, which reads back as %s, %v", s, n, back, err)
		}
		var j Nano
		b, _ := json.Marshal(n)
		if err := json.Unmarshal(b, &j); err != nil || j != n {
			t.Fatalf("JSON round trip of %s: %s, %v", n, j, err)
		}
	})
}

// The arithmetic agrees with big-number arithmetic: a result in range is
// exact, and ok is false exactly when the true result is out of range.
func FuzzArithmetic(f *testing.F) {
	f.Add(int64(Max), int64(1), int64(2))
	f.Add(int64(Min), int64(-1), int64(-1))
	f.Add(int64(-1<<63), int64(0), int64(1))
	f.Add(int64(9223372036*Scale), int64(900_000_000), int64(1_000_000))
	f.Add(int64(Max), int64(Max), int64(1<<62))
	f.Add(int64(1), int64(-1), int64(0))
	lo, hi := big.NewInt(int64(Min)), big.NewInt(int64(Max))
	inRange := func(x *big.Int) bool { return x.Cmp(lo) >= 0 && x.Cmp(hi) <= 0 }
	check := func(t *testing.T, op string, got Nano, ok bool, exact *big.Int, operandsValid bool) {
		t.Helper()
		want := operandsValid && inRange(exact)
		if ok != want || ok && big.NewInt(int64(got)).Cmp(exact) != 0 {
			t.Fatalf("%s = %d, %v; exact %s", op, got, ok, exact)
		}
	}
	f.Fuzz(func(t *testing.T, a, b, count int64) {
		na, nb := Nano(a), Nano(b)
		ba, bb, bc := big.NewInt(a), big.NewInt(b), big.NewInt(count)
		s, ok := Add(na, nb)
		check(t, "Add", s, ok, new(big.Int).Add(ba, bb), na.Valid() && nb.Valid())
		d, ok := Sub(na, nb)
		check(t, "Sub", d, ok, new(big.Int).Sub(ba, bb), na.Valid() && nb.Valid())
		m, ok := Mul(count, na)
		check(t, "Mul", m, ok, new(big.Int).Mul(bc, ba), na.Valid())
		// MulPerMillion: round half up of count*price/1e6, clamped at Max.
		p, ok := MulPerMillion(count, na)
		want := big.NewInt(0)
		if count > 0 && a > 0 {
			want.Mul(bc, ba)
			want.Add(want, big.NewInt(500_000))
			want.Quo(want, big.NewInt(1_000_000))
		}
		if inRange(want) {
			if !ok || big.NewInt(int64(p)).Cmp(want) != 0 {
				t.Fatalf("MulPerMillion(%d, %d) = %d, %v; want %s", count, a, p, ok, want)
			}
		} else if ok || p != Max {
			t.Fatalf("MulPerMillion(%d, %d) = %d, %v; want Max, false", count, a, p, ok)
		}
	})
}

func TestTotal(t *testing.T) {
	var tot Total
	for range 4 {
		tot.Add(Max)
	}
	if got := tot.String(); got != "36893488147.419103228" {
		t.Fatalf("4*Max = %s", got)
	}
	if _, ok := tot.Nano(); ok {
		t.Fatal("4*Max fits a Nano")
	}
	for range 4 {
		tot.Add(Min)
	}
	if n, ok := tot.Nano(); !ok || n != 0 || tot.String() != "0" {
		t.Fatalf("back to 0: %s %v", tot, ok)
	}
	tot.Add(-1)
	tot.Add(Min)
	tot.Add(Min)
	if got := tot.String(); got != "-18446744073.709551615" {
		t.Fatalf("-1 + 2*Min = %s", got)
	}
	if TotalOf(1, 2).Cmp(TotalOf(3)) != 0 || TotalOf(Max, 1).Cmp(TotalOf(Max)) <= 0 || TotalOf(-1).Cmp(TotalOf()) >= 0 {
		t.Fatal("Cmp")
	}
	if b, _ := json.Marshal(TotalOf(Max, Max)); string(b) != `"18446744073.709551614"` {
		t.Fatalf("json %s", b)
	}
	if s := TotalOf(MustParse("0.25"), MustParse("-1.5")).String(); s != "-1.25" {
		t.Fatalf("got %s", s)
	}
	// Adding totals is adding their amounts: across the 64-bit carry and
	// with signs mixed.
	for _, c := range [][2][]Nano{
		{{Max, Max}, {Max, 7}},
		{{Min, Min, -1}, {Max, Max, 1}},
		{{MustParse("0.25")}, {MustParse("-1.5"), Min}},
	} {
		sum := TotalOf(c[0]...)
		sum.AddTotal(TotalOf(c[1]...))
		if want := TotalOf(append(append([]Nano{}, c[0]...), c[1]...)...); sum.Cmp(want) != 0 {
			t.Fatalf("AddTotal %v + %v = %s, want %s", c[0], c[1], sum, want)
		}
	}
}

// A Total agrees with big-number sums.
func FuzzTotal(f *testing.F) {
	f.Add(int64(Max), int64(Max), int64(-1<<63))
	f.Add(int64(Min), int64(-1), int64(5))
	f.Fuzz(func(t *testing.T, a, b, c int64) {
		tot := TotalOf(Nano(a), Nano(b), Nano(c))
		want := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
		want.Add(want, big.NewInt(c))
		r, _ := new(big.Rat).SetString(tot.String())
		if r.Cmp(new(big.Rat).SetFrac(want, big.NewInt(Scale))) != 0 {
			t.Fatalf("%d+%d+%d = %s", a, b, c, tot)
		}
		n, ok := tot.Nano()
		if ok != (want.IsInt64() && Nano(want.Int64()).Valid()) || ok && int64(n) != want.Int64() {
			t.Fatalf("Nano() = %d, %v for %s", n, ok, want)
		}
	})
}

func TestCountWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc          string
		budget, price Nano
	}{
		{"a cent at 0.40 per million", MustParse("0.01"), MustParse("0.40")},
		{"trial credit at 25 per million", MustParse("121.32"), MustParse("25")},
		{"a nano at a nano", 1, 1},
		{"nothing left", 0, MustParse("15")},
		{"rounding edge", MustParse("0.0000004"), MustParse("0.8")},
	} {
		n := CountWithin(tc.budget, tc.price)
		if c, _ := MulPerMillion(n, tc.price); c > tc.budget {
			t.Errorf("%s: %d costs %s, above %s", tc.desc, n, c, tc.budget)
		}
		if c, _ := MulPerMillion(n+1, tc.price); c <= tc.budget {
			t.Errorf("%s: %d is not the largest: %d costs %s, within %s", tc.desc, n, n+1, c, tc.budget)
		}
	}
	if CountWithin(-1, 5) != -1 {
		t.Error("a negative budget pays for no count")
	}
	if CountWithin(5, 0) != math.MaxInt64 {
		t.Error("a free price fits any count")
	}
}
