package pipeline

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-gw/tollgate/core/apierr"
)

// CallObserver is told of every call once its chain ran: the status is
// sent, the row written, the charge known (metrics). It runs on the
// request's goroutine, so it must be short and not allocate. Optional.
type CallObserver interface {
	CallDone(c *Call)
	// TaskDone is told of a task's end: its settle and log ran (the
	// charge of an async job, made after its request was answered).
	TaskDone(c *Call)
}

// Tracing (OpenTelemetry) is on when Deps.Tracer is set: the chain opens
// a span per stage under the request's span, dispatch one per upstream
// attempt under its stage's, and the attempt's W3C trace context goes to
// the plugin with the call (ChatRequest.Headers, JobRequest.Headers), so
// the plugin's HTTP machinery hands it on to the upstream. Off, every
// hook is one nil check: nothing allocates.

// spanNames are the span names of a chain's stages, made once.
func spanNames(stages []Stage) []string {
	out := make([]string, len(stages))
	for i, s := range stages {
		out[i] = "stage " + s.Name()
	}
	return out
}

// serveStage runs stage i, in its own span when tracing is on.
func (ch *Chain) serveStage(ctx context.Context, i int, c *Call) error {
	if ch.tracer == nil {
		return ch.stages[i].Serve(ctx, c)
	}
	ctx, span := ch.tracer.Start(ctx, ch.names[i])
	err := ch.stages[i].Serve(ctx, c)
	endSpan(span, err)
	return err
}

// finishStage runs stage i's Finish, in its own span when tracing is on.
func (ch *Chain) finishStage(ctx context.Context, i int, f Finisher, c *Call) {
	if ch.tracer == nil {
		f.Finish(ctx, c)
		return
	}
	ctx, span := ch.tracer.Start(ctx, ch.names[i], trace.WithAttributes(attribute.Bool("tollgate.finish", true)))
	f.Finish(ctx, c)
	span.End()
}

// endSpan records err (a client error's code and status) and ends span.
func endSpan(span trace.Span, err error) {
	if err != nil {
		e := apierr.As(err)
		span.SetAttributes(attribute.String("tollgate.error_code", e.Code), attribute.Int("http.response.status_code", e.Status))
		span.SetStatus(codes.Error, e.Message)
	}
	span.End()
}

// attemptSpan opens the span of one upstream attempt on channel, and
// returns the headers that carry its trace context to the plugin: base
// with traceparent (and tracestate) added, in a new map.
func (s *dispatchStage) attemptSpan(ctx context.Context, channel, vendorName string, base map[string]string) (context.Context, trace.Span, map[string]string) {
	ctx, span := s.tracer.Start(ctx, "upstream "+channel, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("tollgate.channel", channel), attribute.String("tollgate.vendor", vendorName)))
	h := make(map[string]string, len(base)+2)
	for k, v := range base {
		h[k] = v
	}
	propagation.TraceContext{}.Inject(ctx, propagation.MapCarrier(h))
	return ctx, span, h
}

// traceHeaders carries ctx's span (an attempt's) to a plugin, or nil when
// ctx has none.
func traceHeaders(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	h := make(map[string]string, 2)
	propagation.TraceContext{}.Inject(ctx, propagation.MapCarrier(h))
	return h
}

// upstreamTime adds the time since started to the call's upstream time
// (metrics' upstream latency).
func (s *dispatchStage) upstreamTime(c *Call, started time.Time) {
	c.UpstreamTime += s.now().Sub(started)
}
