package stripesim

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/checkout/sessions", s.api(s.createSession))
	m.HandleFunc("GET /v1/checkout/sessions/{id}", s.api(s.getSession))
	m.HandleFunc("POST /v1/checkout/sessions/{id}/expire", s.api(s.expireSession))
	m.HandleFunc("GET /v1/payment_intents/{id}", s.api(s.getIntent))
	m.HandleFunc("POST /v1/refunds", s.api(s.createRefund))
	m.HandleFunc("GET /{$}", s.dashboard)
	m.HandleFunc("POST /faults", s.setFaults)
	m.HandleFunc("POST /release", s.release)
	m.HandleFunc("POST /events/{id}/resend", s.resend)
	m.HandleFunc("GET /pay/{id}", s.payPage)
	m.HandleFunc("POST /pay/{id}", s.payAction)
	m.HandleFunc("POST /sessions/{id}/{action}", s.sessionAction)
	m.HandleFunc("GET /receipts/{id}", s.receipt)
	s.mux = m
}

// ServeHTTP serves the API, the hosted pages and the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// apiError is Stripe's error body.
type apiError struct {
	status           int
	typ, code, param string
	message          string
}

func (e *apiError) Error() string { return e.message }

func notFound(kind, id string) *apiError {
	return &apiError{status: 404, typ: "invalid_request_error", code: "resource_missing", param: "id",
		message: fmt.Sprintf("No such %s: '%s'", kind, id)}
}

func invalid(param, format string, a ...any) *apiError {
	return &apiError{status: 400, typ: "invalid_request_error", code: "parameter_invalid", param: param, message: fmt.Sprintf(format, a...)}
}

// api wraps an API call: the secret key in Authorization, form bodies,
// Idempotency-Key on creates, StallAPI on reads, Stripe's error body.
func (s *Server) api(h func(r *http.Request) (any, *apiError)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", newID("req_"))
		w.Header().Set("Stripe-Version", APIVersion)
		key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key == "" {
			if u, _, ok := r.BasicAuth(); ok {
				key = u
			}
		}
		if key == "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.o.SecretKey)) != 1 {
			writeErr(w, &apiError{status: 401, typ: "invalid_request_error", message: "Invalid API Key provided: " + mask(key)})
			return
		}
		if r.Method == http.MethodGet {
			s.mu.Lock()
			wait := s.unstall
			s.mu.Unlock()
			select {
			case <-wait:
			case <-r.Context().Done():
				return
			}
		}
		if err := r.ParseForm(); err != nil {
			writeErr(w, invalid("", "the body is not a form: %v", err))
			return
		}
		idem := r.Header.Get("Idempotency-Key")
		if r.Method == http.MethodPost && idem != "" {
			s.mu.Lock()
			prev, ok := s.idem[r.URL.Path+"\x00"+idem]
			s.mu.Unlock()
			if ok {
				w.Header().Set("Idempotent-Replayed", "true")
				_, _ = w.Write(prev)
				return
			}
		}
		v, aerr := h(r)
		if aerr != nil {
			writeErr(w, aerr)
			return
		}
		b, _ := json.Marshal(v)
		if r.Method == http.MethodPost && idem != "" {
			s.mu.Lock()
			s.idem[r.URL.Path+"\x00"+idem] = b
			s.mu.Unlock()
		}
		_, _ = w.Write(b)
	}
}

func mask(k string) string {
	if len(k) <= 8 {
		return "***"
	}
	return k[:7] + "***" + k[len(k)-4:]
}

