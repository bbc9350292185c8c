package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	anthropic2 "github.com/anthropics/anthropic-sdk-go/v2"
	anthropic2opt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"
)

// turn is one answer as an official SDK decoded it.
type turn struct {
	text     string
	toolName string
	toolID   string
	toolArgs string // a JSON object
	finish   string // the protocol's own stop reason or status
	header   http.Header
	usage    sdkUsage
}

// sdkUsage is the usage an SDK decoded, in the gateway's terms: input
// counts cached tokens, output counts reasoning tokens.
type sdkUsage struct {
	input, output, cached int64
}

// sdkClient drives one official SDK through a conversation: a prompt (the
// get_weather tool offered or not), then the tool's result for the call the
// previous answer made.
type sdkClient interface {
	ask(ctx context.Context, prompt string, tools, stream bool) (turn, error)
	answer(ctx context.Context, result string, stream bool) (turn, error)
}

// sdkKinds names the clients; newSDK builds one.
var sdkKinds = []string{"openai chat", "openai responses", "anthropic v1", "anthropic v2", "genai"}

func newSDK(t *testing.T, kind, baseURL, key, model string) sdkClient {
	t.Helper()
	switch kind {
	case "openai chat":
		return &chatSDK{c: openai.NewClient(option.WithBaseURL(baseURL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0)), model: model}
	case "openai responses":
		return &responsesSDK{c: openai.NewClient(option.WithBaseURL(baseURL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0)), model: model}
	case "anthropic v1":
		return &anthropicSDK{c: anthropic.NewClient(anthropicopt.WithBaseURL(baseURL), anthropicopt.WithAPIKey(key), anthropicopt.WithMaxRetries(0)), model: model}
	case "anthropic v2":
		// v2 sends the key as Authorization: Bearer.
		return &anthropic2SDK{c: anthropic2.NewClient(anthropic2opt.WithoutEnvironmentDefaults(), anthropic2opt.WithBaseURL(baseURL),
			anthropic2opt.WithAuthToken(key), anthropic2opt.WithMaxRetries(0)), model: model}
	case "genai":
		c, err := genai.NewClient(t.Context(), &genai.ClientConfig{
			APIKey: key, Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
		})
		if err != nil {
			t.Fatal(err)
		}
		return &genaiSDK{c: c, model: model}
	}
	t.Fatalf("no SDK %q", kind)
	return nil
}

// weatherSchema is the get_weather tool's parameters in every protocol.
var weatherSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"city": map[string]any{"type": "string"},
		"unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
	},
	"required": []any{"city", "unit"},
}

// chatSDK: openai-go chat completions.
type chatSDK struct {
	c      openai.Client
	model  string
	params openai.ChatCompletionNewParams
	last   openai.ChatCompletionMessage
}

func (s *chatSDK) ask(ctx context.Context, prompt string, tools, stream bool) (turn, error) {
	s.params = openai.ChatCompletionNewParams{
		Model:    s.model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	}
	if tools {
		s.params.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Description: openai.String("Current weather for a city"), Parameters: weatherSchema,
		})}
	}
	return s.send(ctx, stream)
}

func (s *chatSDK) answer(ctx context.Context, result string, stream bool) (turn, error) {
	if len(s.last.ToolCalls) == 0 {
		return turn{}, errors.New("no tool call to answer")
	}
	s.params.Messages = append(s.params.Messages, s.last.ToParam(), openai.ToolMessage(result, s.last.ToolCalls[0].ID))
	return s.send(ctx, stream)
}

func (s *chatSDK) send(ctx context.Context, stream bool) (turn, error) {
	var hr *http.Response
	var msg openai.ChatCompletionMessage
	var finish string
	var u openai.CompletionUsage
	if stream {
		s.params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := s.c.Chat.Completions.NewStreaming(ctx, s.params, option.WithResponseInto(&hr))
		acc := openai.ChatCompletionAccumulator{}
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			return turn{}, err
		}
		if len(acc.Choices) == 0 {
			return turn{}, errors.New("a stream without choices")
		}
		if acc.Usage.CompletionTokens == 0 {
			return turn{}, errors.New("the stream had no usage chunk although include_usage was asked")
		}
		msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
		u = acc.Usage
	} else {
		resp, err := s.c.Chat.Completions.New(ctx, s.params, option.WithResponseInto(&hr))
		if err != nil {
			return turn{}, err
		}
		if len(resp.Choices) == 0 || resp.Usage.TotalTokens == 0 {
			return turn{}, errors.New("an answer without choices or usage")
		}
		msg, finish = resp.Choices[0].Message, resp.Choices[0].FinishReason
		u = resp.Usage
	}
	s.last = msg
	tr := turn{text: msg.Content, finish: finish, header: hr.Header,
		usage: sdkUsage{u.PromptTokens, u.CompletionTokens, u.PromptTokensDetails.CachedTokens}}
	if len(msg.ToolCalls) > 0 {
		tc := msg.ToolCalls[0]
		tr.toolName, tr.toolID, tr.toolArgs = tc.Function.Name, tc.ID, tc.Function.Arguments
	}
	return tr, nil
}

