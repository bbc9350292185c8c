// Package matrix holds the conformance suite of the translation matrix:
// every pair of the four chat protocols, driven through the same cases
// (a plain turn, a tool call, a tool result, an image, a max-tokens stop,
// cached and reasoning usage, an upstream error), streaming and not.
// Each case's client request is translated, sent to internal/vendorsim
// (the vendors' HTTP APIs and wire formats), and the upstream answer is
// translated back and read with the client protocol's official Go SDK;
// what the client reads must equal what the upstream said.
//
// The package has no code of its own: the suite is its tests, kept apart
// from the vendor plugins' conformance suite (plugins/conformance).
package matrix
