package vendorsim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"

	"github.com/tollgate-gw/tollgate/core/sse"
)

const testKey = "sk-vendorsim-test-key"

var weatherSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"city": map[string]any{"type": "string"},
		"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
	},
	"required": []string{"city", "unit"},
}

// recorder is a Recorder whose last request must exist.
type recorder struct{ Recorder }

func (r *recorder) last(t *testing.T) Request {
	t.Helper()
	q, ok := r.Last("")
	if !ok {
		t.Fatal("no request recorded")
	}
	return q
}

func newServer(t *testing.T) (*httptest.Server, *recorder) {
	rec := &recorder{}
	srv := httptest.NewServer(New(Options{APIKey: testKey, Record: rec.Record}).Handler())
	t.Cleanup(srv.Close)
	return srv, rec
}

// turn is one answer as the SDK decoded it.
type turn struct {
	text, finish, tool, args string
	in, out                  int64
}

func checkToolTurn(t *testing.T, tr turn, toolFinish string) {
	t.Helper()
	var args map[string]any
	if tr.tool != "get_weather" || json.Unmarshal([]byte(tr.args), &args) != nil || args["city"] != "Oslo" || args["unit"] != "celsius" || len(args) != 2 ||
		tr.finish != toolFinish || tr.in == 0 || tr.out == 0 {
		t.Fatalf("tool turn %+v", tr)
	}
}

func checkTextTurn(t *testing.T, tr turn, finish string) {
	t.Helper()
	if !strings.HasPrefix(tr.text, "Tool result received:") || !strings.Contains(tr.text, "sunny") || tr.tool != "" || tr.finish != finish || tr.out == 0 {
		t.Fatalf("text turn %+v", tr)
	}
}

const toolPrompt = "Use get_weather for: Oslo"

