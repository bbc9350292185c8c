// Package stripesim is a simulated Stripe: the part of Stripe's API that
// top-ups use (create, read and expire a Checkout Session; read a
// PaymentIntent with its charge; make a refund), a hosted payment page
// with Pay, Decline and "Pay later" buttons, receipts, and webhooks signed
// exactly as Stripe signs them (Stripe-Signature: t=...,v1=HMAC-SHA256 of
// "t.body" under the endpoint's secret), sent again with backoff until
// the endpoint answers 2xx. Knobs (Faults) deliver events twice, late,
// held and then out of order, with a bad or stale signature, with a wrong
// amount, or not at all, and stall the API's reads. The embedded default
// runs it, so the whole top-up shows without a Stripe account; tests
// point stripe-go at it.
package stripesim

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// APIVersion is the API version of the events it sends: stripe-go v82's.
const APIVersion = "2025-08-27.basil"

// Options configure the simulator.
type Options struct {
	// SecretKey is the API key callers must send; WebhookSecret signs
	// the events.
	SecretKey, WebhookSecret string
	// WebhookURL is the endpoint events are sent to (SetWebhookURL can
	// change it later, say for a gateway that restarted elsewhere).
	WebhookURL string
	// BaseURL is the simulator's own address, in the links it hands out
	// (SetBaseURL once it listens).
	BaseURL string
	// Retry is the wait before each new attempt of a delivery (the last
	// one repeats) and Attempts how many are made; default 1s doubling to
	// a minute, 30 attempts. Stripe itself tries for three days.
	Retry    []time.Duration
	Attempts int
	Logger   hclog.Logger
	Now      func() time.Time
}

// Faults are the delivery faults, for the events made while they are set
// (BadSignature and Stale count at each attempt).
type Faults struct {
	// Twice sends each event twice, both at once.
	Twice bool `json:"twice"`
	// Delay sends each event this late.
	Delay time.Duration `json:"delay"`
	// Hold keeps events until Release, which sends them newest first.
	Hold bool `json:"hold"`
	// BadSignature signs with a wrong secret; Stale with a timestamp ten
	// minutes old.
	BadSignature bool `json:"bad_signature"`
	Stale        bool `json:"stale"`
	// WrongAmount sends each event with an amount 1.00 above the
	// payment's (signed correctly).
	WrongAmount bool `json:"wrong_amount"`
	// Drop makes events but never sends them (a lost event).
	Drop bool `json:"drop"`
	// StallAPI holds the API's reads (GET) until it is turned off.
	StallAPI bool `json:"stall_api"`
}

// Server is the simulator, an http.Handler.
type Server struct {
	o   Options
	log hclog.Logger
	mux *http.ServeMux

	mu       sync.Mutex
	base     string
	hook     string
	faults   Faults
	unstall  chan struct{}
	sessions map[string]*session
	order    []string // session ids, oldest first
	intents  map[string]*intent
	charges  map[string]*charge
	events   []*event
	held     []*event
	idem     map[string][]byte
	wg       sync.WaitGroup
	stop     chan struct{}
	stopOnce sync.Once
}

type session struct {
	ID, ClientRef, Currency, Email, Success, Cancel, Name, Status, PaymentStatus, Intent string
	Amount, Created, Expires                                                             int64
	Metadata, IntentMetadata                                                             map[string]string
	Declined                                                                             bool
}

type intent struct {
	ID, Status, Charge, Currency string
	Amount                       int64
	Metadata                     map[string]string
}

type charge struct {
	ID, Intent, Currency string
	Amount, Refunded     int64
	Metadata             map[string]string
}

type event struct {
	ID, Type string
	Created  int64
	Payload  []byte
	// Attempts are the deliveries made, Delivered once one got a 2xx.
	Attempts  []Attempt
	Delivered bool
}

// Attempt is one delivery of an event.
type Attempt struct {
	At     time.Time `json:"at"`
	Status int       `json:"status"`
	Error  string    `json:"error,omitempty"`
	Body   string    `json:"body,omitempty"`
}

