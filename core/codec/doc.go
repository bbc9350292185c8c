// Package codec holds the four chat codecs the gateway runs on every chat
// request and every streamed chunk: completions-style, messages-style,
// responses-style and generate-content-style.
//
// A codec validates a client body by its protocol's own rules and reads
// what the pipeline needs (Inspect) without decoding the body; rewrites
// only the fields the gateway must change, keeping every other byte
// verbatim, so a native upstream receives unknown fields, thinking
// signatures and cache_control untouched (Rewrite); reads usage and error
// messages from upstream answers; and tracks a stream's usage, emitted
// characters and proper end (Stream). See docs/codecs.md.
package codec
