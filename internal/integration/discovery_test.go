package integration

import (
	"encoding/json"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

func modelIDs(t *testing.T, c call, field string) []string {
	t.Helper()
	var out map[string]json.RawMessage
	var list []map[string]any
	if err := json.Unmarshal(c.Body, &out); err != nil {
		t.Fatalf("%s", c.Body)
	}
	if err := json.Unmarshal(out[field], &list); err != nil {
		t.Fatalf("%s: %v", c.Body, err)
	}
	var ids []string
	for _, m := range list {
		ids = append(ids, m["id"].(string))
	}
	return ids
}

func TestAllowlist(t *testing.T) {
	g, acct, _ := startDefault(t)
	chat := g.URL + "/v1/chat/completions"

	t.Run("empty allowlist denies every model", func(t *testing.T) {
		_, k := g.Key(acct, map[string]any{"allowed_models": []string{}})
		c := do(t, "POST", chat, bearer(k), chatBody("sim-chat", "hi", ""))
		if code, typ, _ := c.errorOf(t); c.Status != 400 || code != "model_not_allowed" || typ != "invalid_request_error" {
			t.Fatalf("got %d %s", c.Status, c.Body)
		}
		if ids := modelIDs(t, do(t, "GET", g.URL+"/v1/models", bearer(k), ""), "data"); len(ids) != 0 {
			t.Fatalf("models listed: %v", ids)
		}
	})
	t.Run("allowlist admits only its models", func(t *testing.T) {
		_, k := g.Key(acct, map[string]any{"allowed_models": []string{"sim-chat"}})
		if c := do(t, "POST", chat, bearer(k), chatBody("sim-chat", "hi", "")); c.Status != 200 {
			t.Fatalf("allowed model: %d %s", c.Status, c.Body)
		}
		c := do(t, "POST", chat, bearer(k), chatBody("gpt-4o-mini", "hi", ""))
		if code, _, _ := c.errorOf(t); c.Status != 400 || code != "model_not_allowed" {
			t.Fatalf("other model: %d %s", c.Status, c.Body)
		}
		if ids := modelIDs(t, do(t, "GET", g.URL+"/v1/models", bearer(k), ""), "data"); len(ids) != 1 || ids[0] != "sim-chat" {
			t.Fatalf("models: %v", ids)
		}
		if ids := modelIDs(t, do(t, "GET", g.URL+"/v1/catalog", bearer(k), ""), "models"); len(ids) != 1 || ids[0] != "sim-chat" {
			t.Fatalf("catalog: %v", ids)
		}
	})
	t.Run("unknown model is model_not_found even with an allowlist", func(t *testing.T) {
		_, k := g.Key(acct, map[string]any{"allowed_models": []string{"sim-chat"}})
		c := do(t, "POST", chat, bearer(k), chatBody("no-such-model", "hi", ""))
		if code, _, _ := c.errorOf(t); c.Status != 400 || code != "model_not_found" {
			t.Fatalf("got %d %s", c.Status, c.Body)
		}
	})
	t.Run("null allowlist admits every model", func(t *testing.T) {
		_, k := g.Key(acct, map[string]any{"allowed_models": nil})
		ids := modelIDs(t, do(t, "GET", g.URL+"/v1/models", bearer(k), ""), "data")
		if len(ids) < 3 {
			t.Fatalf("models: %v", ids)
		}
	})
}

func TestDiscoveryEndpoints(t *testing.T) {
	g, _, key := startDefault(t)

	t.Run("models list shape", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/v1/models", bearer(key), "")
		var out struct {
			Object string
			Data   []struct {
				ID, Object string
				OwnedBy    string `json:"owned_by"`
				Created    *int64
			}
		}
		if err := json.Unmarshal(c.Body, &out); err != nil || out.Object != "list" || len(out.Data) == 0 {
			t.Fatalf("%s", c.Body)
		}
		for _, m := range out.Data {
			if m.Object != "model" || m.Created == nil || *m.Created != 0 {
				t.Fatalf("entry %+v", m)
			}
		}
	})
	t.Run("balance fields", func(t *testing.T) {
		m := do(t, "GET", g.URL+"/v1/key/balance", bearer(key), "").json(t)
		if m["object"] != "key.balance" || m["remaining_usd"] != "121.32" || m["used_usd"] != "0" ||
			m["total_usd"] != "121.32" || m["expires_at"] != nil {
			t.Fatalf("balance %v", m)
		}
	})
	t.Run("catalog", func(t *testing.T) {
		m := do(t, "GET", g.URL+"/v1/catalog", bearer(key), "").json(t)
		if m["object"] != "catalog" || m["schema_version"] != "1.0" || m["currency"] != "points" {
			t.Fatalf("catalog %v", m)
		}
		if _, ok := m["aliases"].(map[string]any); !ok {
			t.Fatalf("aliases missing: %v", m)
		}
	})
	t.Run("public models need no key", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/api/v1/models/public", nil, "")
		var out struct{ Data []map[string]any }
		if err := json.Unmarshal(c.Body, &out); c.Status != 200 || err != nil || len(out.Data) == 0 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if _, ok := out.Data[0]["callable"].(bool); !ok || out.Data[0]["endpoint_type"] == nil {
			t.Fatalf("entry %v", out.Data[0])
		}
	})
	t.Run("embeddings are withdrawn", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/embeddings", bearer(key), `{"model":"text-embedding-3-small","input":"x"}`)
		if code, typ, _ := c.errorOf(t); c.Status != 404 || code != "model_not_found" || typ != "invalid_request_error" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("every response carries x-gateway-trace", func(t *testing.T) {
		for _, c := range []call{
			do(t, "GET", g.URL+"/v1/models", bearer(key), ""),
			do(t, "GET", g.URL+"/v1/nowhere", bearer(key), ""),
			do(t, "POST", g.URL+"/v1/chat/completions", nil, "{}"),
			do(t, "GET", g.URL+"/api/v1/models/public", nil, ""),
		} {
			if c.Header.Get("x-gateway-trace") == "" {
				t.Fatalf("missing trace on %d %s", c.Status, c.Body)
			}
		}
	})
}

