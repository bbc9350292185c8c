//go:build race

package storetest

// Slowdown is how many times slower this build runs than a plain one:
// the race detector's cost, for the budgets of speed checks.
const Slowdown = 8
