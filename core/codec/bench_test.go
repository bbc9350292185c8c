package codec

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
)

func benchInspect(b *testing.B, p protocol.ID, fixture string) {
	body := readFixture(b, fixture)
	c := For(p)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := c.Inspect(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInspectChat(b *testing.B) {
	benchInspect(b, protocol.OpenAIChat, "requests/chat_tools_vision.json")
}

func BenchmarkInspectMessages(b *testing.B) {
	benchInspect(b, protocol.AnthropicMessages, "requests/messages_claude_code.json")
}

func BenchmarkInspectResponses(b *testing.B) {
	benchInspect(b, protocol.OpenAIResponses, "requests/responses_codex.json")
}

func BenchmarkInspectGemini(b *testing.B) {
	benchInspect(b, protocol.GeminiNative, "requests/gemini_multimodal.json")
}

func benchRewrite(b *testing.B, p protocol.ID, fixture string, opts RewriteOptions) {
	body := readFixture(b, fixture)
	c := For(p)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := c.Rewrite(body, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRewriteChat(b *testing.B) {
	benchRewrite(b, protocol.OpenAIChat, "requests/chat_tools_vision.json",
		RewriteOptions{Model: "gpt-4o-mini-2024-07-18", MaxTokens: 16384, StreamUsage: true})
}

func BenchmarkRewriteMessages(b *testing.B) {
	benchRewrite(b, protocol.AnthropicMessages, "requests/messages_claude_code.json",
		RewriteOptions{Model: "claude-sonnet-4-5-20250929", MaxTokens: 64000})
}

func BenchmarkRewriteResponses(b *testing.B) {
	benchRewrite(b, protocol.OpenAIResponses, "requests/responses_codex.json",
		RewriteOptions{Model: "gpt-5-codex-2025-09-15", MaxTokens: 128000})
}

func BenchmarkRewriteGemini(b *testing.B) {
	benchRewrite(b, protocol.GeminiNative, "requests/gemini_multimodal.json", RewriteOptions{MaxTokens: 65536})
}

// benchStream replays a recorded stream per iteration; the per-op figures
// are for the whole stream (see the event count in the name's fixture).
func benchStream(b *testing.B, p protocol.ID, fixture string) {
	var events []protocol.Event
	r := sse.NewReader(bytes.NewReader(readFixture(b, fixture)))
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		events = append(events, ev)
	}
	c := For(p)
	b.ReportAllocs()
	for b.Loop() {
		st := c.NewStream()
		for _, ev := range events {
			st.Observe(ev)
		}
		if !st.Complete() {
			b.Fatal("stream not complete")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}

func BenchmarkStreamObserveChat(b *testing.B) {
	benchStream(b, protocol.OpenAIChat, "streams/chat_usage.sse")
}

func BenchmarkStreamObserveMessages(b *testing.B) {
	benchStream(b, protocol.AnthropicMessages, "streams/messages_thinking_tool.sse")
}

func BenchmarkStreamObserveResponses(b *testing.B) {
	benchStream(b, protocol.OpenAIResponses, "streams/responses_function_call.sse")
}

func BenchmarkStreamObserveGemini(b *testing.B) {
	benchStream(b, protocol.GeminiNative, "streams/gemini_thinking.sse")
}
