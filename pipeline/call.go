package pipeline

import (
	"context"
	"net/http"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// Call is one request moving through the chain. Stages read what earlier
// stages set and add their own part; nothing here is shared between calls.
type Call struct {
	ID       string      // request id: x-gateway-trace, x-request-id, the log row's request_id
	Start    time.Time   // when the request reached the gateway
	Kind     Kind        // chat, job or read: which chain the call runs
	Protocol protocol.ID // the client's protocol: decides the error shape
	Billed   bool        // billed endpoint: 402 at auth when the balance is 0 or below
	Request  *http.Request
	W        *ResponseWriter
	Body     []byte // the client body, read once
	// Pattern is the route's pattern (POST /v1/chat/completions): what
	// metrics count calls by, never the raw path.
	Pattern string

	// How the route authenticates: the key forms it accepts, whether the
	// account's rpm and concurrency limits count the call (Uncounted: the
	// logs API has its own), and whether the call leaves the key's last
	// use alone (Quiet: balance, catalog).
	Forms     KeyForms
	Uncounted bool
	Quiet     bool
	// Handler answers a read call; the dispatch stage runs it.
	Handler func(ctx context.Context, c *Call) error

	// Job is the media part of a job call (job.go).
	Job *Job
	// BodyErr is why the body could not be read (too large, cut off); the
	// call is refused with it after authentication, so it is logged.
	BodyErr error
	// ReadBody reads the body; the auth stage calls it once the key on
	// the headers is known, so no body is read for a request without one.
	// nil: Body is already there.
	ReadBody func() ([]byte, error)

	// ModelID is the model as the client named it (body, or URL path for
	// generate-content); StreamPath is true for :streamGenerateContent.
	ModelID    string
	StreamPath bool

	// Set by auth.
	Key     *store.Key
	Account *store.Account
	Wallet  store.Wallet
	// Unpaid is the 402 of an exhausted balance, held back while a call
	// with an Idempotency-Key may be the retry of one that already has
	// its answer (PRODUCT §7: a replay or a 409 in-flight comes before the
	// zero-balance check); until idempotency has looked, any failure is
	// this 402, and precharge never lets it through.
	Unpaid *apierr.Error

	// Set by agent for an agent key: the agent, the knowledge pages its
	// retrieval added, and the body as the client sent it (Body is then
	// the agent's request).
	Agent      *store.Agent
	AgentPages []string
	ClientBody []byte

	// Set by allowlist.
	Model *config.Model

	// Set by precharge.
	Codec     codec.Codec
	Req       codec.Request
	Stream    bool
	Hold      *store.Hold
	hold      store.Hold // what Hold points to: the call's own, no allocation of its own
	HoldMax   int64      // output tokens the hold covers
	WireMax   int64      // max tokens sent upstream when the client omitted them (0 = client's own)
	Estimated int64      // input token estimate
	// OutLimit is the output limit sent upstream: the client's max
	// tokens, or the model ceiling sent when it gave none (0 = none).
	OutLimit int64

	// Set by translate.
	Route *Route

	// Set by dispatch.
	Usage         protocol.Usage
	OutputChars   int64
	Attempts      []store.Attempt
	Served        bool   // an upstream answer reached the client
	UpstreamTried bool   // at least one channel was called
	UpstreamCalls int    // channels called, the served or final one included
	Channel       string // channel that served
	// UpstreamTime is the time spent in upstream attempts, all of them.
	UpstreamTime time.Duration
	UpstreamErr  string // error detail for the row, redacted later
	// PastLimit: the upstream ran past OutLimit; its output was stopped
	// and is billed at the limit.
	PastLimit bool
	response  *pendingResponse

	// Set by idempotency when it replayed a kept answer: the request id
	// of the call that produced it. The rest of the chain does not run;
	// the finishing stages log a row without a charge.
	ReplayOf string

	// Set by settle.
	Charge money.Nano
	Status string // row status
	Row    *store.LogRow

	// Err is the error the client saw; nil on success.
	Err *apierr.Error
	// finishErr is what ending a task in the store answered.
	finishErr error

	deferred []func()

	own callOwn
}

// callOwn is storage the chat chain's stages fill instead of allocating
// per call: what Call's fields point to lives in the Call itself, one
// allocation. Nothing here outlives the Call or is shared with another.
type callOwn struct {
	who      authenticated // Key and Account point here
	route    Route         // Route points here
	chans    [4]*config.Channel
	cands    [4]Candidate // the route's candidates, up to four channels
	order    [4]Candidate // dispatch's order of them
	built    [2]builtBody
	response pendingResponse
	deadline callDeadline // dispatch's context
	detached detached     // the ledger's context
	request  vendor.ChatRequest
	attempts int            // chat requests handed out
	writer   ResponseWriter // W, when made by Writer
	// inspected is the Body the codec's Inspect found one valid JSON
	// object: the translator does not scan it again.
	inspected []byte
}

// chatRequest is storage for an attempt's vendor request: the first
// attempt's lives here, each later one is new, so that no attempt writes
// over a request a vendor was handed before.
func (o *callOwn) chatRequest() *vendor.ChatRequest {
	o.attempts++
	if o.attempts == 1 {
		return &o.request
	}
	return new(vendor.ChatRequest)
}

// Defer runs fn after the chain, in reverse order of registration, like a
// defer statement: stages use it to release what they took (a rate-limit
// slot, an idempotency lock).
func (c *Call) Defer(fn func()) { c.deferred = append(c.deferred, fn) }

func (c *Call) fail(err error) {
	if c.Unpaid != nil {
		err = c.Unpaid // 402 during authentication, before all else
	}
	c.Err = apierr.As(err)
}

// Fail records err as the call's error without rendering it (dispatch uses
// it after the response has started).
func (c *Call) Fail(err error) { c.fail(err) }

// renderError writes c.Err unless the response has already started. A
// response kept alive with whitespace gets the error as its body (errors
// rule 6: the status is already 200).
func (c *Call) renderError() {
	if c.W == nil {
		return
	}
	if c.W.keptAlive {
		c.response = nil
		c.W.endKeepAlive()
		_, _ = c.W.Write(apierr.Body(c.Protocol, c.Err))
		return
	}
	if c.W.Started() {
		return
	}
	c.response = nil
	apierr.Write(c.W, c.Protocol, c.Err)
}

// pendingResponse is a non-streaming answer held until settle and log ran,
// so the client never holds an answer the ledger does not.
type pendingResponse struct {
	status int
	header http.Header
	body   []byte
}

// Respond queues a complete non-streaming response, written after the chain.
func (c *Call) Respond(status int, header http.Header, body []byte) {
	c.own.response = pendingResponse{status: status, header: header, body: body}
	c.response = &c.own.response
}

// jsonContentType is the Content-Type of an answer that names none,
// shared by every response (cap 1: an Add copies it first).
var jsonContentType = []string{"application/json"}[:1:1]

func (c *Call) flushResponse() {
	r := c.response
	if r != nil && c.W != nil && c.W.keptAlive {
		// The status went out long ago; the answer is the body.
		c.response = nil
		c.W.endKeepAlive()
		_, _ = c.W.Write(r.body)
		return
	}
	if r == nil || c.W == nil || c.W.Started() {
		return
	}
	c.response = nil
	h := c.W.Header()
	for k, v := range r.header {
		h[k] = v
	}
	if h.Get("Content-Type") == "" {
		h["Content-Type"] = jsonContentType
	}
	c.W.WriteHeader(r.status)
	_, _ = c.W.Write(r.body)
}

// ResponseWriter wraps the client's writer to know whether the response has
// started and whether the client is still there. With a write timeout, a
// client that takes no byte for that long is dropped (writedeadline.go).
type ResponseWriter struct {
	http.ResponseWriter
	status    int
	firstByte time.Time // when the status went out
	written   int64
	failed    bool     // a write to the client failed: it went away
	capture   *capture // records the answer for idempotent replay; nil = off
	// keptAlive: a slow synchronous answer went out as 200 with
	// whitespace; the body follows (job.go).
	keptAlive bool
	stopAlive func()
	deadline  *writeDeadline // nil: no write timeout; else dl
	dl        writeDeadline
}

// Writer wraps w as NewResponseWriter does, in storage c owns: the
// server sets c.W to it.
func (c *Call) Writer(w http.ResponseWriter) *ResponseWriter {
	c.own.writer = ResponseWriter{ResponseWriter: w}
	return &c.own.writer
}

// NewResponseWriter wraps w.
func NewResponseWriter(w http.ResponseWriter) *ResponseWriter {
	return &ResponseWriter{ResponseWriter: w}
}

// Started reports whether the status line was sent.
func (w *ResponseWriter) Started() bool { return w.status != 0 }

// FirstByte is when the status line was sent; zero if not yet.
func (w *ResponseWriter) FirstByte() time.Time { return w.firstByte }

// Status is the status sent, 0 if none yet.
func (w *ResponseWriter) Status() int { return w.status }

// ClientGone reports whether a write to the client failed.
func (w *ResponseWriter) ClientGone() bool { return w.failed }

func (w *ResponseWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.firstByte = time.Now()
	w.deadline.refresh(w.firstByte)
	if w.capture != nil {
		w.capture.start(w.Header())
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *ResponseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	} else if len(b) >= bigWrite {
		w.deadline.refresh(time.Now())
	}
	n, err := w.ResponseWriter.Write(b)
	w.written += int64(n)
	if w.capture != nil {
		// The answer as the gateway gave it, even when the client is gone.
		w.capture.write(b)
	}
	if err != nil {
		w.failed = true
	}
	return n, err
}

// Flush sends buffered data to the client.
func (w *ResponseWriter) Flush() {
	w.deadline.refresh(time.Now())
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *ResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
