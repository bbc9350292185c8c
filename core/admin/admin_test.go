package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

func setup(t *testing.T) (*Service, store.Store, *httptest.Server) {
	t.Helper()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealer, _ := keys.NewSealer(make([]byte, 32))
	svc := NewService(st, sealer, time.Now, money.MustParse("121.32"))
	srv := httptest.NewServer(NewHandler(svc, st, "tok", hclog.NewNullLogger()))
	t.Cleanup(srv.Close)
	return svc, st, srv
}

func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+"/admin/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestHashOnlyKeyCannotBeRevealed(t *testing.T) {
	svc, st, srv := setup(t)
	a, err := svc.CreateAccount(context.Background(), "legacy", nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := keys.Generate()
	legacy := store.Key{ID: "key_legacy", AccountID: a.ID, Name: "early key", Prefix: keys.Display(raw),
		Hash: keys.Hash(raw), Enabled: true, Kind: store.KindConsole, CreatedAt: time.Now()}
	if err := st.CreateKey(context.Background(), legacy); err != nil {
		t.Fatal(err)
	}
	status, body := call(t, srv, "GET", "/keys/key_legacy/reveal", "")
	e, _ := body["error"].(map[string]any)
	if status != 400 || !strings.Contains(e["message"].(string), "hash-only") {
		t.Fatalf("%d %v", status, body)
	}
	if _, m := call(t, srv, "GET", "/keys/key_legacy", ""); m["revealable"] != false {
		t.Fatalf("key view %v", m)
	}
}

func TestAccountsAndKeys(t *testing.T) {
	_, _, srv := setup(t)
	cases := []struct {
		desc, method, path, body string
		status                   int
	}{
		{"no name", "POST", "/accounts", `{}`, 400},
		{"unknown field", "POST", "/accounts", `{"name":"a","nope":1}`, 400},
		{"zero credit", "POST", "/accounts", `{"name":"a","initial_credit":"0"}`, 201},
		{"bad status", "PATCH", "/accounts/acct_missing", `{"status":"gone"}`, 400},
		{"unknown account", "GET", "/accounts/acct_missing", ``, 404},
		{"key for unknown account", "POST", "/accounts/acct_missing/keys", `{"name":"k"}`, 404},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if status, body := call(t, srv, tc.method, tc.path, tc.body); status != tc.status {
				t.Fatalf("%d %v", status, body)
			}
		})
	}
	t.Run("negative credit is a correction", func(t *testing.T) {
		_, a := call(t, srv, "POST", "/accounts", `{"name":"b"}`)
		id := a["id"].(string)
		if a["balance"] != "121.32" {
			t.Fatalf("sign-up credit: %v", a)
		}
		status, w := call(t, srv, "POST", "/accounts/"+id+"/credits", `{"amount":"-21.32","note":"fix"}`)
		if status != 200 || w["balance"] != "100" {
			t.Fatalf("%d %v", status, w)
		}
	})
	t.Run("key create, patch allowlist, delete", func(t *testing.T) {
		_, a := call(t, srv, "POST", "/accounts", `{"name":"c"}`)
		id := a["id"].(string)
		status, k := call(t, srv, "POST", "/accounts/"+id+"/keys", `{"name":"k","allowed_models":[]}`)
		if status != 201 || !keys.WellFormed(k["key"].(string)) || k["allowed_models"] == nil {
			t.Fatalf("%d %v", status, k)
		}
		kid := k["id"].(string)
		if _, k := call(t, srv, "PATCH", "/keys/"+kid, `{"allowed_models":null}`); k["allowed_models"] != nil {
			t.Fatalf("null allowlist: %v", k)
		}
		if status, _ := call(t, srv, "DELETE", "/keys/"+kid, ""); status != 200 {
			t.Fatal(status)
		}
		if status, _ := call(t, srv, "GET", "/keys/"+kid, ""); status != 404 {
			t.Fatal(status)
		}
	})
	t.Run("wrong admin token", func(t *testing.T) {
		req, _ := http.NewRequest("GET", srv.URL+"/admin/v1/accounts", nil)
		req.Header.Set("Authorization", "Bearer nope")
		resp, _ := http.DefaultClient.Do(req)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatal(resp.StatusCode)
		}
	})
}

