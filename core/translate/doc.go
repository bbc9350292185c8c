// Package translate converts chat calls between the gateway's four client
// protocols and the protocol an upstream channel speaks. There is one small
// translator per (client protocol, upstream protocol) pair, in files named
// <client>_<upstream>.go; each maps the request body, the non-streaming
// response body and the response stream event by event.
//
// Fields a target protocol cannot carry are dropped and reported as
// warnings (the X-Protocol-Warning header), named as the client sent them.
// docs/protocols.md holds the full matrix.
package translate