func writeErr(w http.ResponseWriter, e *apiError) {
	w.WriteHeader(e.status)
	body := map[string]any{"type": e.typ, "message": e.message}
	if e.code != "" {
		body["code"] = e.code
	}
	if e.param != "" {
		body["param"] = e.param
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": body})
}

// metadata reads prefix[key]=value fields.
func metadata(f url.Values, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range f {
		if rest, ok := strings.CutPrefix(k, prefix+"["); ok && strings.HasSuffix(rest, "]") && len(v) > 0 {
			out[strings.TrimSuffix(rest, "]")] = v[0]
		}
	}
	return out
}

func (s *Server) createSession(r *http.Request) (any, *apiError) {
	f := r.PostForm
	if f.Get("mode") != "payment" {
		return nil, invalid("mode", "only mode=payment is simulated")
	}
	for _, k := range []string{"success_url", "cancel_url"} {
		if u, err := url.Parse(f.Get(k)); err != nil || !u.IsAbs() {
			return nil, invalid(k, "Not a valid URL")
		}
	}
	if f.Get("line_items[1][quantity]") != "" {
		return nil, invalid("line_items", "one line item is simulated")
	}
	qty, err := formInt(f, "line_items[0][quantity]")
	if err != nil || qty < 1 {
		return nil, invalid("line_items[0][quantity]", "Invalid integer: %q", f.Get("line_items[0][quantity]"))
	}
	unit, err := formInt(f, "line_items[0][price_data][unit_amount]")
	if err != nil || unit < 0 {
		return nil, invalid("line_items[0][price_data][unit_amount]", "Invalid integer: %q", f.Get("line_items[0][price_data][unit_amount]"))
	}
	cur := strings.ToLower(f.Get("line_items[0][price_data][currency]"))
	if len(cur) != 3 {
		return nil, invalid("line_items[0][price_data][currency]", "Invalid currency: %q", cur)
	}
	if unit*qty > 99_999_999 {
		return nil, invalid("line_items[0][price_data][unit_amount]", "Amount must be no more than 99999999")
	}
	now := s.o.Now()
	ss := &session{
		ID: newID("cs_test_"), ClientRef: f.Get("client_reference_id"), Currency: cur, Email: f.Get("customer_email"),
		Success: strings.ReplaceAll(f.Get("success_url"), "{CHECKOUT_SESSION_ID}", ""), Cancel: f.Get("cancel_url"),
		Name: f.Get("line_items[0][price_data][product_data][name]"), Status: "open", PaymentStatus: "unpaid",
		Amount: unit * qty, Created: now.Unix(), Expires: now.Add(24 * time.Hour).Unix(),
		Metadata: metadata(f, "metadata"), IntentMetadata: metadata(f, "payment_intent_data[metadata]"),
	}
	if e := f.Get("expires_at"); e != "" {
		if ss.Expires, err = formInt(f, "expires_at"); err != nil {
			return nil, invalid("expires_at", "Invalid integer: %q", e)
		}
	}
	ss.Success = strings.ReplaceAll(f.Get("success_url"), "{CHECKOUT_SESSION_ID}", ss.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[ss.ID] = ss
	s.order = append(s.order, ss.ID)
	return s.sessionJSON(ss), nil
}

func (s *Server) getSession(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[r.PathValue("id")]
	if ss == nil {
		return nil, notFound("checkout.session", r.PathValue("id"))
	}
	return s.sessionJSON(ss), nil
}

func (s *Server) expireSession(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[r.PathValue("id")]
	if ss == nil {
		return nil, notFound("checkout.session", r.PathValue("id"))
	}
	if err := s.expire(ss); err != nil {
		return nil, invalid("", "Only Checkout Sessions with a status of 'open' can be expired (%v)", err)
	}
	return s.sessionJSON(ss), nil
}

func (s *Server) getIntent(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi := s.intents[r.PathValue("id")]
	if pi == nil {
		return nil, notFound("payment_intent", r.PathValue("id"))
	}
	expand := false
	for _, e := range r.Form["expand[]"] {
		expand = expand || e == "latest_charge"
	}
	for k, v := range r.Form {
		if strings.HasPrefix(k, "expand[") && len(v) > 0 && v[0] == "latest_charge" {
			expand = true
		}
	}
	return s.intentJSON(pi, expand), nil
}

func (s *Server) createRefund(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := r.PostForm
	pi := s.intents[f.Get("payment_intent")]
	if pi == nil {
		return nil, notFound("payment_intent", f.Get("payment_intent"))
	}
	var amount int64
	if a := f.Get("amount"); a != "" {
		var err error
		if amount, err = formInt(f, "amount"); err != nil {
			return nil, invalid("amount", "Invalid integer: %q", a)
		}
	}
	c, err := s.refund(pi, amount)
	if err != nil {
		return nil, invalid("amount", "%v", err)
	}
	if amount == 0 {
		amount = c.Refunded
	}
	return map[string]any{"id": newID("re_"), "object": "refund", "amount": amount, "charge": c.ID,
		"currency": c.Currency, "payment_intent": pi.ID, "status": "succeeded"}, nil
}
