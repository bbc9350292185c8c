package jsonw

import (
	"encoding/json"
	"testing"
)

func TestAppendStringMatchesDecoding(t *testing.T) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "line\nfeed\r\ttab", "\x00\x1f ctl", "héllo ✓", "bad \xff utf8", "<a & b>"} {
		var back string
		out := AppendString(nil, s)
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, out, err)
		}
		want := s
		if s == "bad \xff utf8" {
			want = "bad \ufffd utf8"
		}
		if back != want {
			t.Fatalf("%q -> %s -> %q", s, out, back)
		}
	}
}