func TestErrorShapes(t *testing.T) {
	g := startGateway(t, testgw.Options{Config: `
server {
  allow_private_urls = true
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["chat-only"]
}
model "chat-only" {
  owned_by = "sim"
  price {
    input  = "1"
    output = "2"
  }
}
model "orphan" {
  owned_by = "sim"
  price {
    input  = "1"
    output = "2"
  }
}
model "pictures" {
  owned_by = "sim"
  family   = "image"
  price {
    per_image = "0.04"
  }
}
`})
	acct := g.Account("")
	_, key := g.Key(acct, nil)
	msgHeaders := map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"}

	t.Run("completions-style unknown model", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("nope", "hi", ""))
		if code, typ, _ := c.errorOf(t); c.Status != 400 || code != "model_not_found" || typ != "invalid_request_error" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("messages-style unknown model", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/messages", msgHeaders, `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
		m := c.json(t)
		e, _ := m["error"].(map[string]any)
		if c.Status != 400 || m["type"] != "error" || e["type"] != "not_found_error" || e["message"] == "" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if _, has := e["code"]; has {
			t.Fatalf("messages-style error has a string code: %s", c.Body)
		}
	})
	t.Run("generate-content unknown model", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1beta/models/nope:generateContent", map[string]string{"x-goog-api-key": key},
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
		m := c.json(t)
		e, _ := m["error"].(map[string]any)
		if c.Status != 400 || e["status"] != "NOT_FOUND" || e["code"] != float64(400) {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("model without a channel is 503", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("orphan", "hi", ""))
		if code, typ, _ := c.errorOf(t); c.Status != 503 || code != "no_channel_available" || typ != "server_error" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("image model on chat is 503", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("pictures", "hi", ""))
		if code, _, _ := c.errorOf(t); c.Status != 503 || code != "no_channel_available" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("no channel on the called protocol is 503 in that protocol's shape", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/messages", msgHeaders, `{"model":"chat-only","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
		m := c.json(t)
		e, _ := m["error"].(map[string]any)
		if c.Status != 503 || e["type"] != "overloaded_error" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("malformed body is invalid_request", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), `{"model":`)
		if code, _, _ := c.errorOf(t); c.Status != 400 || code != "invalid_request" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("malformed Idempotency-Key", func(t *testing.T) {
		h := bearer(key)
		h["Idempotency-Key"] = "has space"
		c := do(t, "POST", g.URL+"/v1/chat/completions", h, chatBody("chat-only", "hi", ""))
		if code, _, _ := c.errorOf(t); c.Status != 400 || code != "invalid_idempotency_key" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})
	t.Run("rejected calls are logged at cost 0", func(t *testing.T) {
		for _, r := range logsOf(t, g, key) {
			if r["status"] != "rejected" || r["cost"] != "0" {
				t.Fatalf("row %v", r)
			}
		}
	})
}
