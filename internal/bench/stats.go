// Package bench is the harness behind `make bench`: it starts the upstream
// simulator and the gateway as real processes, drives them with a
// closed-loop load generator, accounts the gateway's CPU and memory from
// /proc, and writes the results as a table, JSON and a PNG chart.
package bench

import (
	"math"
	"slices"
	"time"
)

// Percentile is the nearest-rank percentile (p in 0..100) of sorted samples;
// 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	// Nearest rank: the smallest sample with at least p% of samples at or below it.
	// The epsilon keeps 0.9*10 = 9.000000000000002 at rank 9.
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	return sorted[rank-1]
}

// Dist is the p50/p90/p99 of a set of durations, in microseconds.
type Dist struct {
	P50 float64 `json:"p50_us"`
	P90 float64 `json:"p90_us"`
	P99 float64 `json:"p99_us"`
}

// Distribution sorts samples in place and summarises them.
func Distribution(samples []time.Duration) Dist {
	slices.Sort(samples)
	return Dist{
		P50: micros(Percentile(samples, 50)),
		P90: micros(Percentile(samples, 90)),
		P99: micros(Percentile(samples, 99)),
	}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
