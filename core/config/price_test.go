package config

import (
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
)

// A tier is billed at its table entry, a flat price bills every tier, and
// nothing falls back to a base price that is not set (issue 24, point 8).
func TestPriceUnitFailsClosed(t *testing.T) {
	m := money.MustParse
	tiered := Price{PerSecondByResolution: map[string]money.Nano{"fast": m("4.04"), "standard": m("8.09")}}
	flat := Price{PerSecond: m("0.5")}
	both := Price{PerSecond: m("1"), PerSecondByResolution: map[string]money.Nano{"max": m("12.13")}}
	area := Price{PerImage: m("0.05"), PerImageHD: m("0.12"), AreaThresholdMP: "2.61"}
	cases := []struct {
		desc      string
		p         Price
		unit      string
		tier      string
		want      money.Nano
		ok        bool
		pricesIt  bool
		pricesFor string
	}{
		{"tier in the table", tiered, "per_second", "fast", m("4.04"), true, true, "per_second"},
		{"tier not in the table", tiered, "per_second", "max", 0, false, true, "per_second"},
		{"no base price beside a table", tiered, "per_second", "", 0, false, true, "per_second"},
		{"flat price bills every tier", flat, "per_second", "max", m("0.5"), true, true, "per_second"},
		{"flat base", flat, "per_second", "", m("0.5"), true, true, "per_second"},
		{"table and base: base", both, "per_second", "", m("1"), true, true, "per_second"},
		{"table and base: a tier the table lacks", both, "per_second", "fast", 0, false, true, "per_second"},
		{"area hd", area, "per_image", "hd", m("0.12"), true, true, "per_image"},
		{"area base", area, "per_image", "", m("0.05"), true, true, "per_image"},
		{"area unknown tier", area, "per_image", "uhd", 0, false, true, "per_image"},
		{"per_call not priced", flat, "per_call", "", 0, true, false, "per_call"},
		{"unknown unit", flat, "per_token", "", 0, false, false, "per_token"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := tc.p.Unit(tc.unit, tc.tier)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Unit(%s, %q) = %s %v, want %s %v", tc.unit, tc.tier, got, ok, tc.want, tc.ok)
			}
			if tc.p.Prices(tc.pricesFor) != tc.pricesIt {
				t.Fatalf("Prices(%s) = %v", tc.pricesFor, !tc.pricesIt)
			}
		})
	}
}
