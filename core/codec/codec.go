package codec

import (
	"fmt"
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Request is what the pipeline needs from a client body.
type Request struct {
	Model        string // "" for gemini_native (the model is in the URL path)
	Stream       bool   // body "stream": true (gemini: decided by the path, not here)
	MaxTokens    int64  // explicit max tokens; 0 when omitted
	InputBytes   int64  // byte length of the raw JSON values counted for the pre-charge estimate
	IncludeUsage bool   // completions: stream_options.include_usage
	// BuiltinTools are the built-in tool types present, each once, in
	// request order: web_search and image_generation for completions, any
	// non-function type for responses.
	BuiltinTools       []string
	HasImages          bool // any image part in the conversation
	PreviousResponseID bool // responses: previous_response_id present and non-null
}

// InputEstimate is the pre-charge input token estimate: ceil(InputBytes/4).
func (r Request) InputEstimate() int64 {
	if r.InputBytes <= 0 {
		return 0
	}
	return (r.InputBytes + 3) / 4
}

// RewriteOptions says what Rewrite changes in a client body.
type RewriteOptions struct {
	Model       string // upstream model id to set ("" = leave); ignored for gemini_native
	MaxTokens   int64  // when > 0, set the protocol's max tokens field to this value
	StreamUsage bool   // completions streaming: ensure stream_options.include_usage=true upstream
	// ChatMaxTokensField is the field a completions body gets when it has
	// neither max_tokens nor max_completion_tokens and MaxTokens > 0:
	// "max_tokens" (the default, understood by every compatible server) or
	// "max_completion_tokens" (required by OpenAI's reasoning models).
	ChatMaxTokensField string
}

// Codec is one chat protocol's view of request and response bodies.
type Codec interface {
	Protocol() protocol.ID
	// Inspect validates the body by this protocol's own rules and extracts
	// Request. Errors are *apierr.Error (invalid_request, 400) naming the field.
	Inspect(body []byte) (Request, error)
	// Rewrite applies opts; untouched bytes stay verbatim. The result may be
	// body itself when nothing changes.
	Rewrite(body []byte, opts RewriteOptions) ([]byte, error)
	// Usage reads usage from a complete non-streaming success body.
	Usage(body []byte) protocol.Usage
	// OutputChars counts characters of generated text and tool arguments in
	// a non-streaming body (for estimates).
	OutputChars(body []byte) int64
	// ErrorMessage extracts the human-readable message from the vendor's
	// error body ("" if none).
	ErrorMessage(body []byte) string
	// NewStream returns a tracker for one upstream response stream.
	NewStream() Stream
}

// Stream tracks one upstream response stream. It is not safe for
// concurrent use.
type Stream interface {
	// Observe inspects one event. It returns false for a completions
	// usage-only chunk (empty choices + usage) so the gateway can drop it
	// when the client did not ask for usage; true otherwise.
	Observe(ev protocol.Event) bool
	// Usage is the usage seen so far; Reported is true once the upstream
	// reported its final count.
	Usage() protocol.Usage
	// OutputChars counts characters of text and tool arguments emitted so far.
	OutputChars() int64
	// Complete reports whether the protocol's proper end was seen.
	Complete() bool
	// Chunk returns what each Observe from now on finds in its event,
	// for a translator to read instead of the event: one Chunk, refilled
	// by each Observe. A relay that translates asks for it before the
	// first event; one that does not saves the filling.
	Chunk() *Chunk
	// Broken reports that an event did not parse (its data is not the
	// JSON object the protocol sends): the stream cannot go on.
	Broken() bool
	// Stop emits the events that end the client's stream as the protocol
	// ends a stop at max tokens, as though the last event observed had
	// not been sent: the gateway stops an upstream that runs past the
	// limit it sent there.
	Stop(o StopOptions, emit func(protocol.Event) error) error
}

var (
	chatCodec      Codec = chat{}
	messagesCodec  Codec = messages{}
	responsesCodec Codec = responses{}
	geminiCodec    Codec = gemini{}
)

// For returns the codec of protocol p, nil for an unknown id.
func For(p protocol.ID) Codec {
	switch p {
	case protocol.OpenAIChat:
		return chatCodec
	case protocol.AnthropicMessages:
		return messagesCodec
	case protocol.OpenAIResponses:
		return responsesCodec
	case protocol.GeminiNative:
		return geminiCodec
	}
	return nil
}

// invalid builds the invalid_request error of a failed validation.
func invalid(format string, args ...any) error {
	return apierr.New(apierr.InvalidRequest, fmt.Sprintf(format, args...))
}

// openBody checks that body is one valid JSON object and returns it as a
// string with the index of its '{'.
func openBody(body []byte) (string, int, error) {
	s := str(body)
	start := skipWS(s, 0)
	if start == len(s) {
		return "", 0, invalid("the request body is empty; send a JSON object")
	}
	if !validJSON(s) {
		return "", 0, invalid("the request body is not valid JSON (or nested more than 1000 levels deep)")
	}
	if s[start] != '{' {
		return "", 0, invalid("the request body must be a JSON object")
	}
	return s, start, nil
}

// seen tracks which known top-level fields a body has, so a repeated one
// is refused: the gateway and a last-wins upstream must never read
// different values of, say, "model".
type seen uint32

func (d *seen) mark(bit uint, name string) error {
	if *d&(1<<bit) != 0 {
		return invalid("the field %q appears more than once", name)
	}
	*d |= 1 << bit
	return nil
}

func (d seen) has(bit uint) bool { return d&(1<<bit) != 0 }

// quoteShort quotes a raw client value for an error message, cut to 40
// bytes.
func quoteShort(raw string) string {
	s := raw
	if isString(raw) {
		s = strValue(raw)
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// requireModel validates a "model" value and returns it as an owned string.
func requireModel(raw string) (string, error) {
	if !isString(raw) {
		return "", invalid("the field \"model\" must be a string naming the model")
	}
	m := strValue(raw)
	if m == "" {
		return "", invalid("the field \"model\" must not be empty")
	}
	if len(raw) == len(m)+2 {
		// A substring of the body: copy it so Request never aliases a buffer
		// the caller may reuse.
		m = strings.Clone(m)
	}
	return m, nil
}

// positiveInt validates an optional max-tokens style field (null = omitted).
func positiveInt(raw, name string) (int64, error) {
	if isNull(raw) {
		return 0, nil
	}
	n, ok := intValue(raw)
	if !ok || n <= 0 {
		return 0, invalid("the field %q must be a positive integer", name)
	}
	return n, nil
}

// numberIn validates an optional number field against [lo, hi].
func numberIn(raw, name string, lo, hi float64) error {
	if isNull(raw) {
		return nil
	}
	f, ok := floatValue(raw)
	if !ok || f < lo || f > hi {
		return invalid("the field %q must be a number from %g to %g", name, lo, hi)
	}
	return nil
}

// boolField validates an optional bool field and returns its value.
func boolField(raw, name string) (bool, error) {
	if isNull(raw) {
		return false, nil
	}
	if !isBool(raw) {
		return false, invalid("the field %q must be true or false", name)
	}
	return raw == "true", nil
}

// rawLen is the byte length counted for the estimate; null counts nothing.
func rawLen(raw string) int64 {
	if isNull(raw) {
		return 0
	}
	return int64(len(raw))
}

// addTool appends t to list unless it is there already.
func addTool(list []string, t string) []string {
	for _, x := range list {
		if x == t {
			return list
		}
	}
	return append(list, strings.Clone(t))
}

// count reads a token count: a non-negative integer (a float is truncated;
// anything else is 0).
func count(raw string) int64 {
	if n, ok := intValue(raw); ok {
		return max(n, 0)
	}
	if f, ok := floatValue(raw); ok && f > 0 && f < 1e18 {
		return int64(f)
	}
	return 0
}
