package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// Organization agents behind their keys (spec: Agent interface, errors
// rule 10; PRODUCT.md §2 and §7), driven with the official openai-go SDK
// against the real binary, the upstream an in-test vendorsim that records
// what it got.
func TestOrgAgents(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: orgAgentsConfig(up.URL, nil)})
	acct := g.Account("")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	temp := 0.3
	agentID := newOrgAgent(t, g, acct, map[string]any{"temperature": temp})
	keyID, key := issueAgentKey(t, g, agentID, nil)
	client := openaiClient(g, key)

	// A client that knows nothing of the agent: a placeholder model, its
	// own system message, function tools and a tool choice.
	weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:       "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	})
	params := func(prompt string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{
			Model: "anything",
			Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("Client rules: answer in English."),
				openai.UserMessage(prompt),
			},
			Tools:      []openai.ChatCompletionToolUnionParam{weather},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
		}
	}
	// wantAgentRequest checks what the upstream got: the agent's model and
	// system prompt first, the client's system message after it, no tools.
	wantAgentRequest := func(t *testing.T, marker string) gjson.Result {
		t.Helper()
		req := upstreamCall(t, up, marker)
		if m := req.Get("model").String(); m != "org-chat" {
			t.Fatalf("upstream model %q, want the agent's org-chat", m)
		}
		msgs := req.Get("messages").Array()
		if len(msgs) != 3 || msgs[0].Get("role").String() != "system" || msgs[0].Get("content").String() != "You are Ada, the help desk of Acme." ||
			msgs[1].Get("content").String() != "Client rules: answer in English." || msgs[2].Get("role").String() != "user" {
			t.Fatalf("upstream messages: %s", req.Get("messages").Raw)
		}
		for _, f := range []string{"tools", "functions", "tool_choice", "parallel_tool_calls"} {
			if req.Get(f).Exists() {
				t.Fatalf("the client's %s reached the upstream: %s", f, req.Raw)
			}
		}
		return req
	}

	t.Run("non-streaming: the agent's prompt, model and temperature; client tools dropped", func(t *testing.T) {
		// The prompt asks for the tool: with the client's tools the sim
		// would call it; without them it answers in text.
		resp, err := client.Chat.Completions.New(ctx, params("Use the get_weather tool for Paris. [m1]"))
		if err != nil {
			t.Fatal(err)
		}
		c := resp.Choices[0]
		if c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 || c.Message.Content == "" || resp.Model != "org-chat" {
			t.Fatalf("answer %+v", resp)
		}
		req := wantAgentRequest(t, "[m1]")
		if got := req.Get("temperature"); got.Float() != temp {
			t.Fatalf("upstream temperature %s, want the agent's %v", got.Raw, temp)
		}
	})

	t.Run("streaming: the same request, every chunk relayed, spend counted", func(t *testing.T) {
		p := params("Use the get_weather tool for Oslo. [m2]")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := client.Chat.Completions.NewStreaming(ctx, p)
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "stop" || acc.Choices[0].Message.Content == "" || acc.Usage.CompletionTokens == 0 {
			t.Fatalf("stream %+v", acc.ChatCompletion)
		}
		req := wantAgentRequest(t, "[m2]")
		if !req.Get("stream").Bool() || req.Get("temperature").Float() != temp {
			t.Fatalf("upstream stream request: %s", req.Raw)
		}
		var k struct{ Spent string }
		g.Admin("GET", "/keys/"+keyID, nil, &k)
		if k.Spent == "" || k.Spent == "0" {
			t.Fatalf("spent after two calls: %q", k.Spent)
		}
	})

	t.Run("the client's temperature wins, 0 included", func(t *testing.T) {
		for i, temp := range []float64{1.1, 0} {
			marker := fmt.Sprintf("[t%d]", i)
			p := params("Say hi. " + marker)
			p.Temperature = openai.Float(temp)
			if _, err := client.Chat.Completions.New(ctx, p); err != nil {
				t.Fatal(err)
			}
			if got := wantAgentRequest(t, marker).Get("temperature"); !got.Exists() || got.Float() != temp {
				t.Fatalf("upstream temperature %s, want the client's %v", got.Raw, temp)
			}
		}
		// An agent without a temperature sends none.
		plain := newOrgAgent(t, g, acct, nil)
		_, k := issueAgentKey(t, g, plain, nil)
		pc := openaiClient(g, k)
		if _, err := pc.Chat.Completions.New(ctx, params("Say hi. [t-none]")); err != nil {
			t.Fatal(err)
		}
		if got := upstreamCall(t, up, "[t-none]").Get("temperature"); got.Exists() {
			t.Fatalf("upstream temperature %s without one", got.Raw)
		}
	})

	t.Run("conversation_id in the body is dropped", func(t *testing.T) {
		c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key),
			`{"model":"x","conversation_id":"conv-1","functions":[{"name":"f","parameters":{"type":"object"}}],"function_call":"auto","messages":[{"role":"user","content":"Say hi. [conv]"}]}`)
		if c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		req := upstreamCall(t, up, "[conv]")
		for _, f := range []string{"conversation_id", "functions", "function_call"} {
			if req.Get(f).Exists() {
				t.Fatalf("%s reached the upstream: %s", f, req.Raw)
			}
		}
	})

	t.Run("web search and image generation: on, supported and streaming only", func(t *testing.T) {
		web := newOrgAgent(t, g, acct, map[string]any{"model": "org-web", "web_search": true, "image_generation": true})
		_, wk := issueAgentKey(t, g, web, nil)
		wc := openaiClient(g, wk)
		stream := wc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: "x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("News? [w1]")}})
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if got := upstreamCall(t, up, "[w1]").Get("tools").Raw; got != `[{"type":"web_search"},{"type":"image_generation"}]` {
			t.Fatalf("streaming: upstream tools %s", got)
		}
		if _, err := wc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("News? [w2]")}}); err != nil {
			t.Fatal(err)
		}
		if got := upstreamCall(t, up, "[w2]").Get("tools"); got.Exists() {
			t.Fatalf("non-streaming: upstream tools %s", got.Raw)
		}
		// A model without the tools in its caps gets none.
		noCaps := newOrgAgent(t, g, acct, map[string]any{"web_search": true})
		_, nk := issueAgentKey(t, g, noCaps, nil)
		nc := openaiClient(g, nk)
		stream = nc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: "x", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("News? [w3]")}})
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if got := upstreamCall(t, up, "[w3]").Get("tools"); got.Exists() {
			t.Fatalf("a model without the tool: upstream tools %s", got.Raw)
		}
	})

	t.Run("images: 400 model_no_vision without caps { vision }, passed with it", func(t *testing.T) {
		img := `{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"What is this? [v1]"},{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`
		wantErr(t, do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), img), 400, "model_no_vision", "invalid_request_error")
		vis := newOrgAgent(t, g, acct, map[string]any{"model": "org-vision"})
		_, vk := issueAgentKey(t, g, vis, nil)
		if c := do(t, "POST", g.URL+"/v1/chat/completions", bearer(vk), img); c.Status != 200 {
			t.Fatalf("a vision model: %d %s", c.Status, c.Body)
		}
		if got := upstreamCall(t, up, "[v1]").Get("messages.1.content.1.type").String(); got != "image_url" {
			t.Fatalf("the image part did not reach the upstream: %s", got)
		}
	})

	t.Run("every other path is 403 permission_denied, whatever the key form", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/v1/messages", `{"model":"org-chat","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/messages/count_tokens", `{"model":"org-chat","messages":[{"role":"user","content":"hi"}]}`},
			{"POST", "/v1/responses", `{"model":"org-chat","input":"hi"}`},
			{"POST", "/v1beta/models/org-chat:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
			{"POST", "/v1beta/models/org-chat:streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
			{"POST", "/v1/embeddings", `{"model":"x","input":"hi"}`},
			{"POST", "/v1/images/generations", `{"model":"x","prompt":"a cat"}`},
			{"GET", "/v1/images/generations", ""},
			{"GET", "/v1/images/generations/img_0123", ""},
			{"GET", "/v1/models", ""},
			{"GET", "/v1/key/balance", ""},
			{"GET", "/v1/catalog", ""},
			{"GET", "/v1/logs", ""},
			{"GET", "/v1/logs?scope=account", ""},
			{"GET", "/v1/logs/summary", ""},
			{"GET", "/v1/logs/export.csv", ""},
			{"GET", "/v1/logs/1", ""},
			{"GET", "/v1/dashboard/billing/subscription", ""},
			{"GET", "/v1/dashboard/billing/usage", ""},
		} {
			for _, form := range []map[string]string{bearer(key), {"x-api-key": key}} {
				c := do(t, r.method, g.URL+r.path, form, r.body)
				if c.Status != http.StatusForbidden || !strings.Contains(strings.ToLower(string(c.Body)), "permission") {
					t.Fatalf("%s %s: %d %s", r.method, r.path, c.Status, c.Body)
				}
			}
		}
		c := do(t, "GET", g.URL+"/v1/logs", bearer(key), "")
		wantErr(t, c, 403, "permission_denied", "permission_error")
		if c := do(t, "POST", g.URL+"/v1/chat/completions?key="+key, nil, chatBody("x", "Say hi. [qform]", "")); c.Status != 200 {
			t.Fatalf("the key query form on the agent's route: %d %s", c.Status, c.Body)
		}
	})

	t.Run("errors of rule 10", func(t *testing.T) {
		post := func(key string, body string) call {
			return do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), body)
		}
		hi := chatBody("x", "hi", "")
		// 401: invalid, revoked; expiry cannot be set on an agent key.
		wantErr(t, post("sk-tollgate-"+strings.Repeat("0", 64), hi), 401, "invalid_api_key", "authentication_error")
		rid, rk := issueAgentKey(t, g, agentID, nil)
		g.Admin("PATCH", "/keys/"+rid, map[string]any{"enabled": false}, nil)
		if msg := wantErr(t, post(rk, hi), 401, "invalid_api_key", "authentication_error"); msg != "authentication failed: api key revoked" {
			t.Fatalf("revoked: %q", msg)
		}
		if st := g.AdminStatus("PATCH", "/keys/"+rid, map[string]any{"expires_at": "2001-01-01T00:00:00Z"}, nil); st != 400 {
			t.Fatalf("an expiry on an agent key: %d", st)
		}
		// 401: the organization disabled.
		off := g.Account("")
		_, ok := issueAgentKey(t, g, newOrgAgent(t, g, off, nil), nil)
		g.Admin("PATCH", "/accounts/"+off, map[string]any{"status": "disabled"}, nil)
		if msg := wantErr(t, post(ok, hi), 401, "invalid_api_key", "authentication_error"); msg != "authentication failed: account is not active" {
			t.Fatalf("disabled organization: %q", msg)
		}
		// 402: the organization's wallet.
		poor := g.Account("0.0001")
		_, pk := issueAgentKey(t, g, newOrgAgent(t, g, poor, nil), nil)
		wantErr(t, post(pk, chatBody("x", "hi", `"max_tokens":1000`)), 402, "quota_exceeded", "insufficient_quota")
		// 402: the key's spend cap.
		_, ck := issueAgentKey(t, g, agentID, "0")
		if msg := wantErr(t, post(ck, hi), 402, "quota_exceeded", "insufficient_quota"); !strings.Contains(msg, "spend cap") {
			t.Fatalf("cap: %q", msg)
		}
		// 403: unpublished, deleted.
		hidden := newOrgAgent(t, g, acct, map[string]any{"published": false})
		_, hk := issueAgentKey(t, g, hidden, nil)
		wantErr(t, post(hk, hi), 403, "permission_denied", "permission_error")
		g.Admin("PATCH", "/agents/"+hidden, map[string]any{"published": true}, nil)
		if c := post(hk, hi); c.Status != 200 {
			t.Fatalf("published again: %d %s", c.Status, c.Body)
		}
		gone := newOrgAgent(t, g, acct, nil)
		_, gk := issueAgentKey(t, g, gone, nil)
		g.Admin("DELETE", "/agents/"+gone, nil, nil)
		if msg := wantErr(t, post(gk, hi), 403, "permission_denied", "permission_error"); !strings.Contains(msg, "deleted") {
			t.Fatalf("deleted: %q", msg)
		}
		// 403 model_not_allowed: the locked model outside the organization
		// allowlist; the model inside it passes.
		strict := g.Account("")
		_, sk := issueAgentKey(t, g, newOrgAgent(t, g, strict, map[string]any{"model": "org-other"}), nil)
		g.Admin("PATCH", "/accounts/"+strict, map[string]any{"allowed_models": []string{"org-chat"}}, nil)
		wantErr(t, post(sk, hi), 403, "model_not_allowed", "permission_error")
		g.Admin("PATCH", "/accounts/"+strict, map[string]any{"allowed_models": []string{"org-chat", "org-other"}}, nil)
		if c := post(sk, hi); c.Status != 200 {
			t.Fatalf("in the allowlist: %d %s", c.Status, c.Body)
		}
		// 400: a malformed body.
		wantErr(t, post(key, `{"messages":"hi"}`), 400, "invalid_request", "invalid_request_error")
		wantErr(t, post(key, `not json`), 400, "invalid_request", "invalid_request_error")
		wantErr(t, post(key, `{"model":"x"}`), 400, "invalid_request", "invalid_request_error")
		// A key of kind agent bound to no agent never falls back.
		_, bare := g.Key(acct, map[string]any{"kind": "agent"})
		wantErr(t, post(bare, chatBody("org-chat", "hi", "")), 403, "permission_denied", "permission_error")
	})

	t.Run("the key-request flow", func(t *testing.T) {
		var req struct{ ID, Status string }
		g.Admin("POST", "/agents/"+agentID+"/key-requests", map[string]any{"requester": "ada@acme.test", "note": "help desk"}, &req)
		var other struct{ ID string }
		g.Admin("POST", "/agents/"+agentID+"/key-requests", map[string]any{"requester": "bob@acme.test"}, &other)
		var pending struct{ Data []struct{ ID, Status string } }
		g.Admin("GET", "/accounts/"+acct+"/key-requests?status=pending", nil, &pending)
		if req.Status != "pending" || len(pending.Data) != 2 {
			t.Fatalf("pending requests: %+v", pending)
		}
		var ap struct {
			Status string
			KeyID  string `json:"key_id"`
			Key    struct {
				ID, Key, Kind string
			} `json:"key"`
		}
		g.Admin("POST", "/key-requests/"+req.ID+"/approve", map[string]any{"spend_cap": "5"}, &ap)
		if ap.Status != "approved" || ap.Key.Key == "" || ap.Key.Kind != "agent" || ap.KeyID != ap.Key.ID {
			t.Fatalf("approved: %+v", ap)
		}
		kc := openaiClient(g, ap.Key.Key)
		if _, err := kc.Chat.Completions.New(ctx, params("Say hi. [kr]")); err != nil {
			t.Fatal(err)
		}
		wantAgentRequest(t, "[kr]")
		if st := g.AdminStatus("POST", "/key-requests/"+req.ID+"/approve", map[string]any{"spend_cap": "5"}, nil); st != http.StatusConflict {
			t.Fatalf("approved twice: %d", st)
		}
		var rj struct{ Status string }
		g.Admin("POST", "/key-requests/"+other.ID+"/reject", nil, &rj)
		if rj.Status != "rejected" {
			t.Fatalf("rejected: %+v", rj)
		}
		var k struct {
			Spent    string
			SpendCap *string `json:"spend_cap"`
		}
		g.Admin("GET", "/keys/"+ap.Key.ID, nil, &k)
		if k.SpendCap == nil || *k.SpendCap != "5" || k.Spent == "0" {
			t.Fatalf("the approved key: %+v", k)
		}
	})

	t.Run("the log row names the agent", func(t *testing.T) {
		_, reader := g.Key(acct, map[string]any{"name": "reader", "logs_account_scope": true})
		p := getLogs(t, g, reader, q("scope", "account", "period", "all", "key_id", keyID, "status", "success", "limit", "1"))
		if len(p.Data) != 1 || p.Data[0]["model"] != "org-chat" {
			t.Fatalf("rows: %+v", p.Data)
		}
		c := do(t, "GET", g.URL+"/v1/logs/"+idStr(uint64(p.Data[0]["id"].(float64)))+"?scope=account", bearer(reader), "")
		if c.Status != 200 || !strings.Contains(string(c.Body), `{"k":"agent","v":"`+agentID+`"}`) {
			t.Fatalf("technical view: %d %s", c.Status, c.Body)
		}
	})
}