func TestOpenAIChatWithSDK(t *testing.T) {
	srv, rec := newServer(t)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "body", true: "stream"}[stream], func(t *testing.T) {
			ctx := t.Context()
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-sim",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(toolPrompt)},
				Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
					Name: "get_weather", Parameters: weatherSchema})},
			}
			send := func() (turn, openai.ChatCompletionMessage) {
				var m openai.ChatCompletion
				if stream {
					params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
					st := client.Chat.Completions.NewStreaming(ctx, params)
					acc := openai.ChatCompletionAccumulator{}
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					m = acc.ChatCompletion
				} else {
					r, err := client.Chat.Completions.New(ctx, params)
					if err != nil {
						t.Fatal(err)
					}
					m = *r
				}
				c := m.Choices[0]
				tr := turn{text: c.Message.Content, finish: c.FinishReason, in: m.Usage.PromptTokens, out: m.Usage.CompletionTokens}
				if len(c.Message.ToolCalls) > 0 {
					tr.tool, tr.args = c.Message.ToolCalls[0].Function.Name, c.Message.ToolCalls[0].Function.Arguments
				}
				return tr, c.Message
			}
			tr, msg := send()
			checkToolTurn(t, tr, "tool_calls")
			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"sky":"sunny"}`, msg.ToolCalls[0].ID))
			tr, _ = send()
			checkTextTurn(t, tr, "stop")
			q := rec.last(t)
			if q.Path != "/v1/chat/completions" || q.Header.Get("Authorization") != "Bearer "+testKey || !strings.Contains(string(q.Body), `"role":"tool"`) {
				t.Fatalf("recorded %+v", q)
			}
		})
	}
}

func TestOpenAIResponsesWithSDK(t *testing.T) {
	srv, _ := newServer(t)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "body", true: "stream"}[stream], func(t *testing.T) {
			ctx := t.Context()
			items := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage(toolPrompt, responses.EasyInputMessageRoleUser)}
			send := func() (turn, responses.Response) {
				params := responses.ResponseNewParams{
					Model: "gpt-sim", Instructions: openai.String("be terse"),
					Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items},
					Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", weatherSchema, false)},
				}
				var r responses.Response
				if stream {
					st := client.Responses.NewStreaming(ctx, params)
					seq, deltas := int64(-1), ""
					for st.Next() {
						ev := st.Current()
						if ev.SequenceNumber != seq+1 {
							t.Fatalf("sequence %d after %d", ev.SequenceNumber, seq)
						}
						seq = ev.SequenceNumber
						switch ev.Type {
						case "response.output_text.delta", "response.function_call_arguments.delta":
							deltas += ev.Delta
						case "response.completed":
							r = ev.Response
						}
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					if r.ID == "" {
						t.Fatal("no response.completed")
					}
					if deltas == "" {
						t.Fatal("no deltas")
					}
				} else {
					p, err := client.Responses.New(ctx, params)
					if err != nil {
						t.Fatal(err)
					}
					r = *p
				}
				tr := turn{text: r.OutputText(), finish: string(r.Status), in: r.Usage.InputTokens, out: r.Usage.OutputTokens}
				for _, it := range r.Output {
					if it.Type == "function_call" {
						tr.tool, tr.args = it.Name, it.Arguments.OfString
					}
				}
				return tr, r
			}
			tr, r := send()
			checkToolTurn(t, tr, "completed")
			fc := r.Output[0]
			items = append(items,
				responses.ResponseInputItemParamOfFunctionCall(fc.Arguments.OfString, fc.CallID, fc.Name),
				functionOutput(fc.CallID, `{"sky":"sunny"}`))
			tr, _ = send()
			checkTextTurn(t, tr, "completed")
		})
	}
}

func TestAnthropicMessagesWithSDK(t *testing.T) {
	srv, rec := newServer(t)
	client := anthropic.NewClient(anthropicopt.WithBaseURL(srv.URL), anthropicopt.WithAPIKey(testKey), anthropicopt.WithMaxRetries(0),
		anthropicopt.WithHeader("anthropic-beta", "prompt-caching-2024-07-31"))
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "body", true: "stream"}[stream], func(t *testing.T) {
			ctx := t.Context()
			params := anthropic.MessageNewParams{
				Model: "claude-sim", MaxTokens: 256,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(toolPrompt))},
				Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
					InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"city", "unit"}}}}},
			}
			send := func() (turn, anthropic.Message) {
				var m anthropic.Message
				if stream {
					st := client.Messages.NewStreaming(ctx, params)
					for st.Next() {
						if err := m.Accumulate(st.Current()); err != nil {
							t.Fatal(err)
						}
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
				} else {
					r, err := client.Messages.New(ctx, params)
					if err != nil {
						t.Fatal(err)
					}
					m = *r
				}
				tr := turn{finish: string(m.StopReason), in: m.Usage.InputTokens, out: m.Usage.OutputTokens}
				for _, b := range m.Content {
					switch b.Type {
					case "text":
						tr.text += b.Text
					case "tool_use":
						tr.tool, tr.args = b.Name, string(b.Input)
					}
				}
				return tr, m
			}
			tr, m := send()
			checkToolTurn(t, tr, "tool_use")
			params.Messages = append(params.Messages, m.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[0].ID, "sunny and mild", false)))
			tr, _ = send()
			checkTextTurn(t, tr, "end_turn")
			q := rec.last(t)
			if q.Header.Get("X-Api-Key") != testKey || q.Header.Get("Anthropic-Version") == "" || q.Header.Get("Anthropic-Beta") != "prompt-caching-2024-07-31" {
				t.Fatalf("headers %v", q.Header)
			}
		})
	}
	t.Run("count_tokens", func(t *testing.T) {
		n, err := client.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
			Model: "claude-sim", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count these words"))},
		})
		if err != nil || n.InputTokens == 0 {
			t.Fatalf("%v %v", n, err)
		}
		if q := rec.last(t); q.Path != "/v1/messages/count_tokens" {
			t.Fatalf("path %s", q.Path)
		}
	})
}

func TestGeminiWithSDK(t *testing.T) {
	srv, rec := newServer(t)
	client, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: testKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "body", true: "stream"}[stream], func(t *testing.T) {
			ctx := t.Context()
			contents := []*genai.Content{genai.NewContentFromText(toolPrompt, genai.RoleUser)}
			cfg := &genai.GenerateContentConfig{MaxOutputTokens: 256,
				Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "get_weather", ParametersJsonSchema: weatherSchema}}}}}
			send := func() (turn, *genai.Content, *genai.FunctionCall) {
				var tr turn
				content := &genai.Content{Role: genai.RoleModel}
				var call *genai.FunctionCall
				add := func(r *genai.GenerateContentResponse) {
					c := r.Candidates[0]
					for _, p := range c.Content.Parts {
						content.Parts = append(content.Parts, p)
						tr.text += p.Text
						if p.FunctionCall != nil {
							call = p.FunctionCall
							args, _ := json.Marshal(p.FunctionCall.Args)
							tr.tool, tr.args = p.FunctionCall.Name, string(args)
						}
					}
					if c.FinishReason != "" {
						tr.finish = string(c.FinishReason)
					}
					if u := r.UsageMetadata; u != nil {
						tr.in, tr.out = int64(u.PromptTokenCount), int64(u.CandidatesTokenCount)
					}
				}
				if stream {
					n := 0
					for r, err := range client.Models.GenerateContentStream(ctx, "gemini-sim", contents, cfg) {
						if err != nil {
							t.Fatal(err)
						}
						add(r)
						n++
					}
					if n == 0 {
						t.Fatal("no chunks")
					}
				} else {
					r, err := client.Models.GenerateContent(ctx, "gemini-sim", contents, cfg)
					if err != nil {
						t.Fatal(err)
					}
					add(r)
				}
				return tr, content, call
			}
			tr, content, call := send()
			checkToolTurn(t, tr, "STOP")
			contents = append(contents, content, genai.NewContentFromParts([]*genai.Part{
				genai.NewPartFromFunctionResponse(call.Name, map[string]any{"sky": "sunny"})}, genai.RoleUser))
			tr, _, _ = send()
			checkTextTurn(t, tr, "STOP")
			q := rec.last(t)
			wantPath := "/v1beta/models/gemini-sim:generateContent"
			if stream {
				wantPath = "/v1beta/models/gemini-sim:streamGenerateContent"
			}
			if q.Path != wantPath || q.Header.Get("X-Goog-Api-Key") != testKey || stream != (q.RawQuery == "alt=sse") {
				t.Fatalf("recorded %s ? %s, key %q", q.Path, q.RawQuery, q.Header.Get("X-Goog-Api-Key"))
			}
		})
	}
}

func post(t *testing.T, url string, hdr map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestAuthAndRouting(t *testing.T) {
	srv, _ := newServer(t)
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	msgs := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	gem := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	ver := "2023-06-01"
	cases := []struct {
		desc, path, body string
		hdr              map[string]string
		status           int
		want             string // substring of the body
	}{
		{"openai ok", "/v1/chat/completions", chat, map[string]string{"Authorization": "Bearer " + testKey}, 200, `"object":"chat.completion"`},
		{"openai no key", "/v1/chat/completions", chat, nil, 401, `"type":"invalid_request_error"`},
		{"openai wrong key", "/v1/responses", chat, map[string]string{"Authorization": "Bearer sk-wrong-key-123"}, 401, `"code":"invalid_api_key"`},
		{"anthropic ok", "/v1/messages", msgs, map[string]string{"X-Api-Key": testKey, "Anthropic-Version": ver}, 200, `"type":"message"`},
		{"anthropic bearer", "/v1/messages", msgs, map[string]string{"Authorization": "Bearer " + testKey, "Anthropic-Version": ver}, 200, `"type":"message"`},
		{"anthropic no key", "/v1/messages", msgs, map[string]string{"Anthropic-Version": ver}, 401, `{"type":"error","error":{"type":"authentication_error"`},
		{"anthropic wrong key", "/v1/messages", msgs, map[string]string{"X-Api-Key": "nope", "Anthropic-Version": ver}, 401, `"message":"invalid x-api-key"`},
		{"anthropic no version", "/v1/messages", msgs, map[string]string{"X-Api-Key": testKey}, 400, `"message":"anthropic-version: header is required"`},
		{"gemini header", "/v1beta/models/g:generateContent", gem, map[string]string{"X-Goog-Api-Key": testKey}, 200, `"modelVersion":"g"`},
		{"gemini query key", "/v1beta/models/g:generateContent?key=" + testKey, gem, nil, 200, `"candidates"`},
		{"gemini no key", "/v1beta/models/g:generateContent", gem, nil, 403, `"status":"PERMISSION_DENIED"`},
		{"gemini wrong key", "/v1beta/models/g:generateContent", gem, map[string]string{"X-Goog-Api-Key": "x"}, 400, `"status":"INVALID_ARGUMENT"`},
		{"gemini unknown method", "/v1beta/models/g:embedContent", gem, map[string]string{"X-Goog-Api-Key": testKey}, 404, `"status":"NOT_FOUND"`},
		{"unknown path", "/v1/embeddings", chat, map[string]string{"Authorization": "Bearer " + testKey}, 404, `"error":{"message":`},
		{"bad JSON", "/v1/chat/completions", `{"model":`, map[string]string{"Authorization": "Bearer " + testKey}, 400, `"type":"invalid_request_error"`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			resp := post(t, srv.URL+tc.path, tc.hdr, tc.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		})
	}
	t.Run("GET is refused", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/v1/chat/completions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
}

func TestFaultsOverHTTP(t *testing.T) {
	srv, _ := newServer(t)
	oa := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	an := anthropic.NewClient(anthropicopt.WithBaseURL(srv.URL), anthropicopt.WithAPIKey(testKey), anthropicopt.WithMaxRetries(0))
	user := func(s string) []openai.ChatCompletionMessageParamUnion {
		return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(s)}
	}
	t.Run("429 reaches the SDK with retry-after", func(t *testing.T) {
		var hr *http.Response
		_, err := oa.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "m", Messages: user("x [sim:error=429]")}, option.WithResponseInto(&hr))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" || hr.Header.Get("Retry-After") == "" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("529 is anthropic's overloaded_error", func(t *testing.T) {
		_, err := an.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "m", MaxTokens: 9,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("[sim:error=529]"))}})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || !strings.Contains(apiErr.RawJSON(), "overloaded_error") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("cut breaks the SDK stream after 3 events", func(t *testing.T) {
		st := an.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{Model: "m", MaxTokens: 99,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("[sim:cut=3]"))}})
		n := 0
		for st.Next() {
			n++
		}
		// message_start, content_block_start, ping: the SDK does not surface ping.
		if st.Err() == nil || n != 2 {
			t.Fatalf("%d events, err %v", n, st.Err())
		}
	})
	t.Run("cut breaks a body", func(t *testing.T) {
		_, err := oa.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "m", Messages: user("[sim:cut=0]")})
		if err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("hang holds until the client gives up", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: user("[sim:hang]")})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Fatalf("%v after %v", err, time.Since(start))
		}
	})
	t.Run("slow streams flush each event", func(t *testing.T) {
		resp := post(t, srv.URL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer " + testKey},
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"[sim:slow=30ms,words=3]"}]}`)
		r := sse.NewReader(resp.Body)
		var at []time.Duration
		start := time.Now()
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
		}
		// role, 3 words, finish, [DONE]: each arrives on its own, not all at the end.
		if len(at) != 6 || at[0] > 25*time.Millisecond || at[5]-at[0] < 140*time.Millisecond {
			t.Fatalf("arrivals %v", at)
		}
	})
}

