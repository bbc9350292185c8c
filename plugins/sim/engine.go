package sim

import (
	"context"
	"errors"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Call is one request to the engine.
type Call struct {
	Protocol  string // protocol id; Body is in it
	Model     string // the model for gemini_native (it is in the URL); else used when the body has none
	Body      []byte // read-only during the call
	Operation string // "" for chat, vendor.OpCountTokens
	// Knobs are the defaults (channel settings); markers override them.
	Knobs       Knobs
	Timeout     time.Duration // whole call; 0 = only ctx
	IdleTimeout time.Duration // before and between stream events; 0 = none
	// ReuseEventData lets Stream reuse one buffer for all events: set it
	// when the sink copies or writes Data before Event returns.
	ReuseEventData bool
}

// Engine answers chat calls like the real vendors would. It has no state:
// the same call gives the same bytes, but for the answer's timestamp,
// which is the request's time (a test that needs the bytes fixed gives
// the engine a fixed clock).
type Engine struct {
	now func() time.Time
}

// NewEngine returns an engine on the real clock.
func NewEngine() *Engine { return &Engine{now: time.Now} }

// Chat answers one non-streaming call. A fault marker's error status is a
// ChatResponse; a cut, a hang or a timeout is a *vendor.Failure.
func (e *Engine) Chat(ctx context.Context, c *Call) (*vendor.ChatResponse, error) {
	p, k, cv, resp, err := e.open(c)
	if resp != nil || err != nil {
		return resp, err
	}
	clk := newClock(ctx, c.Timeout, 0)
	defer clk.stop()
	if err := clk.before(&k); err != nil {
		return nil, err
	}
	if k.ErrorStatus != 0 {
		st, h, b := faultError(p, k.ErrorStatus)
		return &vendor.ChatResponse{Status: st, Headers: h, Body: b}, nil
	}
	if c.Operation == vendor.OpCountTokens {
		b := appendInt(append(make([]byte, 0, 24), `{"input_tokens":`...), (cv.inputBytes+3)/4)
		return okJSON(append(b, '}')), nil
	}
	if k.Cutting {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "sim: [sim:cut] broke the answer before it was complete"}
	}
	pl := newPlan(p, e.model(c, cv), c.Body, cv, &k, e.now())
	return okJSON(appendBody(make([]byte, 0, 640+2*len(pl.text)+2*len(pl.args)), pl)), nil
}

// Stream answers one streaming call into sink: Head, then the events. It
// returns nil after a complete stream, *vendor.Failure after a cut, hang,
// timeout or cancellation, or the sink's error.
func (e *Engine) Stream(ctx context.Context, c *Call, sink vendor.Sink) error {
	p, k, cv, resp, err := e.open(c)
	if err != nil {
		return err
	}
	if resp != nil {
		return sink.Head(vendor.Head{Status: resp.Status, Headers: resp.Headers, Body: resp.Body})
	}
	clk := newClock(ctx, c.Timeout, c.IdleTimeout)
	defer clk.stop()
	if err := clk.before(&k); err != nil {
		return err
	}
	if k.ErrorStatus != 0 {
		st, h, b := faultError(p, k.ErrorStatus)
		return sink.Head(vendor.Head{Status: st, Headers: h, Body: b})
	}
	if c.Operation != "" {
		st := 404
		return sink.Head(vendor.Head{Status: st, Headers: ErrorHeaders(st),
			Body: ErrorBody(p, st, "", "Operation "+c.Operation+" does not stream.")})
	}
	pl := newPlan(p, e.model(c, cv), c.Body, cv, &k, e.now())
	if err := sink.Head(vendor.Head{Status: 200, Headers: map[string]string{"content-type": "text/event-stream"}}); err != nil {
		return err
	}
	s := streamer{sink: sink, clk: clk, cut: -1, slow: k.Slow, reuse: c.ReuseEventData}
	if k.Cutting {
		s.cut = k.Cut
	}
	// Without pauses every event is ready at once: a batch sink takes them
	// together, as a relay would take events that arrived in one read.
	_, s.batching = sink.(vendor.BatchSink)
	s.batching = s.batching && k.Slow == 0 && !c.ReuseEventData
	s.buf = make([]byte, 0, streamArena(pl, c.ReuseEventData))
	err = stream(&s, pl)
	if ferr := s.flush(); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

// open checks the call and reads the conversation; resp is set when the
// call is answered without work (a bad body or operation).
func (e *Engine) open(c *Call) (protocol.ID, Knobs, *conv, *vendor.ChatResponse, error) {
	p := protocol.ID(c.Protocol)
	k := c.Knobs
	if !protocol.Valid(p) {
		return p, k, nil, nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "sim: unknown protocol " + c.Protocol}
	}
	body := unsafeString(c.Body)
	if !gjson.Valid(body) || !gjson.Parse(body).IsObject() {
		return p, k, nil, errorResponse(p, 400, "The request body is not a valid JSON object."), nil
	}
	if c.Operation != "" && (c.Operation != vendor.OpCountTokens || p != protocol.AnthropicMessages) {
		return p, k, nil, errorResponse(p, 404, "Operation "+c.Operation+" is not offered for "+c.Protocol+"."), nil
	}
	cv := readConv(p, body, &k)
	return p, k, &cv, nil, nil
}