// The spend cap trips exactly at its boundary under concurrent calls,
// streams and not: each call holds and costs exactly h, so of n calls with
// a cap of k*h exactly k pass, whatever their timing.
func TestOrgAgentSpendCapBoundary(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: orgAgentsConfig(up.URL, nil)})
	acct := g.Account("")
	agentID := newOrgAgent(t, g, acct, map[string]any{"model": "org-cap", "system_prompt": "Count."})
	const maxTokens, fits, calls = 10, 7, 16
	h := money.MustParse("0.00001") // 10 output tokens at 1 per million
	limit := money.Nano(fits) * h
	keyID, key := issueAgentKey(t, g, agentID, limit.String())
	client := openaiClient(g, key)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	errs := make([]error, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := openai.ChatCompletionNewParams{Model: "x", MaxTokens: openai.Int(maxTokens),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Count to ten. [cap-%d]", i))}}
			if i%2 == 0 {
				_, errs[i] = client.Chat.Completions.New(ctx, p)
				return
			}
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := client.Chat.Completions.NewStreaming(ctx, p)
			for s.Next() {
			}
			errs[i] = s.Err()
		}()
	}
	wg.Wait()
	passed := 0
	for _, err := range errs {
		var apiErr *openai.Error
		switch {
		case err == nil:
			passed++
		case errors.As(err, &apiErr) && apiErr.StatusCode == 402 && apiErr.Code == "quota_exceeded":
		default:
			t.Fatalf("call: %v", err)
		}
	}
	if passed != fits {
		t.Fatalf("%d calls passed a cap of %d calls, want exactly %d", passed, fits, fits)
	}
	var k struct {
		Spent    money.Nano
		SpendCap *money.Nano `json:"spend_cap"`
	}
	g.Admin("GET", "/keys/"+keyID, nil, &k)
	if k.Spent != limit || k.SpendCap == nil || *k.SpendCap != limit {
		t.Fatalf("spent %s of %v, want %s of %s", k.Spent, k.SpendCap, limit, limit)
	}
	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "x", MaxTokens: openai.Int(1),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("One more. [cap-last]")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 402 {
		t.Fatalf("a call past the cap: %v", err)
	}
	// Any key may carry a cap: the balance route shows what it leaves.
	_, console := g.Key(acct, map[string]any{"spend_cap": "0.5"})
	if c := do(t, "GET", g.URL+"/v1/key/balance", bearer(console), ""); c.Status != 200 || gjson.GetBytes(c.Body, "remaining_usd").String() != "0.5" {
		t.Fatalf("balance of a capped key: %d %s", c.Status, c.Body)
	}
	// Raising the cap lets the key go on.
	g.Admin("PATCH", "/keys/"+keyID, map[string]any{"spend_cap": (limit + h).String()}, nil)
	if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "x", MaxTokens: openai.Int(maxTokens),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Count to ten. [cap-raised]")}}); err != nil {
		t.Fatal(err)
	}
}

