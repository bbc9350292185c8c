package pipeline

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/core/translate"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// Chat timeouts of the spec's Timeouts table and PRODUCT.md §7.
const (
	DefaultChatTimeout = 180 * time.Second
	DefaultIdleTimeout = 120 * time.Second
)

// dispatch calls the route's channels in order. Before the first byte
// reaches the client, a connection failure, a 5xx or a 429 moves on to the
// next channel (folded into the row's attempts); after it, nothing can
// change the status and a failure just ends the stream.
type dispatchStage struct {
	vendors map[string]vendor.Vendor
	jobs    map[string]vendor.Jobs
	store   store.Store
	files   FileHost
	tasks   TaskOwner
	health  *Health
	red     *redact.Redactor // masks upstream error messages shown to clients
	now     func() time.Time
	log     hclog.Logger
	tracer  trace.Tracer // nil: tracing off
	// flushWait is how long a stream's relay holds its writes (FlushWait).
	flushWait time.Duration
}

func newDispatch(d *Deps, _ map[string]string) (Stage, error) {
	h := d.Health
	if h == nil {
		h = NewHealth(d.Now)
	}
	red := d.Redact
	if red == nil {
		red = RedactorFor(d.Config)
	}
	return &dispatchStage{vendors: d.Vendors, jobs: d.Jobs, store: d.Store, files: d.Files, tasks: d.Tasks,
		health: h, red: red, now: d.Now, log: d.Logger.Named("dispatch"), tracer: d.Tracer, flushWait: FlushWait}, nil
}

func (s *dispatchStage) Name() string { return "dispatch" }

// outcome of one attempt.
type outcome int

const (
	done  outcome = iota // served, or failed in a way another channel cannot fix
	retry                // failed before anything reached the client
	again                // its plugin died before anything reached the client: the same channel may be tried again
)

// pluginRetries is how many times a call is made again on one channel
// after its plugin died under it (the host restarts the plugin; the call
// waits for it).
const pluginRetries = 2

