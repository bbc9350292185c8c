package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

func openaiClient(g *testgw.Gateway, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func TestChatCompletionsWithOpenAISDK(t *testing.T) {
	g, acct, key := startDefault(t)
	w := wallet{g: g, acct: acct, key: key}
	client := openaiClient(g, key)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("non-streaming", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "sim-chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello, Tollgate!")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Choices[0].FinishReason != "stop" {
			t.Fatalf("response %+v", resp)
		}
		u := resp.Usage
		if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Fatalf("usage %+v", u)
		}
		// sim-chat: 0.10 and 0.40 per million, to the nano.
		want := money.Nano(u.PromptTokens*100 + u.CompletionTokens*400)
		if spent := w.settled(t, 1); spent != want {
			t.Fatalf("spent %s, want %s", spent, want)
		}
	})

	t.Run("streaming with include_usage", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "sim-chat",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream to me [sim:chunks=8]")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if chunks < 4 || acc.Choices[0].Message.Content == "" || acc.Usage.CompletionTokens == 0 {
			t.Fatalf("chunks %d, accumulated %+v", chunks, acc.ChatCompletion)
		}
		if row := w.last(t, 2); checkCost(t, row) != money.Nano(acc.Usage.PromptTokens*100+acc.Usage.CompletionTokens*400) {
			t.Fatalf("row %v, usage %+v", row, acc.Usage)
		}
		w.settled(t, 2)
	})

	t.Run("streaming without include_usage still bills", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:    "sim-chat",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("no usage please")},
		})
		sawUsage := false
		for stream.Next() {
			if stream.Current().Usage.TotalTokens > 0 {
				sawUsage = true
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if sawUsage {
			t.Fatal("a usage chunk reached a client that did not ask for one")
		}
		// Billed on the usage the gateway asked the upstream for.
		if row := w.last(t, 3); row["status"] != "success" || checkCost(t, row) == 0 {
			t.Fatalf("row %v", row)
		}
		w.settled(t, 3)
	})

	weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Current weather for a city"),
		Parameters: shared.FunctionParameters{
			"type": "object",
			"properties": map[string]any{
				"city": map[string]any{"type": "string"},
				"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			},
			"required": []string{"city", "unit"},
		},
	})

	for _, streaming := range []bool{false, true} {
		name := "tool call and tool result turn"
		if streaming {
			name += " (streaming)"
		}
		t.Run(name, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{
				Model:    "sim-chat",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Use the get_weather tool for Paris.")},
				Tools:    []openai.ChatCompletionToolUnionParam{weather},
			}
			var msg openai.ChatCompletionMessage
			var finish string
			if streaming {
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				acc := openai.ChatCompletionAccumulator{}
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
			} else {
				resp, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				msg, finish = resp.Choices[0].Message, resp.Choices[0].FinishReason
			}
			if finish != "tool_calls" || len(msg.ToolCalls) != 1 {
				t.Fatalf("finish %q, message %+v", finish, msg)
			}
			tc := msg.ToolCalls[0]
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || tc.Function.Name != "get_weather" {
				t.Fatalf("tool call %+v: %v", tc, err)
			}
			if _, ok := args["city"].(string); !ok || (args["unit"] != "celsius" && args["unit"] != "fahrenheit") {
				t.Fatalf("arguments do not fit the schema: %v", args)
			}
			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"temp_c": 21}`, tc.ID))
			resp, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Choices[0].FinishReason != "stop" || !strings.Contains(resp.Choices[0].Message.Content, "21") {
				t.Fatalf("after tool result: %+v", resp.Choices[0])
			}
		})
	}

	t.Run("every call left a row, exactly billed, and no hold", func(t *testing.T) {
		for _, r := range w.rows(t, 7) {
			if r["status"] != "success" || r["request_id"] == "" {
				t.Fatalf("row %v", r)
			}
		}
		w.settled(t, 7)
	})
}
