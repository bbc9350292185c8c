package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	ten := make([]time.Duration, 10)
	for i := range ten {
		ten[i] = time.Duration(i+1) * time.Millisecond
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Microsecond
	}
	tests := []struct {
		desc    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{desc: "empty", samples: nil, p: 50, want: 0},
		{desc: "one sample", samples: []time.Duration{7}, p: 99, want: 7},
		{desc: "p50 of ten is the fifth", samples: ten, p: 50, want: 5 * time.Millisecond},
		{desc: "p90 of ten is the ninth, not the tenth", samples: ten, p: 90, want: 9 * time.Millisecond},
		{desc: "p99 of ten is the largest", samples: ten, p: 99, want: 10 * time.Millisecond},
		{desc: "p0 is the smallest", samples: ten, p: 0, want: time.Millisecond},
		{desc: "p100 is the largest", samples: ten, p: 100, want: 10 * time.Millisecond},
		{desc: "p99 of a hundred", samples: hundred, p: 99, want: 99 * time.Microsecond},
		{desc: "p50 of a hundred", samples: hundred, p: 50, want: 50 * time.Microsecond},
		{desc: "p99.9 of a hundred rounds up", samples: hundred, p: 99.9, want: 100 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := Percentile(tc.samples, tc.p); got != tc.want {
				t.Fatalf("Percentile(%v) = %s, want %s", tc.p, got, tc.want)
			}
		})
	}
}

func TestDistributionSorts(t *testing.T) {
	t.Parallel()
	samples := []time.Duration{9, 1, 5, 3, 7, 2, 8, 4, 6, 10}
	for i := range samples {
		samples[i] *= time.Microsecond
	}
	got := Distribution(samples)
	want := Dist{P50: 5, P90: 9, P99: 10}
	if got != want {
		t.Fatalf("Distribution = %+v, want %+v", got, want)
	}
}
