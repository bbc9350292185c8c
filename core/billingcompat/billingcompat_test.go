package billingcompat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

var now = time.Date(2025, 6, 18, 12, 0, 0, 0, time.UTC)

// fixture is account a1 on the real Badger store (in memory): four
// settled calls (k1 three, k2 one), then balance 100 with 10.5 held.
func fixture(t *testing.T) (*Handler, store.Key) {
	t.Helper()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	day := func(d int) time.Time { return time.Date(2025, 6, d, 10, 0, 0, 0, time.UTC) }
	calls := []struct {
		key  string
		at   time.Time
		cost string
	}{
		{"k1", day(1), "1.25"},
		{"k1", day(10), "0.000000001"},
		{"k1", day(18), "2"},
		{"k2", day(10), "7"},
	}
	// The credit covers the calls, so 100 is left after them.
	if err := st.CreateAccount(ctx, store.Account{ID: "a1", Name: "a1", Status: store.AccountActive, CreatedAt: day(1)},
		money.MustParse("110.250000001"), "sign-up"); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		cost := money.MustParse(c.cost)
		hold := store.Hold{ID: "h" + strconv.Itoa(i), AccountID: "a1", KeyID: c.key, Model: "m", Amount: cost, SubmittedAt: c.at}
		if _, err := st.PlaceHold(ctx, hold); err != nil {
			t.Fatal(err)
		}
		row := &store.LogRow{AccountID: "a1", KeyID: c.key, Model: "m", Status: store.StatusSuccess, CreatedAt: c.at, SubmittedAt: c.at, Cost: cost, RequestID: hold.ID}
		if err := st.Settle(ctx, store.Settlement{HoldID: hold.ID, Charge: cost, Row: row}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.PlaceHold(ctx, store.Hold{ID: "open", AccountID: "a1", KeyID: "k2", Amount: money.MustParse("10.5"), SubmittedAt: now}); err != nil {
		t.Fatal(err)
	}
	if w, err := st.GetWallet(ctx, "a1"); err != nil || w.Balance != money.MustParse("100") || w.Held != money.MustParse("10.5") {
		t.Fatalf("fixture wallet %+v %v", w, err)
	}
	exp := time.Unix(1_900_000_000, 0)
	return New(st, func() time.Time { return now }), store.Key{ID: "k1", AccountID: "a1", ExpiresAt: &exp}
}

func serve(h *Handler, key store.Key, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.Serve(w, httptest.NewRequest(http.MethodGet, target, nil), key)
	return w
}

func TestSubscription(t *testing.T) {
	h, key := fixture(t)
	noExpiry := key
	noExpiry.ExpiresAt = nil
	tests := []struct {
		desc string
		key  store.Key
		want string
	}{
		// total = key usage 3.250000001 + available 89.5
		{desc: "key with expiry", key: key, want: `{"object":"billing_subscription","has_payment_method":true,"soft_limit_usd":92.750000001,"hard_limit_usd":92.750000001,"system_hard_limit_usd":92.750000001,"access_until":1900000000}`},
		{desc: "key without expiry", key: noExpiry, want: `{"object":"billing_subscription","has_payment_method":true,"soft_limit_usd":92.750000001,"hard_limit_usd":92.750000001,"system_hard_limit_usd":92.750000001,"access_until":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w := serve(h, tc.key, "/v1/dashboard/billing/subscription")
			if w.Code != 200 || strings.TrimSpace(w.Body.String()) != tc.want {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
	t.Run("negative available balance counts as 0", func(t *testing.T) {
		// An admin correction takes the balance below the open hold.
		ctx := context.Background()
		if _, err := h.st.Credit(ctx, "a1", money.MustParse("-110"), "correction"); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = h.st.Credit(ctx, "a1", money.MustParse("110"), "undo") }()
		w := serve(h, key, "/v1/dashboard/billing/subscription")
		if !strings.Contains(w.Body.String(), `"hard_limit_usd":3.250000001`) {
			t.Fatalf("%s", w.Body)
		}
	})
}

func TestUsage(t *testing.T) {
	h, key := fixture(t)
	tests := []struct {
		desc   string
		query  string
		status int
		want   string
	}{
		{desc: "whole month, end exclusive", query: "start_date=2025-06-01&end_date=2025-06-18", status: 200, want: "125.0000001"},
		{desc: "end_date includes nothing of its own day", query: "start_date=2025-06-18&end_date=2025-06-18", status: 200, want: "0"},
		{desc: "defaults end tomorrow", query: "", status: 200, want: "325.0000001"},
		{desc: "only this key", query: "start_date=2025-06-10&end_date=2025-06-11", status: 200, want: "0.0000001"},
		{desc: "bad start_date", query: "start_date=June&end_date=2025-06-18", status: 400},
		{desc: "bad end_date", query: "start_date=2025-06-01&end_date=18", status: 400},
		{desc: "end before start", query: "start_date=2025-06-10&end_date=2025-06-01", status: 400},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			w := serve(h, key, "/v1/dashboard/billing/usage?"+tc.query)
			if w.Code != tc.status {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			if tc.status != 200 {
				if !strings.Contains(w.Body.String(), `"code":"invalid_request"`) {
					t.Fatalf("%s", w.Body)
				}
				return
			}
			var got struct {
				Object     string      `json:"object"`
				TotalUsage json.Number `json:"total_usage"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Object != "list" || string(got.TotalUsage) != tc.want {
				t.Fatalf("%s", w.Body)
			}
		})
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	h, key := fixture(t)
	if w := serve(h, key, "/v1/dashboard/billing/credit_grants"); w.Code != 404 {
		t.Fatalf("%d", w.Code)
	}
	w := httptest.NewRecorder()
	h.Serve(w, httptest.NewRequest(http.MethodPost, "/v1/dashboard/billing/usage", nil), key)
	if w.Code != 405 {
		t.Fatalf("%d", w.Code)
	}
}

func TestHundredthsOfASumPastMax(t *testing.T) {
	if got := hundredths(money.TotalOf(money.Max, money.Max)); got != "1844674407370.9551614" {
		t.Fatalf("got %s", got)
	}
}

func TestHundredths(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"0", "0"}, {"1", "100"}, {"0.015", "1.5"}, {"-2.5", "-250"}, {"0.000000001", "0.0000001"},
		{"0.01", "1"}, {"-0.001", "-0.1"}, {"123.456789", "12345.6789"},
		// Past money.Max/100 a multiplication by 100 would overflow.
		{"9223372036.854775807", "922337203685.4775807"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := hundredths(money.TotalOf(money.MustParse(tc.in))); got != tc.want {
				t.Fatalf("hundredths(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}
