package pipeline

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type nopStage string

func (s nopStage) Name() string                     { return string(s) }
func (nopStage) Serve(context.Context, *Call) error { return nil }

// With tracing and metrics off, the chain's hooks cost nothing: a call
// through it allocates nothing of theirs.
func TestHooksOffAllocateNothing(t *testing.T) {
	stages := []Stage{nopStage("a"), nopStage("b"), nopStage("c")}
	ch := &Chain{stages: stages, names: spanNames(stages), log: hclog.NewNullLogger()}
	c := &Call{}
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { ch.Run(ctx, c) }); n != 0 {
		t.Errorf("a call through a chain without tracing allocates %v times", n)
	}
}

// With tracing on, each stage has its span, a child of the caller's.
func TestStageSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	tracer := tp.Tracer("test")
	stages := []Stage{nopStage("a"), nopStage("b")}
	ch := &Chain{stages: stages, names: spanNames(stages), log: hclog.NewNullLogger(), tracer: tracer}
	ctx, root := tracer.Start(context.Background(), "request")
	ch.Run(ctx, &Call{})
	root.End()
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for _, s := range spans[:2] {
		if s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("span %s: parent %s, want the request's", s.Name(), s.Parent().SpanID())
		}
	}
	if spans[0].Name() != "stage a" || spans[1].Name() != "stage b" {
		t.Errorf("span names %q %q", spans[0].Name(), spans[1].Name())
	}
}
