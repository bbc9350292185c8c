package vendorsim

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
)

// Hostile is an upstream that misbehaves on purpose, on the four chat
// protocols' wires (the paths, auth and SSE framing of Server): it ignores
// max tokens, leaves usage out, sends JSON that does not parse, compresses
// what was not asked for, redirects elsewhere, and sends events larger
// than any cap. A marker in the request body picks the behaviour:
//
//	[hostile:endless]   a stream that never ends (until the client goes, or
//	                    HostileOptions.MaxEvents/MaxTime), or a whole answer
//	                    of AnswerWords words whose usage says so, whatever
//	                    max tokens the request set
//	[hostile:silent]    as endless, but never reporting usage
//	[hostile:running]   as endless, with a running usage count on every
//	                    chunk (generate-content's usageMetadata)
//	[hostile:nousage]   a proper answer of AnswerWords words, without usage
//	[hostile:badjson]   a 200 whose body is not JSON
//	[hostile:badevent]  a stream with an event that is not JSON, then more
//	[hostile:gzip]      the proper answer, gzip-compressed though the request
//	                    asked for no compression
//	[hostile:brotli]    an answer marked Content-Encoding: br
//	[hostile:redirect]  a 307 to HostileOptions.RedirectTo
//	[hostile:bigevent]  a stream whose second event is one data line of
//	                    HostileOptions.BigEvent bytes
//	[hostile:stall]     a 200 whose answer (or stream, after its first
//	                    event) never comes: nothing more until the client
//	                    goes or MaxTime
//	[hostile:huge]      a whole answer of HostileOptions.HugeAnswer bytes
//	                    (a proper answer padded by a long field)
//
// Without a marker it answers a short proper answer.
type Hostile struct {
	opts HostileOptions

	open    atomic.Int64 // endless streams being written
	events  atomic.Int64 // events written by endless streams, all of them
	bigSent atomic.Int64 // bytes of big events written

	mu   sync.Mutex
	reqs []Request
}

// HostileOptions configure a Hostile upstream.
type HostileOptions struct {
	// RedirectTo is where [hostile:redirect] sends the caller.
	RedirectTo string
	// AnswerWords is the length of a whole answer; default 2000.
	AnswerWords int
	// BigEvent is the size of [hostile:bigevent]'s event; default 20 MB.
	BigEvent int
	// HugeAnswer is the size of [hostile:huge]'s answer; default 80 MB.
	HugeAnswer int
	// MaxEvents and MaxTime stop an endless stream nobody stops; defaults
	// 100,000 events and 60 s, so a test never leaves one running.
	MaxEvents int
	MaxTime   time.Duration
}

// NewHostile returns a hostile upstream; serve its Handler (httptest).
func NewHostile(o HostileOptions) *Hostile {
	if o.AnswerWords <= 0 {
		o.AnswerWords = 2000
	}
	if o.BigEvent <= 0 {
		o.BigEvent = 20 << 20
	}
	if o.HugeAnswer <= 0 {
		o.HugeAnswer = 80 << 20
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = 100_000
	}
	if o.MaxTime <= 0 {
		o.MaxTime = time.Minute
	}
	return &Hostile{opts: o}
}

// OpenStreams is how many endless streams are being written now.
func (h *Hostile) OpenStreams() int64 { return h.open.Load() }

// EndlessEvents is how many events the endless streams wrote in all.
func (h *Hostile) EndlessEvents() int64 { return h.events.Load() }

// BigBytes is how many bytes of big events were written.
func (h *Hostile) BigBytes() int64 { return h.bigSent.Load() }

// Requests are the calls received so far.
func (h *Hostile) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.reqs...)
}

var hostileMarker = regexp.MustCompile(`\[hostile:([a-z]+)\]`)

// hostileWord is what the hostile upstream writes, one a token.
const hostileWord = "word "

