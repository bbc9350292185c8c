package admin

import (
	"context"
	"testing"
)

func TestAgentsAdminAPI(t *testing.T) {
	svc, _, srv := setup(t)
	a, err := svc.CreateAccount(context.Background(), "org", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := "/accounts/" + a.ID

	// The organization allowlist: null, a list, [] (none).
	for _, tc := range []struct {
		desc, body string
		want       any
	}{
		{"a list", `{"allowed_models":["m-1","m-1"," m-2 "]}`, []any{"m-1", "m-2"}},
		{"none", `{"allowed_models":[]}`, []any{}},
		{"every model", `{"allowed_models":null}`, nil},
	} {
		t.Run("allowlist "+tc.desc, func(t *testing.T) {
			st, body := call(t, srv, "PATCH", base, tc.body)
			if st != 200 || !equalJSON(body["allowed_models"], tc.want) {
				t.Fatalf("%d %v", st, body)
			}
			_, body = call(t, srv, "GET", base, "")
			if !equalJSON(body["allowed_models"], tc.want) {
				t.Fatalf("GET after PATCH: %v", body["allowed_models"])
			}
		})
	}
	if st, _ := call(t, srv, "PATCH", base, `{"allowed_models":"m-1"}`); st != 400 {
		t.Fatalf("a string allowlist: %d", st)
	}

	// Agents: defaults, validation, update, soft delete.
	st, ag := call(t, srv, "POST", base+"/agents", `{"name":"Helpdesk","system_prompt":"Answer as IT.","model":"m-1"}`)
	if st != 201 || ag["object"] != "agent" || ag["published"] != true || ag["web_search"] != false ||
		ag["image_generation"] != false || ag["temperature"] != nil || !equalJSON(ag["knowledge_bases"], []any{}) {
		t.Fatalf("create: %d %v", st, ag)
	}
	id := ag["id"].(string)
	for _, bad := range []string{`{"model":"m"}`, `{"name":"x"}`, `{"name":"x","model":"m","temperature":2.5}`,
		`{"name":"x","model":"m","knowledge_bases":[""]}`, `{"name":"x","model":"m","extra":1}`} {
		if st, body := call(t, srv, "POST", base+"/agents", bad); st != 400 {
			t.Fatalf("create %s: %d %v", bad, st, body)
		}
	}
	if st, _ := call(t, srv, "POST", "/accounts/acct_nope/agents", `{"name":"x","model":"m"}`); st != 404 {
		t.Fatalf("an unknown account: %d", st)
	}
	st, ag = call(t, srv, "PATCH", "/agents/"+id, `{"temperature":0.3,"knowledge_bases":["kb-a"],"web_search":true,"published":false}`)
	if st != 200 || ag["temperature"] != 0.3 || ag["web_search"] != true || ag["published"] != false || ag["name"] != "Helpdesk" {
		t.Fatalf("patch: %d %v", st, ag)
	}
	if _, ag = call(t, srv, "PATCH", "/agents/"+id, `{"temperature":null}`); ag["temperature"] != nil {
		t.Fatalf("temperature null: %v", ag)
	}
	_, list := call(t, srv, "GET", base+"/agents", "")
	if data := list["data"].([]any); len(data) != 1 {
		t.Fatalf("list: %v", list)
	}

	// An agent key at once: kind agent, no expiry, its cap; GET /keys/{id}
	// shows spent and spend_cap.
	st, k := call(t, srv, "POST", "/agents/"+id+"/keys", `{"name":"bot","spend_cap":"12.5"}`)
	if st != 201 || k["kind"] != "agent" || k["agent_id"] != id || k["expires_at"] != nil || k["spend_cap"] != "12.5" || k["key"] == "" {
		t.Fatalf("issue: %d %v", st, k)
	}
	kid := k["id"].(string)
	_, k = call(t, srv, "GET", "/keys/"+kid, "")
	if k["spent"] != "0" || k["spend_cap"] != "12.5" || k["key"] != nil {
		t.Fatalf("GET key: %v", k)
	}
	if st, _ := call(t, srv, "PATCH", "/keys/"+kid, `{"expires_at":"2030-01-01T00:00:00Z"}`); st != 400 {
		t.Fatalf("an agent key given an expiry: %d", st)
	}
	if st, _ := call(t, srv, "PATCH", "/keys/"+kid, `{"kind":"console"}`); st != 400 {
		t.Fatalf("an agent key made a console key: %d", st)
	}
	if st, k = call(t, srv, "PATCH", "/keys/"+kid, `{"spend_cap":null}`); st != 200 || k["spend_cap"] != nil {
		t.Fatalf("cap removed: %d %v", st, k)
	}
	for _, bad := range []string{`{"name":"bot","spend_cap":"-1"}`, `{"spend_cap":"1"}`, `{"name":"bot","spend_cap":"x"}`} {
		if st, _ := call(t, srv, "POST", "/agents/"+id+"/keys", bad); st != 400 {
			t.Fatalf("issue %s: %d", bad, st)
		}
	}
	_, nk := call(t, srv, "POST", "/agents/"+id+"/keys", `{"name":"no cap"}`)
	if nk["spend_cap"] != nil {
		t.Fatalf("a key without a cap: %v", nk)
	}

	// Key requests: pending, approved once with a cap, rejected once.
	st, kr := call(t, srv, "POST", "/agents/"+id+"/key-requests", `{"requester":"ada@example.com","note":"for the help desk"}`)
	if st != 201 || kr["status"] != "pending" || kr["object"] != "key_request" || kr["key_id"] != nil {
		t.Fatalf("request: %d %v", st, kr)
	}
	r1 := kr["id"].(string)
	_, kr2 := call(t, srv, "POST", "/agents/"+id+"/key-requests", `{"requester":"bob"}`)
	r2 := kr2["id"].(string)
	if st, _ := call(t, srv, "POST", "/agents/"+id+"/key-requests", `{"note":"who?"}`); st != 400 {
		t.Fatalf("a request without requester: %d", st)
	}
	_, pend := call(t, srv, "GET", base+"/key-requests?status=pending", "")
	if data := pend["data"].([]any); len(data) != 2 {
		t.Fatalf("pending: %v", pend)
	}
	st, ap := call(t, srv, "POST", "/key-requests/"+r1+"/approve", `{"spend_cap":"5"}`)
	key, _ := ap["key"].(map[string]any)
	if st != 200 || ap["status"] != "approved" || key == nil || key["key"] == "" || key["spend_cap"] != "5" ||
		key["name"] != "ada@example.com" || ap["key_id"] != key["id"] || key["agent_id"] != id {
		t.Fatalf("approve: %d %v", st, ap)
	}
	if st, e := call(t, srv, "POST", "/key-requests/"+r1+"/approve", `{}`); st != 409 {
		t.Fatalf("approve twice: %d %v", st, e)
	}
	if st, rj := call(t, srv, "POST", "/key-requests/"+r2+"/reject", ""); st != 200 || rj["status"] != "rejected" {
		t.Fatalf("reject: %d %v", st, rj)
	}
	if st, _ := call(t, srv, "POST", "/key-requests/"+r2+"/approve", ""); st != 409 {
		t.Fatalf("approve a rejected request: %d", st)
	}
	if st, _ := call(t, srv, "POST", "/key-requests/kreq_nope/reject", ""); st != 404 {
		t.Fatalf("reject unknown: %d", st)
	}

	// Soft delete: shown with deleted_at, out of the list, no new keys.
	if st, _ := call(t, srv, "DELETE", "/agents/"+id, ""); st != 200 {
		t.Fatalf("delete: %d", st)
	}
	if _, ag = call(t, srv, "GET", "/agents/"+id, ""); ag["deleted_at"] == nil {
		t.Fatalf("deleted agent: %v", ag)
	}
	_, list = call(t, srv, "GET", base+"/agents", "")
	if data := list["data"].([]any); len(data) != 0 {
		t.Fatalf("list after delete: %v", list)
	}
	for _, c := range [][3]string{{"PATCH", "/agents/" + id, `{"name":"x"}`}, {"DELETE", "/agents/" + id, ""},
		{"POST", "/agents/" + id + "/keys", `{"name":"x"}`}, {"POST", "/agents/" + id + "/key-requests", `{"requester":"x"}`}} {
		if st, _ := call(t, srv, c[0], c[1], c[2]); st != 404 {
			t.Fatalf("%s %s on a deleted agent: %d", c[0], c[1], st)
		}
	}
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return a == b
}
