// Package translate converts chat calls between the gateway's four client
// protocols and the protocol an upstream channel speaks: every pair of two
// different protocols, twelve in all. A pair is composed of two sides
// through one intermediate form (ir.go): the client protocol's side
// decodes the request and writes the answer and the stream, the upstream
// protocol's side encodes the request and reads the answer and the stream.
// Each protocol's side lives in <protocol>_request.go and
// <protocol>_response.go.
//
// Fields the upstream protocol cannot carry are dropped and reported as
// warnings (the X-Protocol-Warning header), named as the client sent them.
// docs/protocols.md holds the full matrix.
package translate
