package billingcompat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// memStore implements the three store methods the billing endpoints read,
// with the interface's semantics; the rest stays on the nil embedded interface.
type memStore struct {
	store.Store
	wallet store.Wallet
	rows   []store.LogRow
}

func (m *memStore) GetWallet(_ context.Context, id string) (store.Wallet, error) {
	if id != m.wallet.AccountID {
		return store.Wallet{}, store.ErrNotFound
	}
	return m.wallet, nil
}

func (m *memStore) KeyUsage(_ context.Context, keyID string) (money.Nano, error) {
	var n money.Nano
	for _, r := range m.rows {
		if r.KeyID == keyID {
			n += r.Cost
		}
	}
	return n, nil
}

func (m *memStore) ScanLogs(_ context.Context, q store.LogQuery, fn func(store.LogRow) bool) error {
	for _, r := range m.rows {
		if r.AccountID != q.AccountID || (q.KeyID != "" && r.KeyID != q.KeyID) ||
			r.CreatedAt.Before(q.From) || !r.CreatedAt.Before(q.To) {
			continue
		}
		if !fn(r) {
			break
		}
	}
	return nil
}

var now = time.Date(2025, 6, 18, 12, 0, 0, 0, time.UTC)

func fixture() (*Handler, store.Key) {
	day := func(d int) time.Time { return time.Date(2025, 6, d, 10, 0, 0, 0, time.UTC) }
	st := &memStore{
		wallet: store.Wallet{AccountID: "a1", Balance: money.MustParse("100"), Held: money.MustParse("10.5")},
		rows: []store.LogRow{
			{AccountID: "a1", KeyID: "k1", CreatedAt: day(1), Cost: money.MustParse("1.25")},
			{AccountID: "a1", KeyID: "k1", CreatedAt: day(10), Cost: money.MustParse("0.000000001")},
			{AccountID: "a1", KeyID: "k1", CreatedAt: day(18), Cost: money.MustParse("2")},
			{AccountID: "a1", KeyID: "k2", CreatedAt: day(10), Cost: money.MustParse("7")},
		},
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
	h, key := fixture()
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
		h.st.(*memStore).wallet.Held = money.MustParse("150")
		defer func() { h.st.(*memStore).wallet.Held = money.MustParse("10.5") }()
		w := serve(h, key, "/v1/dashboard/billing/subscription")
		if !strings.Contains(w.Body.String(), `"hard_limit_usd":3.250000001`) {
			t.Fatalf("%s", w.Body)
		}
	})
}

func TestUsage(t *testing.T) {
	h, key := fixture()
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
	h, key := fixture()
	if w := serve(h, key, "/v1/dashboard/billing/credit_grants"); w.Code != 404 {
		t.Fatalf("%d", w.Code)
	}
	w := httptest.NewRecorder()
	h.Serve(w, httptest.NewRequest(http.MethodPost, "/v1/dashboard/billing/usage", nil), key)
	if w.Code != 405 {
		t.Fatalf("%d", w.Code)
	}
}

func TestHundredths(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"0", "0"}, {"1", "100"}, {"0.015", "1.5"}, {"-2.5", "-250"}, {"0.000000001", "0.0000001"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := hundredths(money.MustParse(tc.in)); got != tc.want {
				t.Fatalf("hundredths(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}
