package files

import (
	"strings"
	"testing"
	"time"
)

func TestID(t *testing.T) {
	exp := time.Unix(1_800_086_400, 0)
	seen := map[string]bool{}
	for range 1000 {
		id, err := newID(exp)
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != idLen || strings.ToLower(id) != id || seen[id] {
			t.Fatalf("id %q", id)
		}
		seen[id] = true
		got, ok := parseID(id)
		if !ok || !got.Equal(exp) {
			t.Fatalf("parse %q: %v %v", id, got, ok)
		}
	}
	never, _ := newID(time.Time{})
	if got, ok := parseID(never); !ok || !got.IsZero() || !strings.HasPrefix(never, "000000000") {
		t.Fatalf("never: %q %v %v", never, got, ok)
	}
	good, _ := newID(exp)
	for _, bad := range []string{
		"", good[:idLen-1], good + "a", strings.ToUpper(good),
		"g" + good[1:], good[:expiryLen] + "1" + good[expiryLen+1:],
		"../" + good[3:], good[:10] + "/" + good[11:],
	} {
		if _, ok := parseID(bad); ok {
			t.Errorf("parseID(%q) accepted", bad)
		}
	}
}

func TestExpired(t *testing.T) {
	exp := time.Unix(100, 0)
	if expired(exp, time.Unix(99, 999_999_999)) || !expired(exp, exp) || expired(time.Time{}, time.Unix(1<<40, 0)) {
		t.Fatal("expired")
	}
}