// responsesSDK: openai-go responses. Conversation state is not stored by the
// gateway, so the whole history goes in input each turn.
type responsesSDK struct {
	c       openai.Client
	model   string
	input   []json.RawMessage
	tools   bool
	call    gjson.Result
	pending bool
}

func (s *responsesSDK) ask(ctx context.Context, prompt string, tools, stream bool) (turn, error) {
	msg, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": prompt}}})
	s.input, s.tools = []json.RawMessage{msg}, tools
	return s.send(ctx, stream)
}

func (s *responsesSDK) answer(ctx context.Context, result string, stream bool) (turn, error) {
	if !s.pending {
		return turn{}, errors.New("no tool call to answer")
	}
	out, _ := json.Marshal(map[string]any{"type": "function_call_output", "call_id": s.call.Get("call_id").String(), "output": result})
	call, _ := json.Marshal(map[string]any{"type": "function_call", "call_id": s.call.Get("call_id").String(),
		"name": s.call.Get("name").String(), "arguments": s.call.Get("arguments").String()})
	s.input = append(s.input, call, out)
	return s.send(ctx, stream)
}

func (s *responsesSDK) send(ctx context.Context, stream bool) (turn, error) {
	raw, _ := json.Marshal(s.input)
	var in responses.ResponseInputParam
	if err := json.Unmarshal(raw, &in); err != nil {
		return turn{}, err
	}
	params := responses.ResponseNewParams{
		Model:        s.model,
		Instructions: openai.String("You are terse."),
		Input:        responses.ResponseNewParamsInputUnion{OfInputItemList: in},
	}
	if s.tools {
		params.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", weatherSchema, false)}
	}
	var hr *http.Response
	var resp responses.Response
	if stream {
		st := s.c.Responses.NewStreaming(ctx, params, option.WithResponseInto(&hr))
		seq, deltas := int64(-1), ""
		for st.Next() {
			ev := st.Current()
			if ev.SequenceNumber <= seq {
				return turn{}, errors.New("sequence_number not increasing")
			}
			seq = ev.SequenceNumber
			switch ev.Type {
			case "response.output_text.delta":
				deltas += ev.Delta
			case "response.completed", "response.incomplete":
				resp = ev.Response
			}
		}
		if err := st.Err(); err != nil {
			return turn{}, err
		}
		if resp.ID == "" {
			return turn{}, errors.New("the stream ended without response.completed")
		}
		if deltas != resp.OutputText() {
			return turn{}, errors.New("the deltas " + deltas + " differ from the completed text " + resp.OutputText())
		}
	} else {
		r, err := s.c.Responses.New(ctx, params, option.WithResponseInto(&hr))
		if err != nil {
			return turn{}, err
		}
		resp = *r
	}
	if resp.Usage.TotalTokens == 0 {
		return turn{}, errors.New("an answer without usage")
	}
	tr := turn{text: resp.OutputText(), finish: string(resp.Status), header: hr.Header,
		usage: sdkUsage{resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.InputTokensDetails.CachedTokens}}
	s.pending = false
	for _, item := range resp.Output {
		if item.Type == "function_call" {
			s.call, s.pending = gjson.Parse(item.RawJSON()), true
			tr.toolName, tr.toolID, tr.toolArgs = item.Name, item.CallID, s.call.Get("arguments").String()
			break
		}
	}
	return tr, nil
}

// anthropicSDK: anthropic-sdk-go (v1), key in x-api-key.
type anthropicSDK struct {
	c      anthropic.Client
	model  string
	params anthropic.MessageNewParams
	last   anthropic.Message
}

func (s *anthropicSDK) ask(ctx context.Context, prompt string, tools, stream bool) (turn, error) {
	s.params = anthropic.MessageNewParams{
		Model:     anthropic.Model(s.model),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
	if tools {
		s.params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name: "get_weather", Description: anthropic.String("Current weather for a city"),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"city", "unit"}},
		}}}
	}
	return s.send(ctx, stream)
}

func (s *anthropicSDK) answer(ctx context.Context, result string, stream bool) (turn, error) {
	id := ""
	for _, b := range s.last.Content {
		if b.Type == "tool_use" {
			id = b.ID
		}
	}
	if id == "" {
		return turn{}, errors.New("no tool call to answer")
	}
	s.params.Messages = append(s.params.Messages, s.last.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, result, false)))
	return s.send(ctx, stream)
}

