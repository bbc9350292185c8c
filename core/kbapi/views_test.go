package kbapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		desc string
		s    string
		n    int
		want string
		cut  bool
	}{
		{"short", "abc", 5, "abc", false},
		{"exact", "abcde", 5, "abcde", false},
		{"bytes over, characters not", "€€€", 3, "€€€", false},
		{"cut at a character", "a€b€c", 3, "a€b", true},
		{"CJK", strings.Repeat("计", 10), 4, "计计计计", true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, cut := truncate(tc.s, tc.n)
			if got != tc.want || cut != tc.cut || !utf8.ValidString(got) {
				t.Fatalf("truncate(%q, %d) = %q, %v; want %q, %v", tc.s, tc.n, got, cut, tc.want, tc.cut)
			}
		})
	}
}

func TestSplitIDs(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"", 25, ""},
		{" , ,", 25, ""},
		{"a, b,,a ,c", 25, "a|b|c"},
		{"a,b,c,d", 2, "a|b"},
	}
	for _, tc := range tests {
		if got := strings.Join(splitIDs(tc.in, tc.max), "|"); got != tc.want {
			t.Errorf("splitIDs(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestIntParam(t *testing.T) {
	tests := []struct {
		query  string
		capped bool
		want   int
		bad    bool
	}{
		{"", true, 20, false},
		{"limit=7", true, 7, false},
		{"limit=50", true, 50, false},
		{"limit=51", true, 50, false},
		{"limit=51", false, 0, true},
		{"limit=0", true, 0, true},
		{"limit=-3", true, 0, true},
		{"limit=x", true, 0, true},
		{"limit=2.5", true, 0, true},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "/s?"+tc.query, nil)
		got, err := intParam(r, "limit", 20, 1, 50, tc.capped)
		if (err != nil) != tc.bad || !tc.bad && got != tc.want {
			t.Errorf("%q capped=%v: %d, %v; want %d, bad %v", tc.query, tc.capped, got, err, tc.want, tc.bad)
		}
	}
}