func (e *Engine) model(c *Call, cv *conv) string {
	if cv.model != "" {
		return cv.model
	}
	return c.Model
}

func errorResponse(p protocol.ID, status int, msg string) *vendor.ChatResponse {
	return &vendor.ChatResponse{Status: status, Headers: ErrorHeaders(status), Body: ErrorBody(p, status, "", msg)}
}

func okJSON(b []byte) *vendor.ChatResponse {
	return &vendor.ChatResponse{Status: 200, Headers: map[string]string{"content-type": "application/json"}, Body: b}
}

// clock enforces the call's timeouts and knobs' waits, honouring ctx.
type clock struct {
	ctx      context.Context
	deadline time.Time
	idle     time.Duration
	timer    *time.Timer
}

func newClock(ctx context.Context, total, idle time.Duration) *clock {
	c := &clock{ctx: ctx, idle: idle}
	if total > 0 {
		c.deadline = time.Now().Add(total)
	}
	return c
}

func (c *clock) stop() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// before runs the waits ahead of an answer: a hang, then the latency.
func (c *clock) before(k *Knobs) error {
	if k.Hang {
		return c.wait(0, true)
	}
	return c.wait(k.Latency, false)
}

// wait sleeps d (for ever when forever), cut short by the timeouts or ctx.
func (c *clock) wait(d time.Duration, forever bool) error {
	limit, reason := d, ""
	if c.idle > 0 && (forever || limit > c.idle) {
		limit, reason, forever = c.idle, "sim: idle timeout", false
	}
	if !c.deadline.IsZero() {
		if rem := time.Until(c.deadline); forever || rem < limit {
			limit, reason, forever = rem, "sim: timeout", false
		}
	}
	if err := c.ctx.Err(); err != nil {
		return ctxFailure(err)
	}
	if forever {
		<-c.ctx.Done()
		return ctxFailure(c.ctx.Err())
	}
	if limit > 0 {
		if c.timer == nil {
			c.timer = time.NewTimer(limit)
		} else {
			c.timer.Reset(limit)
		}
		select {
		case <-c.timer.C:
		case <-c.ctx.Done():
			return ctxFailure(c.ctx.Err())
		}
	}
	if reason != "" {
		return &vendor.Failure{Kind: vendor.FailureTimeout, Message: reason}
	}
	return nil
}

func ctxFailure(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &vendor.Failure{Kind: vendor.FailureTimeout, Message: "sim: " + err.Error()}
	}
	return &vendor.Failure{Kind: vendor.FailureCanceled, Message: "sim: " + err.Error()}
}

// streamer sends the events of one stream: each is appended to buf by the
// renderer, then sent as buf[start:].
type streamer struct {
	sink  vendor.Sink
	clk   *clock
	buf   []byte
	sent  int
	cut   int // events before the break; -1: none
	slow  time.Duration
	reuse bool
	name  string

	batching bool
	batch    []vendor.Event
}

// batchMax bounds the events held before they are sent.
const batchMax = 64

// flush sends the events held back.
func (s *streamer) flush() error {
	if len(s.batch) == 0 {
		return nil
	}
	err := vendor.SendEvents(s.sink, s.batch)
	s.batch = s.batch[:0]
	return err
}

// begin starts an event named name and returns where its data starts.
func (s *streamer) begin(name string) int {
	s.name = name
	if s.reuse {
		s.buf = s.buf[:0]
	}
	return len(s.buf)
}

// send sends the event begun at start.
func (s *streamer) send(start int) error {
	if s.cut >= 0 && s.sent == s.cut {
		return &vendor.Failure{Kind: vendor.FailureBroken, Message: "sim: [sim:cut=" + itoa(s.cut) + "] broke the stream"}
	}
	if s.sent > 0 && s.slow > 0 {
		if err := s.clk.wait(s.slow, false); err != nil {
			return err
		}
	} else if err := s.clk.ctx.Err(); err != nil {
		return ctxFailure(err)
	}
	end := len(s.buf)
	ev := vendor.Event{Name: s.name, Data: s.buf[start:end:end]}
	s.sent++
	if s.batching {
		s.batch = append(s.batch, ev)
		if len(s.batch) < batchMax {
			return nil
		}
		return s.flush()
	}
	return s.sink.Event(ev)
}

func streamArena(pl *plan, reuse bool) int {
	if reuse {
		return 1024 + len(pl.args) + len(pl.text)
	}
	return 1024 + (pl.chunks+pl.argFrags)*(300+len(pl.model)) + 4*len(pl.text) + 4*len(pl.args)
}

func appendBody(dst []byte, pl *plan) []byte {
	switch pl.p {
	case protocol.OpenAIChat:
		return appendChatBody(dst, pl)
	case protocol.AnthropicMessages:
		return appendMessagesBody(dst, pl)
	case protocol.OpenAIResponses:
		return appendResponsesBody(dst, pl)
	default:
		return appendGeminiBody(dst, pl)
	}
}

func stream(s *streamer, pl *plan) error {
	switch pl.p {
	case protocol.OpenAIChat:
		return streamChat(s, pl)
	case protocol.AnthropicMessages:
		return streamMessages(s, pl)
	case protocol.OpenAIResponses:
		return streamResponses(s, pl)
	default:
		return streamGemini(s, pl)
	}
}
