// Package protocol names the four chat protocols and holds what the codecs
// of all four share: the SSE event and token usage.
package protocol

// ID is a chat protocol id as used in config and in X-Protocol-Translation.
type ID string

// The four chat protocols.
const (
	OpenAIChat        ID = "openai_chat"        // POST /v1/chat/completions
	AnthropicMessages ID = "anthropic_messages" // POST /v1/messages
	OpenAIResponses   ID = "openai_responses"   // POST /v1/responses
	GeminiNative      ID = "gemini_native"      // POST /v1beta/models/{model}:generateContent
)

// All lists the protocols in a fixed order.
var All = []ID{OpenAIChat, AnthropicMessages, OpenAIResponses, GeminiNative}

// Valid reports whether id is one of the four.
func Valid(id ID) bool {
	switch id {
	case OpenAIChat, AnthropicMessages, OpenAIResponses, GeminiNative:
		return true
	}
	return false
}

// Event is one server-sent event.
type Event struct {
	Name string // the "event:" field; empty when absent
	Data []byte // the "data:" lines joined by "\n"
}

// Usage is token usage as reported by an upstream (or estimated).
type Usage struct {
	InputTokens      int64 // all input tokens, cached ones included
	OutputTokens     int64 // all output tokens, reasoning ones included
	CachedTokens     int64 // input tokens read from the prompt cache
	CacheWriteTokens int64 // input tokens written to the prompt cache (Anthropic)
	ReasoningTokens  int64
	Reported         bool // true when the upstream reported usage
}