// New returns a simulator.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.Retry) == 0 {
		o.Retry = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute}
	}
	if o.Attempts <= 0 {
		o.Attempts = 30
	}
	s := &Server{
		o: o, log: o.Logger.Named("stripesim"), base: strings.TrimSuffix(o.BaseURL, "/"), hook: o.WebhookURL,
		sessions: map[string]*session{}, intents: map[string]*intent{}, charges: map[string]*charge{},
		idem: map[string][]byte{}, unstall: make(chan struct{}), stop: make(chan struct{}),
	}
	close(s.unstall)
	s.routes()
	return s
}

// SetBaseURL sets the simulator's own address (once it listens).
func (s *Server) SetBaseURL(u string) {
	s.mu.Lock()
	s.base = strings.TrimSuffix(u, "/")
	s.mu.Unlock()
}

// BaseURL is the simulator's own address.
func (s *Server) BaseURL() string { s.mu.Lock(); defer s.mu.Unlock(); return s.base }

// SetWebhookURL points the events at an endpoint (deliveries under way
// use it from their next attempt).
func (s *Server) SetWebhookURL(u string) { s.mu.Lock(); s.hook = u; s.mu.Unlock() }

// SetFaults sets the delivery faults; turning StallAPI off lets the
// stalled reads go on.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.faults.StallAPI
	s.faults = f
	switch {
	case f.StallAPI && !was:
		s.unstall = make(chan struct{})
	case !f.StallAPI && was:
		close(s.unstall)
	}
}

// Faults are the delivery faults set.
func (s *Server) Faults() Faults { s.mu.Lock(); defer s.mu.Unlock(); return s.faults }

// Close stops the deliveries (those under way end at their next wait).
func (s *Server) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.SetFaults(Faults{})
	s.wg.Wait()
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Session ids, pages and state, for tests and the dashboard.

// SessionOf is the session whose client_reference_id is ref ("" if none).
func (s *Server) SessionOf(ref string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range slices.Backward(s.order) {
		if s.sessions[id].ClientRef == ref {
			return id
		}
	}
	return ""
}

// EventInfo is an event as tests and the dashboard see it.
type EventInfo struct {
	ID, Type  string
	Session   string
	Attempts  []Attempt
	Delivered bool
}

// Events lists the events made, oldest first.
func (s *Server) Events() []EventInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]EventInfo, 0, len(s.events))
	for _, e := range s.events {
		var obj struct {
			Data struct {
				Object struct {
					ID, Object string
				} `json:"object"`
			} `json:"data"`
		}
		_ = json.Unmarshal(e.Payload, &obj)
		out = append(out, EventInfo{ID: e.ID, Type: e.Type, Session: obj.Data.Object.ID,
			Attempts: slices.Clone(e.Attempts), Delivered: e.Delivered})
	}
	return out
}

// sign is Stripe's v1 signature of payload at t under secret.
func sign(payload []byte, t int64, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", t)
	m.Write(payload)
	return "t=" + strconv.FormatInt(t, 10) + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// emit makes an event of obj and sends it under the faults set; s.mu is
// held.
func (s *Server) emit(typ string, obj map[string]any) *event {
	f := s.faults
	if f.WrongAmount {
		obj = maps(obj)
		for _, k := range []string{"amount_total", "amount", "amount_subtotal"} {
			if v, ok := obj[k].(int64); ok {
				obj[k] = v + 100
			}
		}
	}
	now := s.o.Now()
	e := &event{ID: newID("evt_"), Type: typ, Created: now.Unix()}
	e.Payload, _ = json.MarshalIndent(map[string]any{
		"id": e.ID, "object": "event", "api_version": APIVersion, "created": e.Created,
		"data": map[string]any{"object": obj}, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "type": typ,
	}, "", "  ")
	s.events = append(s.events, e)
	switch {
	case f.Drop:
	case f.Hold:
		s.held = append(s.held, e)
	default:
		s.send(e, f.Delay)
		if f.Twice {
			s.send(e, f.Delay)
		}
	}
	return e
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Release sends the held events, newest first (out of order).
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range slices.Backward(s.held) {
		s.send(e, 0)
	}
	s.held = nil
}

// Resend sends an event again, as the dashboard's "Resend" does.
func (s *Server) Resend(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if e.ID == id {
			s.send(e, 0)
			return true
		}
	}
	return false
}

