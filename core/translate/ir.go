package translate

import (
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Every pair goes through one intermediate form: the client protocol's
// side decodes the request into a conv and the upstream protocol's side
// encodes it; an upstream answer is read into an answer (or, streaming,
// into calls on a sink) and written in the client's protocol. Four sides
// make the twelve pairs, and the per-message walk and the tool mapping of
// each protocol are written once.
//
// Strings keep their JSON form on the way through: text, ids and names
// are the raw inside of a JSON string (escapes kept), so a prompt or a
// delta is never unescaped and escaped again.

// conv is a chat request in the intermediate form.
type conv struct {
	model  string   // as the client named it (used when the route gives none)
	system []string // top-level system texts (raw insides), in order
	msgs   []msg

	maxTokens int64
	// Sampling values keep their raw JSON number text ("" = absent).
	temperature, topP, topK, seed, presence, frequency string
	stop                                               []string // raw JSON strings
	user                                               string   // raw JSON string ("" = absent)
	format                                             respFormat
	tools                                              []tool
	choice                                             toolChoice
	noParallel                                         bool     // parallel tool calls turned off
	effort                                             string   // reasoning effort asked ("" = none)
	budget                                             int64    // thinking budget in tokens, when the client gave one
	warn                                               warnings // what the decoding dropped or changed

	// The first system text, messages and parts' storage: a short
	// conversation is one allocation.
	systemArr [1]string
	msgArr    [4]msg
	partArr   [1]part
	parts     int // partArr's slots handed out
}

// addPart appends p to a message's parts, a message's first part taking a
// slot of the conversation's storage while one is free (of capacity 1: a
// second part moves the message's parts out).
func (c *conv) addPart(parts []part, p part) []part {
	if parts == nil && c.parts < len(c.partArr) {
		c.partArr[c.parts] = p
		c.parts++
		return c.partArr[c.parts-1 : c.parts : c.parts]
	}
	return append(parts, p)
}

// newConv returns an empty conversation using its own storage first.
func newConv() *conv {
	c := &conv{}
	c.system, c.msgs = c.systemArr[:0], c.msgArr[:0]
	return c
}

type role uint8

const (
	roleUser role = iota
	roleAssistant
	roleSystem // a system message in the conversation (not the top-level prompt)
)

// msg is one message. Tool results are parts of user messages, tool calls
// parts of assistant messages.
type msg struct {
	role  role
	plain bool // the client sent the content as one plain string
	parts []part
}

type partKind uint8

const (
	kindText partKind = iota
	kindMedia
	kindCall
	kindResult
)

// part is one piece of a message.
type part struct {
	kind partKind
	text string // kindText: raw inside
	m    media  // kindMedia
	// kindCall and kindResult: the call id and the function name (raw
	// insides; a result's name may be "").
	id, name string
	args     string // kindCall: the arguments JSON text (not escaped)
	content  []part // kindResult: text and media parts
	plain    bool   // kindResult: the content was one plain string
}

type mediaKind uint8

const (
	mediaImage mediaKind = iota
	mediaPDF
	mediaAudio
	mediaFile // an OpenAI file id of another kind
)

// media is an image, document or sound, by value (plain strings).
type media struct {
	kind   mediaKind
	mime   string
	data   string // base64 payload
	url    string // http(s) URL
	fileID string // OpenAI file id
	name   string // file name
	detail string // image detail (OpenAI)
	format string // audio format: wav, mp3
}

// tool is a function tool.
type tool struct {
	name   string // raw inside
	desc   string // raw JSON string, "" = absent
	params string // JSON Schema object text, "" = none
	strict string // raw true/false, "" = absent
}

// toolChoice is the tool_choice in neutral terms.
type toolChoice struct {
	mode string // "", "auto", "none", "required", "tool"
	name string // mode "tool": raw inside
}

// respFormat is a structured output request.
type respFormat struct {
	kind   string // "", "json_object", "json_schema"
	name   string // raw JSON string ("" = absent)
	desc   string // raw JSON string
	schema string // JSON Schema object text
	strict string // raw true/false
}

// answer is a complete upstream answer in the intermediate form.
type answer struct {
	text   []byte // raw inside
	calls  []call
	finish string // stop, length, tool_calls, content_filter
	usage  usage
}

// call is one complete tool call of an answer.
type call struct {
	id, name string // raw insides
	args     string // the arguments JSON text (not escaped)
}

// Finish reasons of the intermediate form (the completions vocabulary).
const (
	finishStop    = "stop"
	finishLength  = "length"
	finishTools   = "tool_calls"
	finishFilter  = "content_filter"
	maxToolIndex  = 1 << 10 // bounds a hostile stream's tool index
	maxBlockIndex = 1 << 16
)

// usage is token usage in the gateway's terms: input counts cached tokens,
// output counts reasoning tokens.
type usage struct {
	input, output, cached, cacheWrite, reasoning int64
}

// sink receives one upstream stream in the intermediate form and writes
// the client's events. Tool calls are numbered 0, 1, ... in the order
// they start. The strings it gets view the upstream's event: a sink clones
// what it keeps past the call.
type sink interface {
	setEmit(emit func(protocol.Event) error)
	// setUsage records the usage reported so far (it emits nothing).
	setUsage(u usage)
	text(raw string) error
	// toolStart opens call i; args is the first piece of its arguments.
	toolStart(i int, id, name, args string) error
	toolArgs(i int, raw string) error
	toolEnd(i int) error
	finish(reason string) error
	// fail is an error event of the upstream stream.
	fail(e *apierr.Error) error
	// end emits what a complete stream still owes the client.
	end() error
}

// reader parses one upstream stream's events into calls on a sink.
type reader interface {
	// read reads one event from its scan by the upstream protocol's
	// codec reader.
	read(c *codec.Chunk, s sink) error
}

// target is what the upstream of a call can carry.
type target struct {
	p         protocol.ID
	reasoning bool // the model reasons (caps { reasoning })
}

// feature is a request feature not every protocol carries.
type feature uint16

const (
	featStop      feature = 1 << iota // stop sequences
	featTopK                          // top-k sampling
	featSeed                          // a sampling seed
	featPenalty                       // presence and frequency penalties
	featUser                          // an end-user id
	featParallel                      // turning parallel tool calls off
	featJSON                          // structured output
	featStrict                        // strict function schemas
	featReasoning                     // a reasoning effort or thinking budget
	featDetail                        // image detail
	featFileID                        // OpenAI file ids
	featAudio                         // audio input
	featPDFURL                        // a PDF by URL
)

// carries lists what each upstream protocol can take. Messages upstreams
// get no reasoning: extended thinking needs the signed thinking blocks of
// earlier turns, which no other protocol can hand back.
var carries = map[protocol.ID]feature{
	protocol.OpenAIChat:        featStop | featSeed | featPenalty | featUser | featParallel | featJSON | featStrict | featReasoning | featDetail | featFileID | featAudio,
	protocol.AnthropicMessages: featStop | featTopK | featUser | featParallel | featPDFURL,
	protocol.OpenAIResponses:   featPenalty | featUser | featParallel | featJSON | featStrict | featReasoning | featDetail | featFileID | featPDFURL,
	protocol.GeminiNative:      featStop | featTopK | featSeed | featPenalty | featJSON | featReasoning | featAudio | featPDFURL,
}

func (t target) can(f feature) bool {
	if f == featReasoning && !t.reasoning {
		return false
	}
	return carries[t.p]&f != 0
}

// effort levels from a thinking budget: Anthropic's budgets (up to 1,024
// tokens low, up to 2,048 medium) and Gemini's (Google maps low, medium
// and high to 1,024, 8,192 and 24,576).
func effortOf(budget int64) string {
	switch {
	case budget <= 1024:
		return "low"
	case budget <= 2048:
		return "medium"
	}
	return "high"
}

func effortOfGemini(budget int64) string {
	switch {
	case budget == 0:
		return "none"
	case budget < 0:
		return "medium" // dynamic thinking
	case budget <= 1024:
		return "low"
	case budget <= 8192:
		return "medium"
	}
	return "high"
}

func geminiBudget(effort string) int64 {
	switch effort {
	case "none":
		return 0
	case "minimal", "low":
		return 1024
	case "medium":
		return 8192
	}
	return 24576
}

// rawOf returns the raw inside of a JSON string holding s.
func rawOf(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return string(appendEscaped(nil, s))
		}
	}
	return s
}

// joinRaw joins raw insides with a separator given as a raw inside.
func joinRaw(parts []string, sep string) string {
	return strings.Join(parts, sep)
}
