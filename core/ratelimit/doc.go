// Package ratelimit holds the gateway's own request limiters.
//
// PerKey is a fixed-window counter per API key (the logs API: 60 requests per
// minute per key, shared by the logs endpoints). Account is the account-wide
// limiter of every /v1 request: requests per minute over a 60-second sliding
// window, and requests in flight (concurrency), across all keys of an account.
//
// Both are in-memory and per process; state is kept in sharded maps, entries
// idle for longer than their window are evicted lazily by the calls
// themselves, and no goroutine is started. Shared is Account with its counts
// in a store several gateway instances share (a Counter, pgstore), so the
// account limits hold in total across instances.
package ratelimit
