package codec

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The scanner is checked against encoding/json, the reference decoder.
func TestScanStrings(t *testing.T) {
	cases := []string{
		`""`, `"plain"`, `"a\nb\tc"`, `"quote \" and \\ slash \/"`, `"\u00e9t\u00e9"`,
		`"\ud83d\ude00 smile"`, `"lone \ud83d high"`, `"été 🌞"`, `"\b\f\r"`, `"\u0000"`,
	}
	for _, raw := range cases {
		t.Run(raw, func(t *testing.T) {
			var want string
			if err := json.Unmarshal([]byte(raw), &want); err != nil {
				t.Fatal(err)
			}
			if got := strValue(raw); got != want {
				t.Fatalf("strValue = %q, want %q", got, want)
			}
			if got, w := countChars(raw), int64(utf8.RuneCountInString(want)); got != w {
				t.Fatalf("countChars = %d, want %d", got, w)
			}
		})
	}
}

func TestScanNumbers(t *testing.T) {
	cases := []struct {
		raw   string
		n     int64
		isInt bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"-7", -7, true}, {"1.0", 0, false}, {"1e3", 0, false},
		{"9223372036854775807", 9223372036854775807, true}, {"9223372036854775808", 0, false},
		{`"5"`, 0, false}, {"null", 0, false}, {"", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			n, ok := intValue(tc.raw)
			if ok != tc.isInt || n != tc.n {
				t.Fatalf("intValue(%q) = %d, %v; want %d, %v", tc.raw, n, ok, tc.n, tc.isInt)
			}
		})
	}
}

func TestScanWalk(t *testing.T) {
	cases := []struct {
		desc string
		json string
		keys []string
		bad  bool
	}{
		{"object", `{"a":1, "b" : [1,{"c":"}"}], "d":"x\"y"}`, []string{"a", "b", "d"}, false},
		{"empty", `{ }`, nil, false},
		{"escaped key", `{"m\u006fdel":1}`, []string{"model"}, false},
		{"missing colon", `{"a" 1}`, nil, true},
		{"missing comma", `{"a":1 "b":2}`, []string{"a"}, true},
		{"cut short", `{"a":[1,2`, nil, true},
		{"not an object", `[1]`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			it := members(tc.json, 0)
			var keys []string
			for {
				k, _, _, ok := it.next()
				if !ok {
					break
				}
				keys = append(keys, keyName(k))
			}
			if it.bad != tc.bad {
				t.Fatalf("bad = %v, want %v", it.bad, tc.bad)
			}
			if len(keys) != len(tc.keys) {
				t.Fatalf("keys = %q, want %q", keys, tc.keys)
			}
			for i := range keys {
				if keys[i] != tc.keys[i] {
					t.Fatalf("keys = %q, want %q", keys, tc.keys)
				}
			}
		})
	}
}

func TestAppendQuotedRoundTrips(t *testing.T) {
	for _, s := range []string{"", "gpt-4o", "a\"b\\c", "line\nbreak\x01", "été"} {
		t.Run(s, func(t *testing.T) {
			var got string
			if err := json.Unmarshal(appendQuoted(nil, s), &got); err != nil || got != s {
				t.Fatalf("appendQuoted(%q) decodes to %q, %v", s, got, err)
			}
		})
	}
}

func TestDeepNestingRefusedWithoutRecursion(t *testing.T) {
	cases := []struct {
		desc  string
		depth int
		valid bool
	}{{"at the limit", maxNesting, true}, {"one past", maxNesting + 1, false}, {"millions", 4_000_000, false}}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			s := strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth)
			if got := validJSON(s); got != tc.valid {
				t.Fatalf("validJSON(depth %d) = %v, want %v", tc.depth, got, tc.valid)
			}
			body := `{"model":"m","messages":` + s + `}`
			if _, err := For(protocol.OpenAIChat).Inspect([]byte(body)); err == nil {
				t.Fatal("Inspect accepted a nested array as messages")
			}
			For(protocol.OpenAIChat).ErrorMessage([]byte(s))
		})
	}
}