func TestGeminiStreamWithoutSSEIsAJSONArray(t *testing.T) {
	srv, _ := newServer(t)
	resp := post(t, srv.URL+"/v1beta/models/g:streamGenerateContent", map[string]string{"X-Goog-Api-Key": testKey},
		`{"contents":[{"parts":[{"text":"hi [sim:words=4]"}]}]}`)
	b, _ := io.ReadAll(resp.Body)
	var chunks []genai.GenerateContentResponse
	if err := json.Unmarshal(b, &chunks); err != nil || len(chunks) != 4 || chunks[3].UsageMetadata == nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// Pooled connections are reused across calls, streaming ones included.
func TestKeepAlive(t *testing.T) {
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(New(Options{APIKey: testKey}).Handler())
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	defer s.Close()
	for i := range 20 {
		stream := map[bool]string{false: "false", true: "true"}[i%2 == 0]
		resp := post(t, s.URL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer " + testKey},
			`{"model":"m","stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`)
		if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 20 sequential calls", n)
	}
}

func TestStartAndClose(t *testing.T) {
	s := New(Options{})
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp := post(t, s.URL()+"/v1/chat/completions", map[string]string{"Authorization": "Bearer any"},
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d", resp.StatusCode)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func functionOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = openai.String(callID)
	return item
}
