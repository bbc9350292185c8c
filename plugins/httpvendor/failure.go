package httpvendor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Causes the plugin cancels its own calls with, told apart from the caller's.
var (
	errTotal = errors.New("total timeout")
	errIdle  = errors.New("idle timeout")
)

// stopped is the error returned when the sink refused an event: the caller
// went away, so the call counts as cancelled.
func stopped(err error) error {
	return &vendor.Failure{Kind: vendor.FailureCanceled, Message: "the receiver stopped: " + err.Error()}
}

func configFailure(format string, a ...any) error {
	return &vendor.Failure{Kind: vendor.FailureConfig, Message: fmt.Sprintf(format, a...)}
}

// classify turns the error of a call (from the transport or a body read)
// into a *vendor.Failure. A context that ended decides first, since the
// transport reports a cancelled call as whatever read it interrupted.
// Messages never carry the upstream URL: they can reach the client.
func classify(ctx context.Context, err error, req *vendor.ChatRequest) *vendor.Failure {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		switch {
		case errors.Is(cause, errIdle):
			return &vendor.Failure{Kind: vendor.FailureTimeout,
				Message: "no event from the upstream for " + req.IdleTimeout.String()}
		case errors.Is(cause, errTotal):
			return &vendor.Failure{Kind: vendor.FailureTimeout,
				Message: "no complete answer from the upstream within " + req.Timeout.String()}
		case errors.Is(cause, context.DeadlineExceeded):
			return &vendor.Failure{Kind: vendor.FailureTimeout, Message: "the call's deadline passed"}
		default:
			return &vendor.Failure{Kind: vendor.FailureCanceled, Message: "the call was cancelled"}
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, sse.ErrEventTooLarge) {
		return &vendor.Failure{Kind: vendor.FailureBroken, Message: "the upstream sent a stream event larger than the cap (" + err.Error() + ")"}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &vendor.Failure{Kind: vendor.FailureBroken, Message: "the upstream cut its answer mid-event"}
	}
	if ue != nil && ue.Timeout() {
		// A dial or TLS handshake timeout of the transport itself.
		return &vendor.Failure{Kind: vendor.FailureConnect, Message: "connect: " + err.Error()}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &vendor.Failure{Kind: vendor.FailureConnect, Message: "dns lookup failed: " + dnsErr.Err}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return &vendor.Failure{Kind: vendor.FailureConnect, Message: "connect: " + opErr.Err.Error()}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &vendor.Failure{Kind: vendor.FailureConnect, Message: "connect: connection refused"}
	}
	if isTLS(err) {
		return &vendor.Failure{Kind: vendor.FailureConnect, Message: "tls: " + err.Error()}
	}
	return &vendor.Failure{Kind: vendor.FailureBroken, Message: "the upstream connection broke: " + err.Error()}
}

func isTLS(err error) bool {
	var (
		rec      tls.RecordHeaderError
		alert    tls.AlertError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// withTimeout bounds ctx by the request's total timeout, if it has one.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, errTotal)
}
