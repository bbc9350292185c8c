// Package tracing sets up OpenTelemetry traces for the gateway: the SDK,
// an OTLP exporter (http/protobuf or grpc), and the HTTP middleware that
// opens each request's span, joining a client's W3C traceparent. The
// pipeline opens the spans of stages and upstream attempts under it and
// hands the attempt's trace context to the plugin, which passes it on to
// the upstream.
//
// Off by default. The `telemetry {}` block or the standard OTEL_*
// variables turn it on by naming an endpoint; OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none keep it off. Off, nothing is installed: no
// middleware, no tracer, no cost.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-gw/tollgate/core/config"
)

// DefaultServiceName is service.name when neither the block nor
// OTEL_SERVICE_NAME names one.
const DefaultServiceName = "tollgate"

// Provider is tracing turned on: the SDK's provider and the gateway's
// tracer.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// Enabled reports whether cfg or the environment (getenv) turns traces on.
func Enabled(cfg config.Telemetry, getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return cfg.Endpoint != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New starts tracing as cfg and the OTEL_* variables say; nil (and no
// error) when it is off.
func New(ctx context.Context, cfg config.Telemetry) (*Provider, error) {
	if !Enabled(cfg, os.Getenv) {
		return nil, nil
	}
	exp, err := exporter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	res, err := resource.New(ctx,
		resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if cfg.ServiceName != "" {
		res, _ = resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName)))
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if cfg.SamplerRatio != nil {
		// A client's sampled traceparent is followed; new traces by ratio.
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*cfg.SamplerRatio))))
	}
	// Otherwise the SDK reads OTEL_TRACES_SAMPLER (default: parent-based,
	// always on).
	tp := sdktrace.NewTracerProvider(opts...)
	return &Provider{
		tp: tp, tracer: tp.Tracer("github.com/tollgate-gw/tollgate"),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}, nil
}

// exporter is the OTLP exporter cfg names; what it leaves out comes from
// the OTEL_EXPORTER_OTLP_* variables, which the exporters read
// themselves.
func exporter(ctx context.Context, cfg config.Telemetry) (sdktrace.SpanExporter, error) {
	proto := cfg.Protocol
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	}
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var u *url.URL
	if cfg.Endpoint != "" {
		var err error
		if u, err = url.Parse(cfg.Endpoint); err != nil {
			return nil, fmt.Errorf("telemetry: endpoint: %w", err)
		}
	}
	switch proto {
	case "grpc":
		var opts []otlptracegrpc.Option
		if u != nil {
			opts = append(opts, otlptracegrpc.WithEndpoint(u.Host))
			if u.Scheme == "http" {
				opts = append(opts, otlptracegrpc.WithInsecure())
			}
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	case "", "http/protobuf":
		var opts []otlptracehttp.Option
		if u != nil {
			// Like OTEL_EXPORTER_OTLP_ENDPOINT, the endpoint is the
			// collector's base URL: traces go to /v1/traces under it.
			opts = append(opts, otlptracehttp.WithEndpoint(u.Host),
				otlptracehttp.WithURLPath(strings.TrimRight(u.Path, "/")+"/v1/traces"))
			if u.Scheme == "http" {
				opts = append(opts, otlptracehttp.WithInsecure())
			}
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
		}
		return otlptracehttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("telemetry: the OTLP protocol %q is not supported (want http/protobuf or grpc)", proto)
}

// Tracer is the gateway's tracer (the pipeline's Deps.Tracer).
func (p *Provider) Tracer() trace.Tracer { return p.tracer }

// Shutdown exports the spans still buffered and stops.
func (p *Provider) Shutdown(ctx context.Context) error { return p.tp.Shutdown(ctx) }

// Handler opens each request's span around next: a server span that
// continues the client's traceparent when it sent one, named after the
// route's pattern (routeOf, read once the request was served), with its
// status.
func (p *Provider) Handler(next http.Handler, routeOf func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := p.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := p.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("url.path", r.URL.Path),
				attribute.String("server.address", r.Host),
			))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		if route := routeOf(r); route != "" {
			_, path, _ := strings.Cut(route, " ")
			span.SetName(r.Method + " " + path)
			span.SetAttributes(attribute.String("http.route", path))
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	})
}

// statusWriter records the status; Unwrap lets http.ResponseController
// reach the connection (flushes of a stream, deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