// Session pinning: a session_id or conversation_id header keeps a
// conversation on one channel while it is up; a channel going down moves
// only its own sessions. For every key, agent or not.
func TestSessionPinning(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	pins := []*switchable{startSwitchable(t), startSwitchable(t), startSwitchable(t)}
	g := startGateway(t, testgw.Options{Config: orgAgentsConfig(up.URL, []string{pins[0].URL, pins[1].URL, pins[2].URL})})
	acct := g.Account("")
	_, plain := g.Key(acct, nil)
	_, agentKey := issueAgentKey(t, g, newOrgAgent(t, g, acct, map[string]any{"model": "org-pin"}), nil)

	chat := func(key, header, session, prompt string) {
		t.Helper()
		h := bearer(key)
		h[header] = session
		if c := do(t, "POST", g.URL+"/v1/chat/completions", h, chatBody("org-pin", prompt, "")); c.Status != 200 {
			t.Fatalf("%s: %d %s", prompt, c.Status, c.Body)
		}
	}
	// where says which channel served each call of a prompt (-1: spread).
	where := func(prompt string, n int) int {
		t.Helper()
		for i, p := range pins {
			switch p.served(prompt) {
			case n:
				return i
			case 0:
			default:
				return -1
			}
		}
		t.Fatalf("%q served nowhere", prompt)
		return -1
	}
	const sessions = 12
	home := map[int]int{}
	for s := range sessions {
		key, header := plain, "session_id"
		if s%2 == 1 {
			key, header = agentKey, "conversation_id"
		}
		prompt := fmt.Sprintf("Hello from session %d.", s)
		for range 4 {
			chat(key, header, fmt.Sprint("sess-", s), prompt)
		}
		if home[s] = where(prompt, 4); home[s] < 0 {
			t.Fatalf("session %d was spread over the channels", s)
		}
	}
	used := map[int]bool{}
	for _, ch := range home {
		used[ch] = true
	}
	if len(used) < 2 {
		t.Fatalf("%d sessions all on one channel: %v", sessions, home)
	}
	// The busiest channel goes down: its sessions move, the others stay.
	down := home[0]
	pins[down].down.Store(true)
	for s := range sessions {
		key, header := plain, "session_id"
		if s%2 == 1 {
			key, header = agentKey, "conversation_id"
		}
		prompt := fmt.Sprintf("Again from session %d.", s)
		for range 4 {
			chat(key, header, fmt.Sprint("sess-", s), prompt)
		}
		got := where(prompt, 4)
		switch {
		case home[s] != down && got != home[s]:
			t.Fatalf("session %d moved from channel %d to %d when channel %d went down", s, home[s], got, down)
		case home[s] == down && (got == down || got < 0):
			t.Fatalf("session %d of the down channel: served by %d", s, got)
		}
	}
}