func (s *anthropicSDK) send(ctx context.Context, stream bool) (turn, error) {
	var hr *http.Response
	var msg anthropic.Message
	if stream {
		st := s.c.Messages.NewStreaming(ctx, s.params, anthropicopt.WithResponseInto(&hr))
		stopped := false
		for st.Next() {
			ev := st.Current()
			if err := msg.Accumulate(ev); err != nil {
				return turn{}, err
			}
			stopped = stopped || ev.Type == "message_stop"
		}
		if err := st.Err(); err != nil {
			return turn{}, err
		}
		if !stopped {
			return turn{}, errors.New("the stream ended without message_stop")
		}
	} else {
		m, err := s.c.Messages.New(ctx, s.params, anthropicopt.WithResponseInto(&hr))
		if err != nil {
			return turn{}, err
		}
		msg = *m
	}
	if msg.Usage.OutputTokens == 0 || msg.Usage.InputTokens == 0 {
		return turn{}, errors.New("an answer without usage")
	}
	s.last = msg
	u := msg.Usage
	tr := turn{finish: string(msg.StopReason), header: hr.Header,
		usage: sdkUsage{u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, u.OutputTokens, u.CacheReadInputTokens}}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			tr.text += b.Text
		case "tool_use":
			tr.toolName, tr.toolID, tr.toolArgs = b.Name, b.ID, string(b.Input)
		}
	}
	return tr, nil
}

// anthropic2SDK: anthropic-sdk-go/v2, key as Authorization: Bearer.
type anthropic2SDK struct {
	c      anthropic2.Client
	model  string
	params anthropic2.MessageNewParams
	last   anthropic2.Message
}

func (s *anthropic2SDK) ask(ctx context.Context, prompt string, tools, stream bool) (turn, error) {
	s.params = anthropic2.MessageNewParams{
		Model:     anthropic2.Model(s.model),
		MaxTokens: 256,
		Messages:  []anthropic2.MessageParam{anthropic2.NewUserMessage(anthropic2.NewTextBlock(prompt))},
	}
	if tools {
		s.params.Tools = []anthropic2.ToolUnionParam{{OfTool: &anthropic2.ToolParam{
			Name: "get_weather", Description: anthropic2.String("Current weather for a city"),
			InputSchema: anthropic2.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"city", "unit"}},
		}}}
	}
	return s.send(ctx, stream)
}

func (s *anthropic2SDK) answer(ctx context.Context, result string, stream bool) (turn, error) {
	id := ""
	for _, b := range s.last.Content {
		if b.Type == "tool_use" {
			id = b.ID
		}
	}
	if id == "" {
		return turn{}, errors.New("no tool call to answer")
	}
	s.params.Messages = append(s.params.Messages, s.last.ToParam(),
		anthropic2.NewUserMessage(anthropic2.NewToolResultBlock(id, result, false)))
	return s.send(ctx, stream)
}

func (s *anthropic2SDK) send(ctx context.Context, stream bool) (turn, error) {
	var hr *http.Response
	var msg anthropic2.Message
	if stream {
		st := s.c.Messages.NewStreaming(ctx, s.params, anthropic2opt.WithResponseInto(&hr))
		stopped := false
		for st.Next() {
			ev := st.Current()
			if err := msg.Accumulate(ev); err != nil {
				return turn{}, err
			}
			stopped = stopped || ev.Type == "message_stop"
		}
		if err := st.Err(); err != nil {
			return turn{}, err
		}
		if !stopped {
			return turn{}, errors.New("the stream ended without message_stop")
		}
	} else {
		m, err := s.c.Messages.New(ctx, s.params, anthropic2opt.WithResponseInto(&hr))
		if err != nil {
			return turn{}, err
		}
		msg = *m
	}
	if msg.Usage.OutputTokens == 0 || msg.Usage.InputTokens == 0 {
		return turn{}, errors.New("an answer without usage")
	}
	s.last = msg
	u := msg.Usage
	tr := turn{finish: string(msg.StopReason), header: hr.Header,
		usage: sdkUsage{u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, u.OutputTokens, u.CacheReadInputTokens}}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			tr.text += b.Text
		case "tool_use":
			tr.toolName, tr.toolID, tr.toolArgs = b.Name, b.ID, string(b.Input)
		}
	}
	return tr, nil
}

// genaiSDK: google.golang.org/genai on the Gemini API backend (key in
// x-goog-api-key, streams with ?alt=sse).
type genaiSDK struct {
	c        *genai.Client
	model    string
	contents []*genai.Content
	config   *genai.GenerateContentConfig
	last     *genai.Content
	call     *genai.FunctionCall
}

