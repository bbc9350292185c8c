package translate

import (
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/codec"
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
	// Checked says the body was found one valid JSON object already (the
	// codec's Inspect, which the gateway applies to every chat request
	// before it translates one): it is not scanned again.
	Checked bool
}

// ResponseOptions says how to build the client's response.
type ResponseOptions struct {
	Model     string    // the model id the client asked for, echoed back
	RequestID string    // gateway request id, used to derive response ids
	Created   time.Time // creation time reported to the client
	// IncludeUsage is set when a completions client asked for
	// stream_options.include_usage.
	IncludeUsage bool
	// Checked says a whole answer was found one valid JSON object
	// already (codec.ValidObject, which the gateway applies to every
	// whole answer before it reads it): it is not scanned again.
	Checked bool
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

// Stream converts one upstream event stream. It is not safe for concurrent
// use. The events it emits are only valid during the emit call: their
// data lives in a buffer the stream reuses, so emit must copy what it keeps.
type Stream interface {
	// Event converts one upstream event, emitting zero or more client events
	// at once; text is never held back.
	Event(ev protocol.Event, emit func(protocol.Event) error) error
	// Read is Event for an event the caller's codec tracker of the
	// upstream protocol has just observed: the translator reads the
	// tracker's scan of it (codec.Stream.Chunk) instead of the event, so
	// the event is scanned once.
	Read(c *codec.Chunk, emit func(protocol.Event) error) error
	// End is called only after a complete upstream stream and emits what the
	// client protocol still needs (final usage, terminator). After an
	// upstream failure it is not called, so the client sees no terminator.
	End(emit func(protocol.Event) error) error
	// Stop ends the client's stream as its protocol ends a stop at max
	// tokens, reporting usage u: the gateway stops an upstream that runs
	// past the limit it sent there. Neither Event nor End follows.
	Stop(u protocol.Usage, emit func(protocol.Event) error) error
}

// side is one protocol's half of every pair it is part of.
type side struct {
	id protocol.ID
	// decode reads a client body into the intermediate form, warning about
	// and refusing what target t cannot carry.
	decode func(root gjson.Result, t target, c *conv) error
	// encode writes the intermediate form as an upstream body.
	encode func(c *conv, opts RequestOptions, sizeHint int) ([]byte, error)
	// read parses a complete upstream answer.
	read func(root gjson.Result) (*answer, error) // a whole answer, parsed by answerRoot
	// write renders an answer for the client.
	write func(a *answer, o ResponseOptions, sizeHint int) []byte
	// newReader parses an upstream stream; newStream is a stream writing a
	// client one (streamFor its writer), still without its reader.
	newReader func(rs *readers) reader
	newStream func(o ResponseOptions) *pairStream
}

// streamWith is a pairStream with its client writer: one allocation.
type streamWith[W any] struct {
	pairStream
	writer W
}

// streamFor makes a stream writing with a W.
func streamFor[W any, P interface {
	*W
	sink
	init(o ResponseOptions)
}](o ResponseOptions) *pairStream {
	s := new(streamWith[W])
	P(&s.writer).init(o)
	s.w = P(&s.writer)
	return &s.pairStream
}

// readers is the storage of a stream's upstream reader, one field per
// protocol: it lives in the pairStream, so the reader is no allocation of
// its own.
type readers struct {
	chat      chatReader
	messages  messagesReader
	responses responsesReader
	gemini    geminiReader
}

func sideOf(p protocol.ID) *side {
	switch p {
	case protocol.OpenAIChat:
		return &chatSide
	case protocol.AnthropicMessages:
		return &messagesSide
	case protocol.OpenAIResponses:
		return &responsesSide
	case protocol.GeminiNative:
		return &geminiSide
	}
	return nil
}

// pair is the translator of a client side and an upstream side.
type pair struct {
	from, to *side
}

func (p *pair) From() protocol.ID { return p.from.id }
func (p *pair) To() protocol.ID   { return p.to.id }

func (p *pair) Request(body []byte, opts RequestOptions) ([]byte, []string, error) {
	root, err := requestRoot(body, opts.Checked)
	if err != nil {
		return nil, nil, err
	}
	c := newConv()
	if err := p.from.decode(root, target{p: p.to.id, reasoning: opts.Reasoning}, c); err != nil {
		return nil, nil, err
	}
	if !c.hasTurns() {
		return nil, nil, invalid("the conversation has no user or assistant message to send")
	}
	out, err := p.to.encode(c, opts, len(body))
	if err != nil {
		return nil, nil, err
	}
	return out, c.warn, nil
}

func (p *pair) Response(body []byte, o ResponseOptions) ([]byte, error) {
	root, err := answerRoot(body, o.Checked)
	if err != nil {
		return nil, err
	}
	a, err := p.to.read(root)
	if err != nil {
		return nil, err
	}
	return p.from.write(a, o, len(body)), nil
}

func (p *pair) NewStream(o ResponseOptions) Stream {
	s := p.from.newStream(o)
	s.up, s.r = p.to.id, p.to.newReader(&s.rs)
	return s
}

// pairStream feeds an upstream reader into a client writer, event by event.
type pairStream struct {
	up    protocol.ID
	scan  codec.Stream // Event's own scan; made at its first use
	chunk *codec.Chunk // scan's
	r     reader
	w     sink
	rs    readers // r's storage
}

func (s *pairStream) Event(ev protocol.Event, emit func(protocol.Event) error) error {
	if s.scan == nil {
		s.scan = codec.For(s.up).NewStream()
		s.chunk = s.scan.Chunk()
	}
	s.scan.Observe(ev)
	return s.Read(s.chunk, emit)
}

func (s *pairStream) Read(c *codec.Chunk, emit func(protocol.Event) error) error {
	s.w.setEmit(emit)
	return s.r.read(c, s.w)
}

func (s *pairStream) End(emit func(protocol.Event) error) error {
	s.w.setEmit(emit)
	return s.w.end()
}

func (s *pairStream) Stop(u protocol.Usage, emit func(protocol.Event) error) error {
	s.w.setEmit(emit)
	s.w.setUsage(usageOf(u))
	if err := s.w.finish(finishLength); err != nil {
		return err
	}
	return s.w.end()
}

// matrix holds the twelve pairs, indexed by protocol.All positions.
var matrix = func() (m [4][4]*pair) {
	for i, from := range protocol.All {
		for j, to := range protocol.All {
			if i != j {
				m[i][j] = &pair{from: sideOf(from), to: sideOf(to)}
			}
		}
	}
	return m
}()

func indexOf(p protocol.ID) int {
	for i, q := range protocol.All {
		if q == p {
			return i
		}
	}
	return -1
}

// Lookup returns the translator from a client protocol to an upstream
// protocol: every pair of two different protocols has one.
func Lookup(from, to protocol.ID) (Translator, bool) {
	i, j := indexOf(from), indexOf(to)
	if i < 0 || j < 0 || i == j {
		return nil, false
	}
	return matrix[i][j], true
}

// HeaderValue is the X-Protocol-Translation value of a pair, for example
// "openai_chat_to_anthropic_messages"; the known pairs' are made once.
func HeaderValue(from, to protocol.ID) string {
	if i, j := indexOf(from), indexOf(to); i >= 0 && j >= 0 {
		return headerValues[i][j]
	}
	return string(from) + "_to_" + string(to)
}

// HeaderValues is HeaderValue as a header's value slice, shared by
// every response of the pair: read-only, and of capacity 1, so an Add
// copies instead of writing into it.
func HeaderValues(from, to protocol.ID) []string {
	if i, j := indexOf(from), indexOf(to); i >= 0 && j >= 0 {
		return headerSlices[i][j]
	}
	return []string{HeaderValue(from, to)}
}

var headerValues = func() (v [4][4]string) {
	for i, from := range protocol.All {
		for j, to := range protocol.All {
			v[i][j] = string(from) + "_to_" + string(to)
		}
	}
	return v
}()

var headerSlices = func() (v [4][4][]string) {
	for i := range headerValues {
		for j := range headerValues[i] {
			v[i][j] = []string{headerValues[i][j]}[:1:1]
		}
	}
	return v
}()

// hasTurns reports whether the conversation has a user or assistant message.
func (c *conv) hasTurns() bool {
	for i := range c.msgs {
		if c.msgs[i].role != roleSystem && len(c.msgs[i].parts) > 0 {
			return true
		}
	}
	return false
}
