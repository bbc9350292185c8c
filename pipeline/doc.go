// Package pipeline is the ordered chain every public request runs through:
//
//	auth → allowlist → idempotency → precharge → translate → dispatch → settle → log
//
// A Stage is a small interface; the order is data (config `pipeline { stages }`),
// compiled once at start by Build. Stages run in order until one returns an
// error; the error is rendered once, at the edge, in the client protocol's
// shape. Stages that also implement Finisher (settle, log) then still run, so
// every request whose key is known is settled and logged exactly once.
//
// An integrator adds a stage by implementing Stage, registering a Factory
// under a name in a Registry, and naming it in the config (see
// examples/custom-stage).
package pipeline
