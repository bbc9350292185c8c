// Package httpvendor is the HTTP machinery the shipped vendor plugins share:
// one pooled client per plugin, the upstream request built with the caller's
// context and timeouts, non-streaming bodies read once, SSE relayed event by
// event to a vendor.Sink, and every way a call can fail without an answer
// classified into a *vendor.Failure.
//
// A vendor adds only what is its own: which channel settings it takes, and a
// Route per channel that turns a request into the upstream URL and headers.
// Non-2xx upstream answers are not errors: their status, body (capped at
// MaxErrorBody) and selected headers go back verbatim for the gateway's codec.
package httpvendor
