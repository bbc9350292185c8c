package codec

import (
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Chunk is what a tracker's scan of one upstream event found, so that a
// translator reads the event from it instead of scanning the event a
// second time. Its strings view the event's data (raw JSON, escapes
// kept): they are valid until the next Observe.
type Chunk struct {
	Event protocol.Event // the event observed
	// Object reports that the data is one valid JSON object; Done that it
	// is the [DONE] sentinel instead.
	Object, Done bool
	// Type is a messages or responses event's type (the event name, or
	// its type field); Index its block index (messages) or output_index.
	Type  string
	Index int64
	// Block is the type of a messages event's content block or delta.
	Block string
	Text  string      // generated text: raw inside of a JSON string
	Tools []ToolDelta // tool calls started or continued, in order
	// Finish is the finish or stop reason (unescaped), when HasFinish:
	// a responses stream's status, with Reason its incomplete_details
	// reason.
	Finish, Reason string
	HasFinish      bool
	// Usage holds the event's usage counts, when HasUsage.
	Usage    protocol.Usage
	HasUsage bool
	Error    string // an error object, raw ("" when absent)
	// Parts are a generate-content chunk's parts of candidate 0 that are
	// not thoughts, in order; Blocked says its promptFeedback blocks the
	// prompt.
	Parts   []Part
	Blocked bool
}

// ToolDelta is one tool_calls entry of a completions chunk; ID, Name and
// Args are raw insides ("" when absent or not a string).
type ToolDelta struct {
	Index    int64
	ID, Name string
	Args     string
}

// Part is a generate-content part: text (a raw inside), or a whole
// function call with ID and Name raw insides and Args its args object,
// raw ("" when not an object).
type Part struct {
	Text     string
	Call     bool
	ID, Name string
	Args     string
}

// reset empties c for the next event, keeping its storage.
func (c *Chunk) reset(ev protocol.Event) {
	*c = Chunk{Event: ev, Tools: c.Tools[:0], Parts: c.Parts[:0], Index: -1}
}

// tool returns a new entry of c.Tools.
func (c *Chunk) tool() *ToolDelta {
	c.Tools = append(c.Tools, ToolDelta{})
	return &c.Tools[len(c.Tools)-1]
}

// jsonInt reads a raw JSON value as gjson's Int does (a float truncated,
// a numeric string parsed, true as 1), which is how a translator always
// read an index.
func jsonInt(raw string) int64 {
	if n, ok := intValue(raw); ok {
		return n
	}
	if raw == "" {
		return 0
	}
	return gjson.Parse(raw).Int()
}
