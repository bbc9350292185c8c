package integration

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// What a person new to the gateway meets first: every refusal says what
// to do next, in the protocol's own words, with the spec's status and code.
func TestNewcomerErrors(t *testing.T) {
	g, acct, key := startDefault(t)
	chat := g.URL + "/v1/chat/completions"

	t.Run("402: what the hold covers, the balance, the max tokens that fit, and whom to ask", func(t *testing.T) {
		poor := g.Account("0.001")
		_, pk := g.Key(poor, nil)
		body := chatBody("sim-chat", "hi", "")
		c := do(t, "POST", chat, bearer(pk), body)
		code, typ, msg := c.errorOf(t)
		if c.Status != 402 || code != "quota_exceeded" || typ != "insufficient_quota" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		for _, want := range []string{
			"the model's default output reservation of 8192 tokens, held because the request sent no max_tokens",
			"more than the account's available balance of 0.001 credits",
			"top up from the console's billing page, " + g.URL + "/console/billing", // the embedded default runs the console
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("402 message lacks %q:\n%s", want, msg)
			}
		}
		// The largest max_tokens it names fits; one more does not.
		m := regexp.MustCompile(`max_tokens up to (\d+) would fit`).FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("no max_tokens that fits in %q", msg)
		}
		n, _ := strconv.Atoi(m[1])
		if c := do(t, "POST", chat, bearer(pk), chatBody("sim-chat", "hi", `"max_tokens":`+strconv.Itoa(n+1))); c.Status != 402 {
			t.Fatalf("max_tokens %d: %d %s", n+1, c.Status, c.Body)
		}
		if c := do(t, "POST", chat, bearer(pk), chatBody("sim-chat", "hi", `"max_tokens":`+m[1])); c.Status != 200 {
			t.Fatalf("max_tokens %d, named as fitting: %d %s", n, c.Status, c.Body)
		}
		// The responses protocol's own field name.
		c = do(t, "POST", g.URL+"/v1/responses", bearer(pk), `{"model":"sim-chat","input":"hi","max_output_tokens":100000}`)
		if _, _, msg := c.errorOf(t); c.Status != 402 || !strings.Contains(msg, "plus 100000 output tokens (max_output_tokens), at the model's prices") ||
			!regexp.MustCompile(`max_output_tokens up to \d+ would fit`).MatchString(msg) {
			t.Fatalf("responses: %d %s", c.Status, c.Body)
		}
	})

	t.Run("402 at authentication says where to top up", func(t *testing.T) {
		empty := g.Account("0")
		_, ek := g.Key(empty, nil)
		c := do(t, "POST", chat, bearer(ek), chatBody("sim-chat", "hi", ""))
		if _, _, msg := c.errorOf(t); c.Status != 402 || !strings.Contains(msg, "a new key does not help") || !strings.HasSuffix(msg, g.URL+"/console/billing") {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if c := do(t, "GET", g.URL+"/console/billing", nil, ""); c.Status >= 400 {
			t.Fatalf("the billing page it names: %d", c.Status)
		}
	})

	t.Run("a model of another family names the endpoint that serves it", func(t *testing.T) {
		c := do(t, "POST", chat, bearer(key), chatBody("sim-image", "hi", ""))
		code, _, msg := c.errorOf(t)
		if c.Status != 503 || code != "no_channel_available" ||
			msg != "the model 'sim-image' is an image model and has no channel on this endpoint (it serves chat models); call it with POST /v1/images/generations" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		c = do(t, "POST", g.URL+"/v1/images/generations", bearer(key), `{"model":"sim-chat","prompt":"a cat"}`)
		code, _, msg = c.errorOf(t)
		if c.Status != 503 || code != "no_channel_available" ||
			msg != "the model 'sim-chat' is a chat model and has no channel on this endpoint (it serves image models); call it with POST /v1/chat/completions" {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})

	t.Run("an unknown model names the near ids and GET /v1/models, on every protocol", func(t *testing.T) {
		const want = "the model 'sim-chta' does not exist; did you mean 'sim-chat'? GET /v1/models lists the models this key can call"
		for _, tc := range []struct {
			desc, path, body, msgPath string
			headers                   map[string]string
		}{
			{"completions", "/v1/chat/completions", chatBody("sim-chta", "hi", ""), "error.message", nil},
			{"messages", "/v1/messages", `{"model":"sim-chta","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "error.message", map[string]string{"anthropic-version": "2023-06-01"}},
			{"responses", "/v1/responses", `{"model":"sim-chta","input":"hi"}`, "error.message", nil},
			{"generate-content", "/v1beta/models/sim-chta:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "error.message", nil},
			{"images", "/v1/images/generations", `{"model":"sim-chta","prompt":"a cat"}`, "error.message", nil},
		} {
			h := bearer(key)
			for k, v := range tc.headers {
				h[k] = v
			}
			c := do(t, "POST", g.URL+tc.path, h, tc.body)
			if got := gjson.GetBytes(c.Body, tc.msgPath).Str; c.Status != 400 || got != want {
				t.Errorf("%s: %d %s", tc.desc, c.Status, c.Body)
			}
		}
		// A restricted key is offered only what it may call.
		_, narrow := g.Key(acct, map[string]any{"allowed_models": []string{"gpt-4o-mini"}})
		c := do(t, "POST", chat, bearer(narrow), chatBody("sim-chta", "hi", ""))
		if _, _, msg := c.errorOf(t); c.Status != 400 || strings.Contains(msg, "did you mean") {
			t.Fatalf("restricted key: %d %s", c.Status, c.Body)
		}
	})

	t.Run("a missing key's hint names the protocol's header", func(t *testing.T) {
		for _, tc := range []struct{ desc, path, body, want string }{
			{"completions", "/v1/chat/completions", chatBody("sim-chat", "hi", ""), "(send it as Authorization: Bearer sk-tollgate-...)"},
			{"messages", "/v1/messages", `{"model":"sim-chat","max_tokens":10,"messages":[]}`, "(send it as x-api-key: sk-tollgate-... or Authorization: Bearer sk-tollgate-...)"},
			{"generate-content", "/v1beta/models/sim-chat:generateContent", `{"contents":[]}`, "(send it as x-goog-api-key: sk-tollgate-..., the query parameter ?key=sk-tollgate-..., or Authorization: Bearer sk-tollgate-...)"},
		} {
			c := do(t, "POST", g.URL+tc.path, nil, tc.body)
			if msg := gjson.GetBytes(c.Body, "error.message").Str; c.Status != 401 || msg != "authentication failed: missing or malformed api key "+tc.want {
				t.Errorf("%s: %d %s", tc.desc, c.Status, c.Body)
			}
		}
	})

	t.Run("the admin 401 reads as written", func(t *testing.T) {
		c := do(t, "GET", g.URL+"/admin/v1/accounts", nil, "")
		if c.Status != 401 || !strings.Contains(string(c.Body), "Bearer <admin token>") || strings.Contains(string(c.Body), `\u003c`) {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
	})

	t.Run("an MCP argument error names the tool's arguments", func(t *testing.T) {
		client := mcp.NewClient(&mcp.Implementation{Name: "tollgate-test", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp",
			HTTPClient: &http.Client{Transport: headerTransport{"Authorization", "Bearer " + key}, Timeout: 30 * time.Second}, MaxRetries: -1}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		s, err := client.Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res := callTool(t, s, "search_wiki", map[string]any{"query": "idempotency"}, nil)
		if txt := toolText(res); !res.IsError || !strings.Contains(txt, `"query"`) || !strings.HasSuffix(txt, "search_wiki takes these arguments: q (required), limit, offset") {
			t.Fatalf("isError %v: %s", res.IsError, txt)
		}
	})

	t.Run("config check shows a media model's price unit and near model ids", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "t.hcl")
		_ = os.WriteFile(cfg, []byte("model \"img\" {\n  family = \"image\"\n}\nmodel \"sim-chat\" {\n  price {\n    output = \"1\"\n  }\n}\n"+
			"channel \"sim\" {\n  vendor    = \"sim\"\n  families  = [\"chat\", \"image\"]\n  protocols = [\"openai_chat\"]\n  models    = [\"sim-caht\", \"img\"]\n}\n"), 0o600)
		out, err := exec.Command(filepath.Join(testgw.Build(t), "tollgate"), "config", "check", "--config", cfg).CombinedOutput()
		for _, want := range []string{
			`model "img": no price {} block; every model needs a price (an image model: per unit, e.g. price { per_image = "0.04" })`,
			`models: "sim-caht" is not a declared model (did you mean "sim-chat"? else add a model "sim-caht" block)`,
		} {
			if err == nil || !strings.Contains(string(out), want) {
				t.Errorf("config check lacks %q (%v):\n%s", want, err, out)
			}
		}
	})
}

// The top-up hint names server.billing_url when the operator has one,
// else (no console either) says to ask the operator.
func TestNewcomerBillingURL(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{`server {
  billing_url = "https://billing.example.com/top-up"
}`, "top up at https://billing.example.com/top-up"},
		{"", "ask the gateway's operator to add credit"},
	} {
		g := startGateway(t, testgw.Options{Config: tc.server + `
model "sim-chat" {
  price {
    input  = "0.10"
    output = "0.40"
  }
}
channel "sim" {
  vendor    = "sim"
  protocols = ["openai_chat"]
  models    = ["sim-chat"]
}
`})
		for _, credit := range []string{"0", "0.0001"} {
			_, key := g.Key(g.Account(credit), nil)
			c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", ""))
			if _, _, msg := c.errorOf(t); c.Status != 402 || !strings.HasSuffix(msg, tc.want) {
				t.Errorf("credit %s: %d %s, want it to end %q", credit, c.Status, c.Body, tc.want)
			}
		}
	}
}

// A call refused before its body was read whole still records the model
// its body named, so a model= filter of the logs finds it.
func TestNewcomerLogRowKeepsModel(t *testing.T) {
	g, _, key := startDefault(t)
	_, broke := g.Key(g.Account("0"), nil)
	for _, tc := range []struct {
		desc, path, body, key string
		status                int
	}{
		{"a missing anthropic-version", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, key, 400},
		{"a bad field", "/v1/chat/completions", chatBody("claude-sonnet-4-5", "hi", `"max_tokens":"many"`), key, 400},
		{"a 402 at authentication", "/v1/chat/completions", chatBody("claude-sonnet-4-5", "hi", ""), broke, 402},
	} {
		c := do(t, "POST", g.URL+tc.path, bearer(tc.key), tc.body)
		if c.Status != tc.status {
			t.Fatalf("%s: %d %s", tc.desc, c.Status, c.Body)
		}
	}
	for _, k := range []string{key, broke} {
		rows := getLogs(t, g, k, "period=all&model=claude-sonnet-4-5")
		want := 2
		if k == broke {
			want = 1
		}
		if len(rows.Data) != want {
			t.Fatalf("model=claude-sonnet-4-5 finds %d rows, want %d: %+v", len(rows.Data), want, rows.Data)
		}
		for _, r := range rows.Data {
			if r["status"] != "rejected" || r["model"] != "claude-sonnet-4-5" || r["cost"] != "0" {
				t.Errorf("row %+v", r)
			}
		}
	}
}

// serve --metrics-listen turns /metrics on without a config file; the
// banner names it, and the API's listener says where it is.
func TestNewcomerMetricsListen(t *testing.T) {
	g := startGateway(t, testgw.Options{Args: []string{"--metrics-listen", "127.0.0.1:0"}})
	m := regexp.MustCompile(`(?m)^metrics: +(http://127\.0\.0\.1:\d+/metrics) \(Prometheus text\)$`).FindStringSubmatch(g.Output())
	if m == nil {
		t.Fatalf("banner names no metrics listener:\n%s", g.Output())
	}
	_, key := g.Key(g.Account(""), nil)
	if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("sim-chat", "hi", "")); c.Status != 200 {
		t.Fatalf("chat: %d %s", c.Status, c.Body)
	}
	c := do(t, "GET", m[1], nil, "")
	if c.Status != 200 || !regexp.MustCompile(`(?m)^tollgate_requests_total\{.*model="sim-chat".*status="200"\} 1$`).Match(c.Body) {
		t.Fatalf("GET %s: %d\n%.2000s", m[1], c.Status, c.Body)
	}
	c = do(t, "GET", g.URL+"/metrics", nil, "")
	if _, _, msg := c.errorOf(t); c.Status != 404 || !strings.Contains(msg, "metrics are served on their own listener") {
		t.Fatalf("GET /metrics on the API: %d %s", c.Status, c.Body)
	}

	off, _, _ := startDefault(t)
	c = do(t, "GET", off.URL+"/metrics", nil, "")
	if _, _, msg := c.errorOf(t); c.Status != 404 || !strings.Contains(msg, "metrics are off") || !strings.Contains(msg, "--metrics-listen") {
		t.Fatalf("metrics off: %d %s", c.Status, c.Body)
	}
}

// sim answers an image size that is no size as the upstream would, with
// its 400, which the client gets unchanged (the gateway passes size
// through unjudged): at once, synchronous or async.
func TestNewcomerSimRefusesBadSize(t *testing.T) {
	g, _, key := startDefault(t)
	for _, async := range []string{"false", "true"} {
		c := do(t, "POST", g.URL+"/v1/images/generations", bearer(key), `{"model":"sim-image","prompt":"a cat","size":"banana","async":`+async+`}`)
		code, typ, msg := c.errorOf(t)
		if c.Status != 400 || code != "invalid_request" || typ != "invalid_request_error" ||
			!strings.HasPrefix(msg, "Invalid value: 'banana'. Supported values are: 'auto' and 'WIDTHxHEIGHT'") {
			t.Errorf("async %s: %d %s", async, c.Status, c.Body)
		}
	}
	rows := getLogs(t, g, key, "period=all&model=sim-image")
	if len(rows.Data) != 2 || rows.Data[0]["cost"] != "0" || rows.Data[1]["cost"] != "0" {
		t.Fatalf("rows %+v", rows.Data)
	}
}