// send delivers e after delay, again with backoff until a 2xx; s.mu is
// held.
func (s *Server) send(e *event, delay time.Duration) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		wait := delay
		for attempt := 0; attempt < s.o.Attempts; attempt++ {
			if wait > 0 {
				select {
				case <-time.After(wait):
				case <-s.stop:
					return
				}
			}
			if s.deliver(e) {
				return
			}
			wait = s.o.Retry[min(attempt, len(s.o.Retry)-1)]
		}
		s.log.Warn("gave up delivering an event", "event_id", e.ID, "type", e.Type)
	}()
}

var client = &http.Client{Timeout: 30 * time.Second}

// deliver makes one attempt; it reports a 2xx.
func (s *Server) deliver(e *event) bool {
	s.mu.Lock()
	hook, f := s.hook, s.faults
	s.mu.Unlock()
	if hook == "" {
		return false
	}
	t, secret := s.o.Now().Unix(), s.o.WebhookSecret
	if f.Stale {
		t -= 600
	}
	if f.BadSignature {
		secret = "whsec_not_the_endpoint_secret"
	}
	req, _ := http.NewRequest(http.MethodPost, hook, bytes.NewReader(e.Payload))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", sign(e.Payload, t, secret))
	a := Attempt{At: s.o.Now()}
	resp, err := client.Do(req)
	if err != nil {
		a.Error = err.Error()
	} else {
		a.Status = resp.StatusCode
		var b bytes.Buffer
		_, _ = b.ReadFrom(http.MaxBytesReader(nil, resp.Body, 4096))
		resp.Body.Close()
		a.Body = b.String()
	}
	ok := a.Status >= 200 && a.Status < 300
	s.mu.Lock()
	e.Attempts = append(e.Attempts, a)
	e.Delivered = e.Delivered || ok
	s.mu.Unlock()
	s.log.Debug("event delivered", "event_id", e.ID, "type", e.Type, "status", a.Status, "error", a.Error)
	return ok
}

// The objects, as Stripe's API writes them; s.mu is held.

