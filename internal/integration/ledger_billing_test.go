package integration

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// TestBillingCompat reads /v1/dashboard/billing/subscription and /usage
// after a few real calls and checks them against the wallet and the rows.
func TestBillingCompat(t *testing.T) {
	g, acct, _ := startDefault(t)
	expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	_, key := g.Key(acct, map[string]any{"expires_at": expires.Format(time.RFC3339)})
	_, other := g.Key(acct, nil)
	for _, p := range []string{"one", "two words", "three words here", "fail [sim:error=500]"} {
		do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", p, ""))
	}
	do(t, "POST", g.URL+"/v1/chat/completions", bearer(other), chatBody("sim-chat", "the other key spends too", ""))

	var used money.Nano
	for _, r := range logsOf(t, g, key) {
		used += checkCost(t, r) // each exactly what its usage costs
	}
	if used <= 0 {
		t.Fatal("no usage recorded")
	}
	bal, held := g.Balance(acct)
	avail := money.MustParse(bal) - money.MustParse(held)
	num := func(v json.Number) money.Nano {
		t.Helper()
		n, err := money.Parse(v.String())
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		return n
	}

	t.Run("subscription", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/v1/dashboard/billing/subscription", bearer(key), "")
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		var s struct {
			Object             string      `json:"object"`
			HasPaymentMethod   *bool       `json:"has_payment_method"`
			SoftLimitUSD       json.Number `json:"soft_limit_usd"`
			HardLimitUSD       json.Number `json:"hard_limit_usd"`
			SystemHardLimitUSD json.Number `json:"system_hard_limit_usd"`
			AccessUntil        json.Number `json:"access_until"`
		}
		if err := json.Unmarshal(c.Body, &s); err != nil {
			t.Fatal(err)
		}
		want := used + avail
		if s.Object != "billing_subscription" || s.HasPaymentMethod == nil ||
			num(s.HardLimitUSD) != want || num(s.SoftLimitUSD) != want || num(s.SystemHardLimitUSD) != want {
			t.Fatalf("want limits %s (used %s + available %s): %s", want, used, avail, c.Body)
		}
		if s.AccessUntil.String() != idStr(uint64(expires.Unix())) {
			t.Fatalf("access_until %s, want %d", s.AccessUntil, expires.Unix())
		}
		var o struct {
			AccessUntil json.Number `json:"access_until"`
		}
		_ = json.Unmarshal(do(t, "GET", g.URL+"/v1/dashboard/billing/subscription", bearer(other), "").Body, &o)
		if o.AccessUntil.String() != "0" {
			t.Fatalf("key without expiry: access_until %s", o.AccessUntil)
		}
	})

	t.Run("usage", func(t *testing.T) {
		today := time.Now().UTC().Format("2006-01-02")
		tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
		tests := []struct {
			desc, query string
			want        money.Nano
		}{
			{"today through tomorrow (exclusive)", "start_date=" + today + "&end_date=" + tomorrow, used * 100},
			{"end_date is exclusive", "start_date=" + today + "&end_date=" + today, 0},
			{"defaults include today", "", used * 100},
			{"a past window", "start_date=2020-01-01&end_date=2020-02-01", 0},
		}
		for _, tc := range tests {
			t.Run(tc.desc, func(t *testing.T) {
				c := do(t, "GET", g.URL+"/v1/dashboard/billing/usage?"+tc.query, bearer(key), "")
				var u struct {
					Object     string      `json:"object"`
					TotalUsage json.Number `json:"total_usage"`
				}
				if err := json.Unmarshal(c.Body, &u); err != nil || c.Status != 200 || u.Object != "list" {
					t.Fatalf("%d %s", c.Status, c.Body)
				}
				if got := num(u.TotalUsage); got != tc.want {
					t.Fatalf("total_usage %s, want %s hundredths", u.TotalUsage, tc.want)
				}
			})
		}
		for _, bad := range []string{"start_date=yesterday", "start_date=" + tomorrow + "&end_date=" + today} {
			wantErr(t, do(t, "GET", g.URL+"/v1/dashboard/billing/usage?"+bad, bearer(key), ""), 400, "invalid_request", "invalid_request_error")
		}
	})
}