func (s *dispatchStage) Serve(ctx context.Context, c *Call) error {
	switch {
	case c.Kind == KindRead:
		return c.Handler(ctx, c)
	case c.Job != nil:
		return s.serveJob(ctx, c)
	}
	r := c.Route
	modelTimeout := c.Model.Timeout
	if modelTimeout <= 0 {
		modelTimeout = DefaultChatTimeout
	}
	// A channel's own timeout replaces the model's for calls on it (agents
	// need about 600 s); the whole call may last as long as the longest.
	total := modelTimeout
	for _, cand := range r.Candidates {
		total = max(total, cand.Channel.Timeout)
	}
	// The call's deadline is its own (context.WithTimeout's, without its
	// allocations), and ends the client's blocked writes too (Bound).
	deadline := &c.own.deadline
	ctx = deadline.start(ctx, total)
	defer deadline.cancel()
	// A client that reads nothing does not outlast the call; what is
	// written after the attempts (an upstream failure's report) may be.
	c.W.Bound(ctx)
	defer c.W.Unbind()
	timeout := modelTimeout

	var last, unfit error
	cands := s.order(c.own.order[:0], r.Candidates)
	restarts := 0
	for i := 0; i < len(cands); i++ {
		cand := cands[i]
		if err := r.prepare(c, cand); err != nil {
			// A candidate whose protocol cannot carry this request is
			// skipped: an upstream failure stays the answer.
			if unfit == nil {
				unfit = err
			}
			continue
		}
		ch, upstreamModel := cand.Channel, r.bodyModel
		v := s.vendors[ch.Vendor]
		started := s.now()
		s.health.Begin(ch.Name)
		c.UpstreamTried = true
		c.UpstreamCalls++
		var res outcome
		var err error
		if v == nil {
			res, err = retry, apierr.Newf(apierr.UpstreamUnreachable, "the vendor plugin %q is not running", ch.Vendor)
		} else {
			req := c.own.chatRequest()
			*req = vendor.ChatRequest{
				Channel:     ch.Name,
				Protocol:    string(r.Protocol),
				Model:       upstreamModel,
				Body:        r.body,
				Stream:      c.Stream,
				Headers:     forwardHeaders(c.Request.Header),
				IdleTimeout: idleTimeout(c.Model, ch),
				RequestID:   c.ID,
			}
			timeout = modelTimeout
			if ch.Timeout > 0 {
				timeout = ch.Timeout
			}
			req.Timeout = timeout
			// The call's own deadline bounds an attempt as long as the
			// whole call (it started first); a second timer is spared.
			actx, acancel := ctx, context.CancelFunc(func() {})
			if timeout < total {
				actx, acancel = context.WithTimeout(ctx, timeout)
			}
			var span trace.Span
			if s.tracer != nil {
				actx, span, req.Headers = s.attemptSpan(actx, ch.Name, ch.Vendor, req.Headers)
			}
			if c.Stream {
				res, err = s.stream(actx, c, v, req)
			} else {
				res, err = s.unary(actx, c, v, req)
			}
			s.upstreamTime(c, started)
			if span != nil {
				endSpan(span, err)
			}
			acancel()
		}
		if res == done {
			var code string
			if err != nil {
				code = apierr.As(err).Code
			}
			switch {
			case err == nil || c.Served:
				s.health.Success(ch.Name)
				c.Channel = ch.Name
			case code == apierr.UpstreamTimeout:
				s.health.Failure(ch.Name)
			case code == apierr.ClientClosed:
				s.health.Release(ch.Name)
			default: // the channel answered (a 4xx of the caller's making)
				s.health.Success(ch.Name)
			}
			c.W.Unbind()
			return s.upstreamFailed(c, err)
		}
		if res == again && restarts < pluginRetries {
			// Not the channel's fault: the same channel is tried again,
			// once its plugin is back.
			restarts++
			i--
			s.health.Release(ch.Name)
		} else {
			s.health.Failure(ch.Name)
		}
		e := apierr.As(err)
		c.Attempts = append(c.Attempts, store.Attempt{
			Seq:          len(c.Attempts) + 1,
			CreatedAt:    started,
			LatencyMS:    s.now().Sub(started).Milliseconds(),
			ErrorCode:    e.Code,
			ErrorMessage: e.Message,
		})
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if last == nil && unfit != nil {
		return unfit
	}
	if last == nil {
		return apierr.Newf(apierr.NoChannelAvailable, "the model '%s' has no usable channel", c.ModelID)
	}
	if ctx.Err() != nil && c.Request.Context().Err() == nil {
		last = apierr.New(apierr.UpstreamTimeout, "the upstream did not answer within "+timeout.String())
	}
	c.W.Unbind()
	return s.upstreamFailed(c, last)
}

// builtinToolPath reports whether c is on the completions-style built-in
// tool path (web_search or image_generation, which require stream: true).
func builtinToolPath(c *Call) bool {
	return c.Protocol == protocol.OpenAIChat && c.Stream && len(c.Req.BuiltinTools) > 0
}

// upstreamFailed turns an upstream failure on the built-in tool path into
// the spec's in-stream report (Events, completions-style stream): a 200
// event stream, one error chunk of type api_error and code upstream_error,
// then data: [DONE]. Every upstream failure counts, before the first byte
// (any non-2xx answer, a connection failure, a timeout) or after it (a
// stream cut or timed out); a client that went away gets nothing. Other
// calls, and the gateway's own refusals (which never reach here), keep
// their status. The error returned is the row's: status error, code
// upstream_error, cost 0 unless part of an answer was served
// (docs/decisions.md).
func (s *dispatchStage) upstreamFailed(c *Call, err error) error {
	if err == nil || !builtinToolPath(c) {
		return err
	}
	e := apierr.As(err)
	if e.Code == apierr.ClientClosed || c.W.ClientGone() || c.Request.Context().Err() != nil {
		return err
	}
	out := &apierr.Error{Status: http.StatusBadGateway, Code: apierr.UpstreamError, Type: "api_error",
		Message: "the upstream failed while running a built-in tool: " + e.Message}
	if !c.W.Started() {
		sse.SetHeaders(c.W.Header())
		c.W.WriteHeader(http.StatusOK)
	}
	w := sse.NewWriter(c.W)
	_ = w.Write(protocol.Event{Data: apierr.Body(protocol.OpenAIChat, out)})
	_ = w.Done()
	return out
}

// idleTimeout is the longest wait between two stream events: the
// channel's, else the model's, else the default.
func idleTimeout(m *config.Model, ch *config.Channel) time.Duration {
	switch {
	case ch.IdleTimeout > 0:
		return ch.IdleTimeout
	case m.IdleTimeout > 0:
		return m.IdleTimeout
	}
	return DefaultIdleTimeout
}

// order moves the candidates whose circuit breaker is open to the end,
// and after them those whose plugin is down (restarting), keeping the
// route's order otherwise: when nothing else is left they are still tried
// (a call to a plugin that is down waits for it, bounded). The order is
// appended to out, which must not share cands' array.
func (s *dispatchStage) order(out, cands []Candidate) []Candidate {
	var resting, down []Candidate
	for _, cand := range cands {
		switch {
		case !s.up(cand.Channel.Vendor):
			down = append(down, cand)
		case s.health.Ready(cand.Channel.Name):
			out = append(out, cand)
		default:
			resting = append(resting, cand)
		}
	}
	return append(append(out, resting...), down...)
}

// up reports whether the vendor's plugin runs now (a vendor that cannot
// tell is taken as up).
func (s *dispatchStage) up(name string) bool {
	u, ok := s.vendors[name].(interface{ Up() bool })
	return !ok || u.Up()
}

// orderCandidates orders a call's candidates as PRODUCT.md §7 says:
// higher priority first; within one priority the channels that speak the
// client's protocol before those reached by translation; within each of
// those groups a weighted random order (weight, at least 1), drawn per call.
func orderCandidates(cands []Candidate) []Candidate {
	slices.SortStableFunc(cands, func(a, b Candidate) int {
		if a.Channel.Priority != b.Channel.Priority {
			return cmp.Compare(b.Channel.Priority, a.Channel.Priority)
		}
		return cmp.Compare(nativeRank(a), nativeRank(b))
	})
	for i := 0; i < len(cands); {
		j := i
		for j < len(cands) && cands[j].Channel.Priority == cands[i].Channel.Priority && nativeRank(cands[j]) == nativeRank(cands[i]) {
			j++
		}
		weightedShuffle(cands[i:j])
		i = j
	}
	return cands
}

func nativeRank(c Candidate) int {
	if c.Translator == nil {
		return 0
	}
	return 1
}

func weightedShuffle(group []Candidate) {
	if len(group) < 2 {
		return
	}
	total := 0
	for _, c := range group {
		total += max(c.Channel.Weight, 1)
	}
	for i := 0; i < len(group)-1; i++ {
		n := rand.IntN(total)
		for j := i; j < len(group); j++ {
			n -= max(group[j].Channel.Weight, 1)
			if n < 0 {
				total -= max(group[j].Channel.Weight, 1)
				group[i], group[j] = group[j], group[i]
				break
			}
		}
	}
}

// forwardHeaders picks the client headers a vendor may need.
func forwardHeaders(h http.Header) map[string]string {
	if v := h.Get("Anthropic-Beta"); v != "" {
		return map[string]string{"anthropic-beta": v}
	}
	return nil
}

// failure maps a plugin error to the client error and whether another
// channel may be tried. Messages are masked: a vendor's transport error
// may name the upstream.
func (s *dispatchStage) failure(ctx context.Context, c *Call, err error) (outcome, error) {
	var f *vendor.Failure
	if !errors.As(err, &f) {
		// A transport fault: the plugin process died or is restarting.
		return retry, apierr.New(apierr.UpstreamUnreachable, "the upstream could not be reached")
	}
	if f.PluginDied {
		return again, apierr.New(apierr.UpstreamUnreachable, "the upstream could not be reached: "+s.red.Redact(f.Message))
	}
	switch f.Kind {
	case vendor.FailureTimeout:
		return done, apierr.New(apierr.UpstreamTimeout, "the upstream timed out")
	case vendor.FailureCanceled:
		if ctx.Err() != nil && c.Request.Context().Err() == nil {
			return done, apierr.New(apierr.UpstreamTimeout, "the upstream timed out")
		}
		return done, apierr.New(apierr.ClientClosed, "the client closed the request")
	case vendor.FailureConnect, vendor.FailureConfig:
		return retry, apierr.New(apierr.UpstreamUnreachable, "the upstream could not be reached: "+s.red.Redact(f.Message))
	default:
		return retry, &apierr.Error{Status: 502, Code: apierr.UpstreamError, Type: "api_error",
			Message: "the upstream failed: " + s.red.Redact(f.Message)}
	}
}

// upstreamStatus maps a non-2xx upstream answer. Its message reaches the
// client masked like the log row's (PRODUCT.md §7).
func (s *dispatchStage) upstreamStatus(c *Call, status int, header map[string]string, body []byte) (outcome, error) {
	msg := ""
	if up := codec.For(c.Route.Protocol); up != nil {
		msg = s.red.Redact(up.ErrorMessage(body))
	}
	e := apierr.FromUpstream(status, msg)
	if ra := header["retry-after"]; ra != "" {
		if _, err := strconv.Atoi(ra); err == nil {
			e.WithHeader("Retry-After", ra)
		}
	}
	if status >= 500 || status == 429 {
		return retry, e
	}
	return done, e
}

func (s *dispatchStage) unary(ctx context.Context, c *Call, v vendor.Vendor, req *vendor.ChatRequest) (outcome, error) {
	resp, err := v.Chat(ctx, req)
	if err != nil {
		return s.failure(ctx, c, err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		return s.upstreamStatus(c, resp.Status, resp.Headers, resp.Body)
	}
	// The one check of the answer's JSON: what reads it next (usage, the
	// cut, the translator) is told it passed (ResponseOptions.Checked).
	if !codec.ValidObject(resp.Body) {
		return retry, brokenAnswer()
	}
	up := codec.For(c.Route.Protocol)
	c.Usage = up.Usage(resp.Body)
	c.OutputChars = up.OutputChars(resp.Body)
	body, cut, err := cutAnswer(c, resp.Body)
	switch tr := c.Route.Translator; {
	case cut:
		if err != nil {
			return done, apierr.As(err)
		}
	case tr == nil:
		// Issue 17: the client sees the gateway's model id, not the upstream's.
		body = codec.NewModelNamer(c.Route.Protocol, c.ModelID).Answer(resp.Body)
	default:
		opts := c.responseOptions()
		opts.Checked = true
		body, err = tr.Response(resp.Body, opts)
		if err != nil {
			// A failed answer in a 200 is the upstream's error; anything
			// else the upstream sent that cannot be read is a fault.
			return done, apierr.As(err)
		}
	}
	c.Served = true
	c.Respond(http.StatusOK, nil, body) // JSON, the Content-Type of an answer without one
	return done, nil
}

func (c *Call) responseOptions() translate.ResponseOptions {
	return translate.ResponseOptions{
		Model: c.ModelID, RequestID: c.ID, Created: c.Start, IncludeUsage: c.Req.IncludeUsage,
	}
}

// relay is the vendor.Sink of a streaming call: it writes each upstream
// event to the client as it comes, translated when needed, and tracks usage.
// It stops the upstream at the output limit sent there (outlimit.go) and
// ends the stream at an event that does not parse. Each batch of events
// (those of one upstream read) goes out in one flush, the last with the
// response's end (relayhold.go).
type relay struct {
	c         *Call
	red       *redact.Redactor
	track     codec.Stream
	tr        translate.Stream
	chunk     *codec.Chunk // track's scan of each event, which tr reads
	out       *sse.Writer
	emit      func(protocol.Event) error // out.Append, bound once (a method value allocates)
	head      vendor.Head
	started   bool
	keepUsage bool
	stopped   bool              // ended at the output limit
	broken    bool              // ended at an event that does not parse
	namer     *codec.ModelNamer // native streams: the gateway's model id
	hold      relayHold         // what is written and not yet flushed

	// What out and namer point to: the relay is one allocation.
	outW   sse.Writer
	outBuf [512]byte
	namerV codec.ModelNamer
}

func (r *relay) Head(h vendor.Head) error {
	r.head = h
	if h.Status < 200 || h.Status > 299 {
		return nil
	}
	sse.SetHeaders(r.c.W.Header())
	r.c.W.WriteHeader(http.StatusOK)
	r.c.W.Flush()
	r.started = true
	r.c.Served = true
	return nil
}

func (r *relay) Event(ev vendor.Event) error {
	r.hold.quiet()
	err := r.add(ev)
	r.flush()
	return err
}

// Events writes events that arrived together and flushes once.
func (r *relay) Events(evs []vendor.Event) error {
	r.hold.quiet()
	var err error
	for _, ev := range evs {
		if err = r.add(ev); err != nil {
			break
		}
	}
	r.flush()
	return err
}

// flush sends what add wrote. Once the stream is complete, its last
// batch is held: the upstream call returns right after its terminator,
// and the batch goes out with the response's end, after the settlement
// (a translated stream's with the translator's End), in one write. An
// upstream that lingers past FlushWait gets it flushed then.
func (r *relay) flush() {
	if r.track.Complete() && !r.stopped {
		r.hold.hold()
		return
	}
	r.out.Flush()
}

// add tracks one upstream event and writes what the client gets of it,
// unflushed.
func (r *relay) add(ev vendor.Event) error {
	pe := protocol.Event{Name: ev.Name, Data: ev.Data}
	chars := r.track.OutputChars()
	keep := r.track.Observe(pe)
	if r.track.Broken() {
		r.broken = true
		return errBroken
	}
	if r.track.OutputChars() > chars && pastLimit(r.c.OutLimit, r.track.OutputChars(), r.track.Usage().OutputTokens) {
		return r.stop()
	}
	if r.tr != nil {
		// A translated error event carries the upstream's message too:
		// it is masked before the translator reads it. An event the mask
		// left alone is read from the tracker's scan of it.
		data := maskErrorEvent(r.red, pe.Data)
		if sameBytes(data, pe.Data) {
			return r.tr.Read(r.chunk, r.emit)
		}
		pe.Data = data
		return r.tr.Event(pe, r.emit)
	}
	if !keep && !r.keepUsage {
		return nil
	}
	// An upstream error event passes through as the spec says, its
	// message masked (PRODUCT.md §7).
	pe.Data = maskErrorEvent(r.red, pe.Data)
	return r.out.Append(r.namer.Event(pe))
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// newRelay returns the relay of c's stream.
func newRelay(c *Call, red *redact.Redactor, wait time.Duration) *relay {
	rl := &relay{
		c:         c,
		red:       red,
		track:     codec.For(c.Route.Protocol).NewStream(),
		keepUsage: c.Protocol != protocol.OpenAIChat || c.Req.IncludeUsage,
	}
	rl.out = rl.outW.Init(c.W, rl.outBuf[:0])
	rl.hold.wait, rl.hold.w = wait, c.W
	if c.Route.Translator != nil {
		rl.tr = c.Route.Translator.NewStream(c.responseOptions())
		rl.chunk = rl.track.Chunk()
		rl.emit = rl.out.Append
	} else {
		rl.namerV = *codec.NewModelNamer(c.Route.Protocol, c.ModelID)
		rl.namer = &rl.namerV
	}
	return rl
}

func (s *dispatchStage) stream(ctx context.Context, c *Call, v vendor.Vendor, req *vendor.ChatRequest) (outcome, error) {
	rl := newRelay(c, s.red, s.flushWait)
	defer rl.hold.quiet() // should the stream panic: no flush after the response
	err := v.ChatStream(ctx, req, rl)
	rl.hold.quiet() // the writer is the chain's again
	c.Usage = rl.track.Usage()
	c.OutputChars = rl.track.OutputChars()
	switch {
	case rl.stopped && !c.W.ClientGone():
		return done, nil // ended at the limit as the protocol ends a stop at max tokens
	case rl.broken && !c.W.ClientGone():
		return done, brokenStream()
	}
	if !rl.started {
		if err != nil {
			return s.failure(ctx, c, err)
		}
		if rl.head.Status == 0 {
			return retry, apierr.New(apierr.UpstreamUnreachable, "the upstream closed the stream without answering")
		}
		return s.upstreamStatus(c, rl.head.Status, rl.head.Headers, rl.head.Body)
	}
	// The status is sent: from here a failure only ends the stream early.
	// A stream whose last event went out is complete, even when the call
	// ended with an error after it (a client that hung up on [DONE] cancels
	// the plugin's call while it reads the upstream's end).
	complete := rl.track.Complete()
	if complete && rl.tr != nil {
		// The translator's last events (the close of a block, the final
		// usage, the terminator) go out with the last batch (relay.flush).
		werr := rl.tr.End(rl.emit)
		if werr != nil {
			err, complete = werr, false
		}
	}
	var e error
	switch {
	case complete && !c.W.ClientGone():
		// Every event was written: a client that hangs up now has them all.
	case c.W.ClientGone() || c.Request.Context().Err() != nil:
		return done, apierr.New(apierr.ClientClosed, "the client closed the stream")
	case err != nil:
		_, e = s.failure(ctx, c, err)
	case !rl.track.Complete():
		e = &apierr.Error{Status: 502, Code: apierr.UpstreamError, Type: "api_error",
			Message: "the upstream ended the stream before it was complete"}
	}
	// No error frame is injected here, except on the built-in tool path
	// (see upstreamFailed, which Serve applies).
	return done, e
}

var _ vendor.BatchSink = (*relay)(nil)