func (h *Hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := parseRoute(r)
	if !ok {
		writeError(w, rt.p, http.StatusNotFound, "", "Unknown request URL: "+r.URL.Path)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	h.mu.Lock()
	h.reqs = append(h.reqs, Request{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body})
	h.mu.Unlock()
	mode := ""
	if m := hostileMarker.FindSubmatch(body); m != nil {
		mode = string(m[1])
	}
	stream := rt.stream != 0 || rt.p != protocol.GeminiNative && gjson.GetBytes(body, "stream").Bool()
	model := gjson.GetBytes(body, "model").Str
	if rt.p == protocol.GeminiNative {
		model = rt.model
	}
	wr := &hostileWire{p: rt.p, model: model}
	switch mode {
	case "redirect":
		http.Redirect(w, r, h.opts.RedirectTo+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	case "badjson":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","choices":[{"message":{"content":"cut here`)
	case "brotli":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "br")
		_, _ = w.Write([]byte{0x1b, 0x03, 0x00, 0xf8, 0x25, 0x00})
	case "gzip":
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(wr.answer(8, true))
		_ = zw.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(b.Bytes())
	case "endless", "silent", "running":
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(wr.answer(h.opts.AnswerWords, mode != "silent"))
			return
		}
		wr.running = mode == "running"
		h.endless(r.Context(), w, wr)
	case "nousage":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(wr.answer(h.opts.AnswerWords, false))
	case "badevent":
		h.badEvent(w, wr)
	case "bigevent":
		h.bigEvent(w, wr)
	case "stall":
		h.stall(r.Context(), w, wr, stream)
	case "huge":
		h.huge(w, wr)
	default:
		if stream {
			sw := startSSE(w)
			for _, ev := range wr.open() {
				sw.send(ev)
			}
			for i := range 8 {
				sw.send(wr.delta(i))
			}
			for _, ev := range wr.end(8) {
				sw.send(ev)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(wr.answer(8, true))
	}
}

// sseOut writes events and flushes each.
type sseOut struct {
	w   http.ResponseWriter
	f   http.Flusher
	buf []byte
	err error
}

func startSSE(w http.ResponseWriter) *sseOut {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseOut{w: w, f: f}
}

func (s *sseOut) send(ev protocol.Event) {
	if s.err != nil {
		return
	}
	s.buf = sse.AppendEvent(s.buf[:0], ev)
	if _, s.err = s.w.Write(s.buf); s.err == nil && s.f != nil {
		s.f.Flush()
	}
}

// endless streams words until the client goes or the caps stop it.
func (h *Hostile) endless(ctx context.Context, w http.ResponseWriter, wr *hostileWire) {
	h.open.Add(1)
	defer h.open.Add(-1)
	sw := startSSE(w)
	for _, ev := range wr.open() {
		sw.send(ev)
	}
	stop := time.Now().Add(h.opts.MaxTime)
	for i := 0; i < h.opts.MaxEvents && sw.err == nil && ctx.Err() == nil && time.Now().Before(stop); i++ {
		sw.send(wr.delta(i))
		h.events.Add(1)
		if i%64 == 63 {
			time.Sleep(time.Millisecond) // a fast upstream, not a busy loop
		}
	}
}

// badEvent sends a proper start, an event that is not JSON, then more.
func (h *Hostile) badEvent(w http.ResponseWriter, wr *hostileWire) {
	sw := startSSE(w)
	for _, ev := range wr.open() {
		sw.send(ev)
	}
	sw.send(wr.delta(0))
	sw.send(protocol.Event{Data: []byte(`{"choices":[{"delta":{"content":"broken`)})
	for i := 1; i < 8; i++ {
		sw.send(wr.delta(i))
	}
	for _, ev := range wr.end(8) {
		sw.send(ev)
	}
}

// bigEvent sends a proper first event, then one data line of BigEvent
// bytes, written in pieces.
func (h *Hostile) bigEvent(w http.ResponseWriter, wr *hostileWire) {
	sw := startSSE(w)
	for _, ev := range wr.open() {
		sw.send(ev)
	}
	sw.send(wr.delta(0))
	if sw.err != nil {
		return
	}
	if _, err := io.WriteString(w, "data: "); err != nil {
		return
	}
	piece := bytes.Repeat([]byte("x"), 64<<10)
	for sent := 0; sent < h.opts.BigEvent; sent += len(piece) {
		if _, err := w.Write(piece); err != nil {
			return
		}
		h.bigSent.Add(int64(len(piece)))
	}
	_, _ = io.WriteString(w, "\n\n")
}

// hostileWire writes one protocol's answers and events.
type hostileWire struct {
	p       protocol.ID
	model   string
	running bool // a usage count on every chunk
}

func (wr *hostileWire) words(n int) string { return strings.Repeat(hostileWord, n) }

// answer is a whole answer of n words, with its usage or without.
func (wr *hostileWire) answer(n int, usage bool) []byte {
	text := strconv.Quote(wr.words(n))
	out := strconv.Itoa(n)
	switch wr.p {
	case protocol.AnthropicMessages:
		u := ""
		if usage {
			u = `,"usage":{"input_tokens":10,"output_tokens":` + out + `}`
		}
		return []byte(`{"id":"msg_hostile","type":"message","role":"assistant","model":"` + wr.model +
			`","content":[{"type":"text","text":` + text + `}],"stop_reason":"end_turn","stop_sequence":null` + u + `}`)
	case protocol.OpenAIResponses:
		u := ""
		if usage {
			u = `,"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":` + out +
				`,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":` + strconv.Itoa(n+10) + `}`
		}
		return []byte(`{"id":"resp_hostile","object":"response","created_at":1,"status":"completed","model":"` + wr.model +
			`","output":[{"id":"msg_hostile","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":` +
			text + `,"annotations":[]}]}]` + u + `}`)
	case protocol.GeminiNative:
		u := ""
		if usage {
			u = `,"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":` + out + `,"totalTokenCount":` + strconv.Itoa(n+10) + `}`
		}
		return []byte(`{"candidates":[{"content":{"parts":[{"text":` + text + `}],"role":"model"},"finishReason":"STOP","index":0}]` +
			u + `,"modelVersion":"` + wr.model + `"}`)
	}
	u := ""
	if usage {
		u = `,"usage":{"prompt_tokens":10,"completion_tokens":` + out + `,"total_tokens":` + strconv.Itoa(n+10) + `}`
	}
	return []byte(`{"id":"chatcmpl-hostile","object":"chat.completion","created":1,"model":"` + wr.model +
		`","choices":[{"index":0,"message":{"role":"assistant","content":` + text + `},"finish_reason":"stop"}]` + u + `}`)
}

func ev(name, data string) protocol.Event { return protocol.Event{Name: name, Data: []byte(data)} }

// open are the events before the first word.
func (wr *hostileWire) open() []protocol.Event {
	switch wr.p {
	case protocol.AnthropicMessages:
		return []protocol.Event{
			ev("message_start", `{"type":"message_start","message":{"id":"msg_hostile","type":"message","role":"assistant","model":"`+wr.model+`","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		}
	case protocol.OpenAIResponses:
		return []protocol.Event{
			ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_hostile","object":"response","created_at":1,"status":"in_progress","model":"`+wr.model+`","output":[]}}`),
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_hostile","type":"message","status":"in_progress","role":"assistant","content":[]}}`),
			ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_hostile","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`),
		}
	}
	return nil
}

// delta is the i-th word's event.
func (wr *hostileWire) delta(i int) protocol.Event {
	w := strconv.Quote(hostileWord)
	switch wr.p {
	case protocol.AnthropicMessages:
		return ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+w+`}}`)
	case protocol.OpenAIResponses:
		return ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":`+strconv.Itoa(i+3)+
			`,"item_id":"msg_hostile","output_index":0,"content_index":0,"delta":`+w+`}`)
	case protocol.GeminiNative:
		u := ""
		if wr.running {
			u = `,"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":` + strconv.Itoa(i+1) + `,"totalTokenCount":` + strconv.Itoa(i+11) + `}`
		}
		return ev("", `{"candidates":[{"content":{"parts":[{"text":`+w+`}],"role":"model"},"index":0}]`+u+`,"modelVersion":"`+wr.model+`"}`)
	}
	return ev("", `{"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"`+wr.model+
		`","choices":[{"index":0,"delta":{"content":`+w+`},"finish_reason":null}]}`)
}

// end are the events of a proper end after n words, usage included.
func (wr *hostileWire) end(n int) []protocol.Event {
	out := strconv.Itoa(n)
	switch wr.p {
	case protocol.AnthropicMessages:
		return []protocol.Event{
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`+out+`}}`),
			ev("message_stop", `{"type":"message_stop"}`),
		}
	case protocol.OpenAIResponses:
		seq := strconv.Itoa(n + 3)
		return []protocol.Event{ev("response.completed", `{"type":"response.completed","sequence_number":`+seq+
			`,"response":{"id":"resp_hostile","object":"response","created_at":1,"status":"completed","model":"`+wr.model+
			`","output":[],"usage":{"input_tokens":10,"output_tokens":`+out+`,"total_tokens":`+strconv.Itoa(n+10)+`}}}`)}
	case protocol.GeminiNative:
		return []protocol.Event{ev("", `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":`+out+`,"totalTokenCount":`+strconv.Itoa(n+10)+`},"modelVersion":"`+wr.model+`"}`)}
	}
	return []protocol.Event{
		ev("", `{"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"`+wr.model+`","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`),
		ev("", `{"id":"chatcmpl-hostile","object":"chat.completion.chunk","created":1,"model":"`+wr.model+`","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":`+out+`,"total_tokens":`+strconv.Itoa(n+10)+`}}`),
		ev("", "[DONE]"),
	}
}

// stall sends the head of an answer (a stream's first event) and then
// nothing, until the client goes or MaxTime.
func (h *Hostile) stall(ctx context.Context, w http.ResponseWriter, wr *hostileWire, stream bool) {
	if stream {
		sw := startSSE(w)
		for _, ev := range wr.open() {
			sw.send(ev)
		}
	} else {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"stalled",`)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	h.open.Add(1)
	defer h.open.Add(-1)
	select {
	case <-ctx.Done():
	case <-time.After(h.opts.MaxTime):
	}
}

// huge writes a proper answer padded to HugeAnswer bytes by a long
// string field before its own fields, in 1 MB writes.
func (h *Hostile) huge(w http.ResponseWriter, wr *hostileWire) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	ans := wr.answer(8, true)
	if _, err := io.WriteString(w, `{"padding":"`); err != nil {
		return
	}
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for left := h.opts.HugeAnswer; left > 0; left -= len(chunk) {
		if _, err := w.Write(chunk[:min(len(chunk), left)]); err != nil {
			return
		}
	}
	_, _ = io.WriteString(w, `",`)
	_, _ = w.Write(ans[1:])
}
