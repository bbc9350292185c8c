package billing

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// maxEventBytes bounds a webhook delivery's body (Stripe's events are a
// few kilobytes).
const maxEventBytes = 1 << 20

// ServeWebhook receives the processor's events (POST, no key: the
// signature over the raw body is the credential). It answers 2xx only once
// the event's change is in the store, so the processor sends again any
// delivery that failed or was cut; a repeat then changes nothing.
func (s *Service) ServeWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEventBytes+1))
	if err != nil {
		webhookAnswer(w, http.StatusBadRequest, map[string]any{"error": "the body could not be read"})
		return
	}
	if len(body) > maxEventBytes {
		webhookAnswer(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "the body is larger than an event"})
		return
	}
	ev, err := s.p.Event(body, r.Header)
	if err != nil {
		s.log.Warn("refused a webhook delivery", "address", r.RemoteAddr, "error", err)
		msg := "the event could not be read"
		if errors.Is(err, ErrSignature) {
			msg = "the signature does not verify (check the endpoint's signing secret, and the clocks)"
		}
		webhookAnswer(w, http.StatusBadRequest, map[string]any{"error": msg})
		return
	}
	// The step runs to its end once begun, whatever the sender does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	out, err := s.Apply(ctx, ev, "webhook")
	switch {
	case errors.Is(err, ErrNotPaidYet):
		s.log.Info("a refund came before its payment; the processor will send it again", "event_id", ev.ID, "payment_id", ev.PaymentID)
		webhookAnswer(w, http.StatusConflict, map[string]any{"error": err.Error()})
	case err != nil:
		s.log.Error("a webhook event was not applied; the processor will send it again", "event_id", ev.ID, "event", ev.Type, "error", err)
		webhookAnswer(w, http.StatusInternalServerError, map[string]any{"error": "the event could not be recorded; send it again"})
	default:
		if out.Result == "unknown" {
			s.log.Debug("an event of no order of this gateway", "event_id", ev.ID, "event", ev.Type)
		}
		webhookAnswer(w, http.StatusOK, map[string]any{"received": true, "outcome": out})
	}
}

func webhookAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
