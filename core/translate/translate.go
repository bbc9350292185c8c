package translate

import (
	"time"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// RequestOptions says how to build the upstream request body.
type RequestOptions struct {
	// Model is the upstream model id to put in the body (ignored for
	// generate-content upstreams, whose model sits in the URL).
	Model string
	// MaxTokens is the value to send when the client omitted max tokens; 0
	// means the client gave one, which is kept.
	MaxTokens int64
	// Stream reports whether the call is streaming.
	Stream bool
	// Reasoning says the model reasons (caps { reasoning }): reasoning and
	// thinking fields are mapped where a mapping exists. Otherwise they are
	// dropped and warned, as for a native call.
	Reasoning bool
}

// ResponseOptions says how to build the client's response.
type ResponseOptions struct {
	Model     string    // the model id the client asked for, echoed back
	RequestID string    // gateway request id, used to derive response ids
	Created   time.Time // creation time reported to the client
	// IncludeUsage is set when a completions client asked for
	// stream_options.include_usage.
	IncludeUsage bool
}

// Translator converts one (client protocol, upstream protocol) pair.
// Translators are stateless and safe for concurrent use.
type Translator interface {
	From() protocol.ID
	To() protocol.ID
	// Request converts a validated client body to the upstream protocol.
	// warnings are the client field names dropped, as sent by the client
	// (dotted for nested fields), in request order, without duplicates.
	// Errors are *apierr.Error invalid_request.
	Request(body []byte, opts RequestOptions) (out []byte, warnings []string, err error)
	// Response converts a complete non-streaming upstream success body.
	Response(body []byte, opts ResponseOptions) ([]byte, error)
	// NewStream converts one upstream stream.
	NewStream(opts ResponseOptions) Stream
}

// Stream converts one upstream event stream. It is not safe for concurrent use.
type Stream interface {
	// Event converts one upstream event, emitting zero or more client events
	// at once; text is never held back.
	Event(ev protocol.Event, emit func(protocol.Event) error) error
	// End is called only after a complete upstream stream and emits what the
	// client protocol still needs (final usage, terminator). After an
	// upstream failure it is not called, so the client sees no terminator.
	End(emit func(protocol.Event) error) error
}

// Lookup returns the translator from a client protocol to an upstream
// protocol, if the gateway has one.
func Lookup(from, to protocol.ID) (Translator, bool) {
	switch {
	case from == protocol.OpenAIChat && to == protocol.AnthropicMessages:
		return chatToMessages{}, true
	case from == protocol.OpenAIChat && to == protocol.GeminiNative:
		return chatToGemini{}, true
	case from == protocol.AnthropicMessages && to == protocol.OpenAIChat:
		return messagesToChat{}, true
	case from == protocol.OpenAIResponses && to == protocol.OpenAIChat:
		return responsesToChat{}, true
	case from == protocol.GeminiNative && to == protocol.OpenAIChat:
		return geminiToChat{}, true
	}
	return nil, false
}

// HeaderValue is the X-Protocol-Translation value of a pair, for example
// "openai_chat_to_anthropic_messages".
func HeaderValue(from, to protocol.ID) string {
	return string(from) + "_to_" + string(to)
}