// A missing account or key is named, with the full path asked for.
func TestNotFoundNamesWhatIsMissing(t *testing.T) {
	_, _, srv := setup(t)
	tests := []struct {
		method, path, body, want string
	}{
		{"GET", "/accounts/acct_nope", "", `account "acct_nope" does not exist (GET /admin/v1/accounts/acct_nope)`},
		{"GET", "/accounts/acct_nope/keys", "", `account "acct_nope" does not exist (GET /admin/v1/accounts/acct_nope/keys)`},
		{"POST", "/accounts/acct_nope/keys", `{"name":"k"}`, `account "acct_nope" does not exist (POST /admin/v1/accounts/acct_nope/keys)`},
		{"POST", "/accounts/acct_nope/credits", `{"amount":"1"}`, `account "acct_nope" does not exist (POST /admin/v1/accounts/acct_nope/credits)`},
		{"DELETE", "/keys/key_nope", "", `key "key_nope" does not exist (DELETE /admin/v1/keys/key_nope)`},
		{"GET", "/keys/key_nope/reveal", "", `key "key_nope" does not exist (GET /admin/v1/keys/key_nope/reveal)`},
		{"GET", "/nope", "", `no admin route for GET /admin/v1/nope (the routes are listed in docs/reference.md)`},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, body := call(t, srv, tc.method, tc.path, tc.body)
			e, _ := body["error"].(map[string]any)
			if status != 404 || e["message"] != tc.want || e["code"] != "not_found" {
				t.Errorf("%d %v\nwant message %s", status, body, tc.want)
			}
		})
	}
}

// The sign-up credit is the operator's (accounts.signup_credit).
func TestSignupCreditIsConfig(t *testing.T) {
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sealer, _ := keys.NewSealer(make([]byte, 32))
	svc := NewService(st, sealer, time.Now, money.MustParse("5.5"))
	srv := httptest.NewServer(NewHandler(svc, st, "tok", hclog.NewNullLogger()))
	defer srv.Close()
	if _, a := call(t, srv, "POST", "/accounts", `{"name":"a"}`); a["balance"] != "5.5" {
		t.Errorf("sign-up credit: %v", a)
	}
	if _, a := call(t, srv, "POST", "/accounts", `{"name":"b","initial_credit":"0"}`); a["balance"] != "0" {
		t.Errorf("initial_credit wins: %v", a)
	}
}

// Amounts out of money's range are 400 with a message an operator can act
// on, and nothing is booked (issue 10).
func TestCreditsOutOfRange(t *testing.T) {
	_, _, srv := setup(t)
	for _, tc := range []struct{ desc, body, want string }{
		{"whole part fits, fraction overflows", `{"name":"a","initial_credit":"9223372036.9"}`, "out of range"},
		{"negative wrap", `{"name":"a","initial_credit":"-9223372036.999999999"}`, "out of range"},
		{"one quote", `{"name":"a","initial_credit":"5}`, "invalid JSON body"},
		{"exponent", `{"name":"a","initial_credit":1e3}`, "decimal string"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			status, body := call(t, srv, "POST", "/accounts", tc.body)
			e, _ := body["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if status != 400 || e["code"] != "invalid_request" || !strings.Contains(msg, tc.want) {
				t.Fatalf("%d %v", status, body)
			}
		})
	}
	status, a := call(t, srv, "POST", "/accounts", `{"name":"rich","initial_credit":"9223372000"}`)
	if status != 201 {
		t.Fatalf("%d %v", status, a)
	}
	id := a["id"].(string)
	for _, amount := range []string{`"9223372036.9"`, `"100"`, `"36.854775808"`} {
		status, body := call(t, srv, "POST", "/accounts/"+id+"/credits", `{"amount":`+amount+`}`)
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != 400 || e["code"] != "invalid_request" || !strings.Contains(msg, "9223372036.854775807") {
			t.Fatalf("credit %s: %d %v", amount, status, body)
		}
	}
	// Exactly to the maximum is fine; the balance never wrapped.
	status, w := call(t, srv, "POST", "/accounts/"+id+"/credits", `{"amount":"36.854775807"}`)
	if status != 200 || w["balance"] != "9223372036.854775807" {
		t.Fatalf("%d %v", status, w)
	}
	if _, a := call(t, srv, "GET", "/accounts/"+id, ""); a["balance"] != "9223372036.854775807" || a["available"] != "9223372036.854775807" {
		t.Fatalf("account %v", a)
	}
}

func TestPatchKeyClearsExpiry(t *testing.T) {
	var b keyBody
	if err := json.Unmarshal([]byte(`{"expires_at": null}`), &b); err != nil {
		t.Fatal(err)
	}
	s, err := b.spec()
	if err != nil || s.ExpiresAt == nil || *s.ExpiresAt != nil {
		t.Fatalf("expires_at null must clear the expiry: %+v %v", s.ExpiresAt, err)
	}
	b = keyBody{}
	_ = json.Unmarshal([]byte(`{"name": "x"}`), &b)
	if s, _ := b.spec(); s.ExpiresAt != nil {
		t.Fatal("an absent expires_at must leave the expiry alone")
	}
}
