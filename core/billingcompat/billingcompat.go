// Package billingcompat answers the OpenAI-compatible billing endpoints that
// third-party chat clients read to show a balance:
// GET /v1/dashboard/billing/subscription and GET /v1/dashboard/billing/usage.
//
// The numbers follow the new-api convention those clients expect: the
// subscription's limits are total_usd, the key's lifetime usage plus the
// account's available balance, so hard_limit_usd - total_usage/100 is what
// the key can still spend. Amounts are JSON numbers written from the
// fixed-point decimal form, never through a float.
package billingcompat

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/store"
)

// Handler serves the billing-compatibility endpoints.
type Handler struct {
	st  store.Store
	now func() time.Time
}

// New returns the handler; now is the clock (time.Now when nil).
func New(st store.Store, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{st: st, now: now}
}

// Serve handles GET /v1/dashboard/billing/subscription and
// GET /v1/dashboard/billing/usage for an authenticated key.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, key store.Key) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		e := apierr.Newf(apierr.InvalidRequest, "method %s is not allowed here; use GET", r.Method)
		e.Status = http.StatusMethodNotAllowed
		w.Header().Set("Allow", "GET, HEAD")
		apierr.Write(w, protocol.OpenAIChat, e)
		return
	}
	var err *apierr.Error
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/v1/dashboard/billing/subscription":
		err = h.subscription(w, r, key)
	case "/v1/dashboard/billing/usage":
		err = h.usage(w, r, key)
	default:
		err = apierr.New(apierr.NotFound, "unknown billing endpoint "+r.URL.Path)
	}
	if err != nil {
		apierr.Write(w, protocol.OpenAIChat, err)
	}
}

type subscriptionJSON struct {
	Object             string      `json:"object"`
	HasPaymentMethod   bool        `json:"has_payment_method"`
	SoftLimitUSD       json.Number `json:"soft_limit_usd"`
	HardLimitUSD       json.Number `json:"hard_limit_usd"`
	SystemHardLimitUSD json.Number `json:"system_hard_limit_usd"`
	AccessUntil        int64       `json:"access_until"`
}

// subscription: the limits are total_usd = the key's usage + the account's
// available balance (floor 0); access_until is the key's expiry in unix
// seconds, 0 when it never expires. has_payment_method is true: top-ups are
// always possible.
func (h *Handler) subscription(w http.ResponseWriter, r *http.Request, key store.Key) *apierr.Error {
	ctx := r.Context()
	used, err := h.st.KeyUsage(ctx, key.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return apierr.Internal(err)
	}
	wal, err := h.st.GetWallet(ctx, key.AccountID)
	if err != nil {
		return apierr.Internal(err)
	}
	avail := wal.Available()
	if avail < 0 {
		avail = 0
	}
	total := json.Number(money.TotalOf(used, avail).String())
	out := subscriptionJSON{
		Object:             "billing_subscription",
		HasPaymentMethod:   true,
		SoftLimitUSD:       total,
		HardLimitUSD:       total,
		SystemHardLimitUSD: total,
	}
	if key.ExpiresAt != nil {
		out.AccessUntil = key.ExpiresAt.Unix()
	}
	writeJSON(w, out)
	return nil
}

type usageJSON struct {
	Object     string      `json:"object"`
	TotalUsage json.Number `json:"total_usage"`
}

// defaultUsageDays is the range when start_date is omitted (OpenAI's
// maximum range of this endpoint).
const defaultUsageDays = 100

// usage sums the calling key's charges over [start_date, end_date) (UTC
// days, end exclusive), in hundredths of a credit as OpenAI's cents.
// An omitted end_date is tomorrow (today included); an omitted start_date
// is 100 days before end_date.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request, key store.Key) *apierr.Error {
	q := r.URL.Query()
	end := h.now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	if v := q.Get("end_date"); v != "" {
		t, err := parseDate(v)
		if err != nil {
			return apierr.Newf(apierr.InvalidRequest, "end_date: %s", err.Error())
		}
		end = t
	}
	start := end.AddDate(0, 0, -defaultUsageDays)
	if v := q.Get("start_date"); v != "" {
		t, err := parseDate(v)
		if err != nil {
			return apierr.Newf(apierr.InvalidRequest, "start_date: %s", err.Error())
		}
		start = t
	}
	if end.Before(start) {
		return apierr.New(apierr.InvalidRequest, "end_date is before start_date")
	}
	var sum money.Total
	lq := store.LogQuery{AccountID: key.AccountID, KeyID: key.ID, From: start, To: end, Asc: true}
	err := store.ScanTotals(r.Context(), h.st, lq, func(row store.LogTotal) bool {
		sum.Add(row.Cost)
		return true
	})
	if err != nil {
		return apierr.Internal(err)
	}
	writeJSON(w, usageJSON{Object: "list", TotalUsage: json.Number(hundredths(sum))})
	return nil
}

// hundredths renders t credits as hundredths of a credit, exactly: the
// decimal point of t's form moves two places right (no multiplication, so
// nothing to overflow).
func hundredths(t money.Total) string {
	s := t.String()
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac += "00"
	whole = strings.TrimLeft(whole+frac[:2], "0")
	frac = strings.TrimRight(frac[2:], "0")
	if whole == "" {
		whole = "0"
	}
	if frac != "" {
		whole += "." + frac
	}
	return sign + whole
}

func parseDate(s string) (time.Time, error) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, errors.New("expected YYYY-MM-DD, got " + s)
	}
	return t, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
