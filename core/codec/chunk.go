package codec

import (
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Chunk is what a reader's scan of one upstream event found, so that a
// translator reads the event from it instead of scanning the event a
// second time. Its strings view the event's data (raw JSON, escapes
// kept): they are valid until the next Observe.
type Chunk struct {
	Event protocol.Event // the event observed
	// Object reports that the data is one valid JSON object; Done that it
	// is the [DONE] sentinel instead.
	Object, Done bool
	// Read reports that the fields below hold all the translator needs of
	// the event; otherwise (an event kind the scan leaves alone) the
	// translator reads Event itself. A tracker made by NewStream never
	// sets it.
	Read bool

	// Type is a messages or responses event's type (the event name, or
	// its type field); Index its block index (messages) or output_index.
	Type  string
	Index int64
	// Block is the type of a messages event's content block or delta.
	Block string
	Text  string      // generated text: raw inside of a JSON string
	Tools []ToolDelta // tool calls started or continued, in order
	// Finish is the finish or stop reason (unescaped), when HasFinish.
	Finish    string
	HasFinish bool
	// Usage holds the event's usage counts, when HasUsage.
	Usage    protocol.Usage
	HasUsage bool
	Error    string // an error object, raw ("" when absent)
}

// ToolDelta is one tool_calls entry of a completions chunk; ID, Name and
// Args are raw insides ("" when absent or not a string).
type ToolDelta struct {
	Index    int64
	ID, Name string
	Args     string
}

// NewReader returns the tracker of an upstream stream of protocol p that
// also hands each event's scan to a translator (Reader.Chunk).
func NewReader(p protocol.ID) Reader {
	switch p {
	case protocol.OpenAIChat:
		r := &chatReader{}
		r.chunk = &r.c // one allocation for both
		return r
	case protocol.AnthropicMessages:
		r := &msgReader{msgStream: msgStream{open: -1, last: -1}}
		r.chunk = &r.c
		return r
	case protocol.OpenAIResponses:
		return &chunkOf{Stream: responsesCodec.NewStream()}
	case protocol.GeminiNative:
		return &chunkOf{Stream: geminiCodec.NewStream()}
	}
	return nil
}

// Reader is a Stream whose scan of each event a translator reads.
type Reader interface {
	Stream
	// Chunk is what the last Observe found in its event.
	Chunk() *Chunk
}

// chunkOf is the reader of a protocol whose scan hands over nothing but
// the event checked: the translator reads the event itself.
type chunkOf struct {
	Stream
	c Chunk
}

func (r *chunkOf) Observe(ev protocol.Event) bool {
	broken := r.Stream.Broken()
	keep := r.Stream.Observe(ev)
	r.c = Chunk{Event: ev, Object: !broken && !r.Stream.Broken() && objectData(ev.Data)}
	return keep
}

func (r *chunkOf) Chunk() *Chunk { return &r.c }

// chatReader is a completions tracker that fills its own chunk.
type chatReader struct {
	chatStream
	c Chunk
}

func (r *chatReader) Chunk() *Chunk { return r.chunk }

// msgReader is a messages tracker that fills its own chunk.
type msgReader struct {
	msgStream
	c Chunk
}

func (r *msgReader) Chunk() *Chunk { return r.chunk }

// reset empties c for the next event, keeping its storage.
func (c *Chunk) reset(ev protocol.Event) {
	*c = Chunk{Event: ev, Tools: c.Tools[:0], Index: -1}
}

// tool returns a new entry of c.Tools.
func (c *Chunk) tool() *ToolDelta {
	c.Tools = append(c.Tools, ToolDelta{})
	return &c.Tools[len(c.Tools)-1]
}

// objectData reports whether data, already found valid by Observe (or
// not broken), is a JSON object.
func objectData(data []byte) bool {
	s := str(data)
	i := skipWS(s, 0)
	return i < len(s) && s[i] == '{'
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