func (s *genaiSDK) ask(ctx context.Context, prompt string, tools, stream bool) (turn, error) {
	s.contents = []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)}
	s.config = &genai.GenerateContentConfig{MaxOutputTokens: 256}
	if tools {
		s.config.Tools = []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
			Name: "get_weather", Description: "Current weather for a city", ParametersJsonSchema: weatherSchema,
		}}}}
	}
	return s.send(ctx, stream)
}

func (s *genaiSDK) answer(ctx context.Context, result string, stream bool) (turn, error) {
	if s.call == nil {
		return turn{}, errors.New("no tool call to answer")
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(result), &res); err != nil {
		res = map[string]any{"content": result}
	}
	part := genai.NewPartFromFunctionResponse(s.call.Name, res)
	part.FunctionResponse.ID = s.call.ID
	s.contents = append(s.contents, s.last, genai.NewContentFromParts([]*genai.Part{part}, genai.RoleUser))
	return s.send(ctx, stream)
}

func (s *genaiSDK) send(ctx context.Context, stream bool) (turn, error) {
	var tr turn
	var usage *genai.GenerateContentResponseUsageMetadata
	s.last, s.call = &genai.Content{Role: genai.RoleModel}, nil
	add := func(r *genai.GenerateContentResponse) {
		if tr.header == nil && r.SDKHTTPResponse != nil {
			tr.header = r.SDKHTTPResponse.Headers
		}
		if r.UsageMetadata != nil {
			usage = r.UsageMetadata
		}
		if len(r.Candidates) == 0 || r.Candidates[0].Content == nil {
			return
		}
		cand := r.Candidates[0]
		if cand.FinishReason != "" {
			tr.finish = string(cand.FinishReason)
		}
		for _, p := range cand.Content.Parts {
			s.last.Parts = append(s.last.Parts, p)
			if p.Text != "" && !p.Thought {
				tr.text += p.Text
			}
			if p.FunctionCall != nil && s.call == nil {
				s.call = p.FunctionCall
				args, _ := json.Marshal(p.FunctionCall.Args)
				tr.toolName, tr.toolID, tr.toolArgs = p.FunctionCall.Name, p.FunctionCall.ID, string(args)
			}
		}
	}
	if stream {
		cfg := *s.config
		cfg.AutomaticContinuation = genai.Ptr(false)
		for r, err := range s.c.Models.GenerateContentStream(ctx, s.model, s.contents, &cfg) {
			if err != nil {
				return turn{}, err
			}
			add(r)
		}
	} else {
		r, err := s.c.Models.GenerateContent(ctx, s.model, s.contents, s.config)
		if err != nil {
			return turn{}, err
		}
		add(r)
	}
	if usage == nil || usage.CandidatesTokenCount == 0 || usage.PromptTokenCount == 0 {
		return turn{}, errors.New("an answer without usageMetadata")
	}
	if tr.finish == "" {
		return turn{}, errors.New("an answer without finishReason")
	}
	tr.usage = sdkUsage{int64(usage.PromptTokenCount + usage.ToolUsePromptTokenCount),
		int64(usage.CandidatesTokenCount + usage.ThoughtsTokenCount), int64(usage.CachedContentTokenCount)}
	return tr, nil
}

// checkToolCall checks a get_weather call whose arguments fit its schema.
func checkToolCall(t *testing.T, tr turn) {
	t.Helper()
	if tr.toolName != "get_weather" {
		t.Fatalf("no get_weather call: %+v", tr)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(tr.toolArgs), &args); err != nil {
		t.Fatalf("arguments %q: %v", tr.toolArgs, err)
	}
	if _, ok := args["city"].(string); !ok || (args["unit"] != "celsius" && args["unit"] != "fahrenheit") {
		t.Fatalf("arguments do not fit the schema: %v", args)
	}
}

// toolFinish is each protocol's stop reason for a tool call, textFinish for text.
var (
	toolFinish = map[string]string{"openai chat": "tool_calls", "openai responses": "completed",
		"anthropic v1": "tool_use", "anthropic v2": "tool_use", "genai": "STOP"}
	textFinish = map[string]string{"openai chat": "stop", "openai responses": "completed",
		"anthropic v1": "end_turn", "anthropic v2": "end_turn", "genai": "STOP"}
)

// sdkEndpoint is the path each SDK posts to (for raw checks).
func sdkProtocol(kind string) string {
	switch {
	case kind == "openai chat":
		return "openai_chat"
	case kind == "openai responses":
		return "openai_responses"
	case strings.HasPrefix(kind, "anthropic"):
		return "anthropic_messages"
	}
	return "gemini_native"
}
