package money

import "testing"

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
	for _, bad := range []string{"", "abc", "1.2.3", "0.0000000001", "1e5", "-", "."} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestPerMillion(t *testing.T) {
	// 1000 tokens at 0.15 per million = 0.00015 credits.
	if got := PerMillion(1000, MustParse("0.15")); got.String() != "0.00015" {
		t.Fatalf("got %s", got)
	}
	// rounding half up at the nano
	if got := PerMillion(1, Nano(500_000)); got != 1 {
		t.Fatalf("got %d", got)
	}
	if got := PerMillion(1<<62, Credits(1000)); got != Nano(1<<63-1) {
		t.Fatalf("no saturation: %d", got)
	}
}