func (s *Server) sessionJSON(ss *session) map[string]any {
	var pi any
	if ss.Intent != "" {
		pi = ss.Intent
	}
	var u any
	if ss.Status == "open" {
		u = s.base + "/pay/" + ss.ID
	}
	return map[string]any{
		"id": ss.ID, "object": "checkout.session", "amount_subtotal": ss.Amount, "amount_total": ss.Amount,
		"cancel_url": ss.Cancel, "success_url": ss.Success, "client_reference_id": ss.ClientRef, "created": ss.Created,
		"currency": ss.Currency, "customer_email": nullable(ss.Email), "expires_at": ss.Expires, "livemode": false,
		"metadata": ss.Metadata, "mode": "payment", "payment_intent": pi, "payment_status": ss.PaymentStatus,
		"status": ss.Status, "url": u,
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) chargeJSON(c *charge) map[string]any {
	return map[string]any{
		"id": c.ID, "object": "charge", "amount": c.Amount, "amount_captured": c.Amount, "amount_refunded": c.Refunded,
		"currency": c.Currency, "paid": true, "refunded": c.Refunded == c.Amount, "status": "succeeded",
		"payment_intent": c.Intent, "metadata": c.Metadata, "receipt_url": s.base + "/receipts/" + c.ID,
		"captured": true, "livemode": false,
	}
}

func (s *Server) intentJSON(pi *intent, expand bool) map[string]any {
	var ch any
	if pi.Charge != "" {
		ch = pi.Charge
		if expand {
			ch = s.chargeJSON(s.charges[pi.Charge])
		}
	}
	return map[string]any{
		"id": pi.ID, "object": "payment_intent", "amount": pi.Amount, "currency": pi.Currency, "status": pi.Status,
		"latest_charge": ch, "metadata": pi.Metadata, "livemode": false,
	}
}

// The payments, as the hosted page and the tests make them; s.mu is held.

// pay takes the money of an open session: paid at once, or (later) a
// payment on its way.
func (s *Server) pay(ss *session, later bool) error {
	if ss.Status != "open" {
		return fmt.Errorf("the session is %s", ss.Status)
	}
	pi := &intent{ID: newID("pi_"), Amount: ss.Amount, Currency: ss.Currency, Metadata: ss.IntentMetadata, Status: "processing"}
	s.intents[pi.ID] = pi
	ss.Intent, ss.Status = pi.ID, "complete"
	if later {
		s.emit("checkout.session.completed", s.sessionJSON(ss))
		return nil
	}
	s.succeed(ss, pi)
	s.emit("checkout.session.completed", s.sessionJSON(ss))
	return nil
}

func (s *Server) succeed(ss *session, pi *intent) {
	c := &charge{ID: newID("ch_"), Intent: pi.ID, Currency: pi.Currency, Amount: pi.Amount, Metadata: pi.Metadata}
	s.charges[c.ID] = c
	pi.Charge, pi.Status, ss.PaymentStatus = c.ID, "succeeded", "paid"
}

// settle ends a payment on its way: it succeeds or fails.
func (s *Server) settle(ss *session, ok bool) error {
	pi := s.intents[ss.Intent]
	if pi == nil || pi.Status != "processing" {
		return fmt.Errorf("the session has no payment on its way")
	}
	if ok {
		s.succeed(ss, pi)
		s.emit("checkout.session.async_payment_succeeded", s.sessionJSON(ss))
		return nil
	}
	pi.Status = "requires_payment_method"
	s.emit("checkout.session.async_payment_failed", s.sessionJSON(ss))
	return nil
}

func (s *Server) expire(ss *session) error {
	if ss.Status != "open" {
		return fmt.Errorf("the session is %s", ss.Status)
	}
	ss.Status = "expired"
	s.emit("checkout.session.expired", s.sessionJSON(ss))
	return nil
}

// refund refunds amount (0: what is left) of a paid session's charge.
func (s *Server) refund(pi *intent, amount int64) (*charge, error) {
	c := s.charges[pi.Charge]
	if c == nil {
		return nil, fmt.Errorf("the payment has no charge")
	}
	left := c.Amount - c.Refunded
	if amount == 0 {
		amount = left
	}
	if amount <= 0 || amount > left {
		return nil, fmt.Errorf("refund of %d: %d is left to refund", amount, left)
	}
	c.Refunded += amount
	s.emit("charge.refunded", s.chargeJSON(c))
	return c, nil
}

// Test handles: each is the hosted page's or the dashboard's action.

func (s *Server) act(id string, fn func(*session) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		return fmt.Errorf("no session %s", id)
	}
	return fn(ss)
}

// Pay pays a session's page (the Pay button); Later the "Pay later"
// button; Settle ends that payment; Expire closes the page unpaid.
func (s *Server) Pay(id string) error {
	return s.act(id, func(ss *session) error { return s.pay(ss, false) })
}
func (s *Server) Later(id string) error {
	return s.act(id, func(ss *session) error { return s.pay(ss, true) })
}
func (s *Server) Settle(id string, ok bool) error {
	return s.act(id, func(ss *session) error { return s.settle(ss, ok) })
}
func (s *Server) Expire(id string) error { return s.act(id, s.expire) }

// Refund refunds amount (0: all that is left) of a session's payment.
func (s *Server) Refund(id string, amount int64) error {
	return s.act(id, func(ss *session) error {
		pi := s.intents[ss.Intent]
		if pi == nil {
			return fmt.Errorf("the session was not paid")
		}
		_, err := s.refund(pi, amount)
		return err
	})
}

// formInt reads an integer form field.
func formInt(f url.Values, k string) (int64, error) {
	return strconv.ParseInt(f.Get(k), 10, 64)
}
