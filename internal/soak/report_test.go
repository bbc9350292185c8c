package soak

import (
	"path/filepath"
	"strings"
	"testing"
)

func minutes(rss ...int64) []Minute {
	var ms []Minute
	for i, r := range rss {
		ms = append(ms, Minute{At: strings.Repeat("1", i+1) + "m", RSSKB: r << 11, AnonKB: r << 10, Goroutines: 200, OpenFiles: 300, Calls: 1000, P99MS: 40})
	}
	return ms
}

func check(t *testing.T, r *Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, r.Checks)
	return Check{}
}

func TestEvaluateFlat(t *testing.T) {
	// The first minute (warm-up) may be far below the rest.
	r := &Report{Held: "0", Minutes: minutes(50, 150, 152, 151, 153, 150, 154)}
	r.Evaluate()
	if !r.Passed() {
		t.Fatalf("a flat run failed: %+v", r.Checks)
	}
}

func TestEvaluateLeaks(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Report)
	}{
		{"anonymous memory flat", func(r *Report) {
			for i := range r.Minutes {
				r.Minutes[i].AnonKB = int64(100+40*i) << 10
			}
		}},
		{"goroutines flat", func(r *Report) {
			for i := range r.Minutes {
				r.Minutes[i].Goroutines = 200 + 100*i
			}
		}},
		{"open files flat", func(r *Report) {
			for i := range r.Minutes {
				r.Minutes[i].OpenFiles = 300 + 200*i
			}
		}},
		{"p99 flat", func(r *Report) {
			for i := range r.Minutes {
				r.Minutes[i].P99MS = float64(40 * (i + 1))
			}
		}},
		{"errors", func(r *Report) { r.Minutes[3].Errors = 50 }},
		{"holds", func(r *Report) { r.Held = "0.0004" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Held: "0", Minutes: minutes(150, 150, 150, 150, 150, 150, 150)}
			tc.edit(r)
			r.Evaluate()
			if c := check(t, r, tc.name); c.Passed || r.Passed() {
				t.Fatalf("a run with a growing %s passed: %+v", tc.name, c)
			}
			for _, c := range r.Checks {
				if c.Name != tc.name && !c.Passed {
					t.Errorf("%s failed too: %+v", c.Name, c)
				}
			}
		})
	}
}

func TestEvaluateEmpty(t *testing.T) {
	r := &Report{Held: "0"}
	r.Evaluate()
	if r.Passed() {
		t.Fatal("a run without samples passed")
	}
	r = &Report{Held: "0", Minutes: []Minute{{Calls: 0}}}
	r.Evaluate()
	if r.Passed() {
		t.Fatal("a run without calls passed")
	}
}

func TestReportRoundTrip(t *testing.T) {
	r := &Report{Started: "2026-11-28T00:00:00Z", Duration: "3m0s", Interval: "1m0s", Concurrency: 64,
		Mix: []string{"chat ×4"}, Held: "0", Minutes: minutes(150, 151, 152)}
	r.Minutes[1].FirstError = "chat: 502"
	r.Minutes[1].Errors = 1
	r.Evaluate()
	path := filepath.Join(t.TempDir(), "soak.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Minutes) != 3 || back.Minutes[2].AnonKB != 152<<10 || back.Concurrency != 64 {
		t.Fatalf("read back %+v", back)
	}
	var md strings.Builder
	if err := back.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{"# Soak: 3m0s at c=64", "| 1m | 300.0 | 150.0 |", "| 111m | 304.0 | 152.0 |", "PASS anonymous memory flat", "First error at 11m: `chat: 502`"} {
		if !strings.Contains(out, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n| ") != 1+3 {
		t.Errorf("want a header and one row per interval:\n%s", out)
	}
}

func TestDeal(t *testing.T) {
	deck := deal(Mix("http://gw", "k"))
	n := map[string]int{}
	for _, c := range deck {
		n[c.Name]++
	}
	if len(deck) != 10 || n["chat"] != 4 || n["search"] != 1 || n["video (async)"] != 1 {
		t.Fatalf("deck %v", n)
	}
	// Media is spread, not bunched at the end.
	if deck[len(deck)-1].Media && deck[len(deck)-2].Media {
		t.Fatalf("media bunched: %v", n)
	}
}
