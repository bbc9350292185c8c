package codec

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// fuzzInspect checks what must hold for any body: Inspect never panics;
// when it accepts a body, Rewrite yields valid JSON that Inspect accepts
// again with the new model and max tokens, and the other read-only paths
// never panic either.
func fuzzInspect(f *testing.F, p protocol.ID, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	c := For(p)
	f.Fuzz(func(t *testing.T, body []byte) {
		c.Usage(body)
		c.OutputChars(body)
		c.ErrorMessage(body)
		req, err := c.Inspect(body)
		if err != nil {
			return
		}
		orig := bytes.Clone(body)
		out, err := c.Rewrite(body, RewriteOptions{Model: "fuzz-\"model\"", MaxTokens: 777, StreamUsage: true})
		if err != nil {
			t.Fatalf("Rewrite failed on an accepted body: %v", err)
		}
		if !bytes.Equal(body, orig) {
			t.Fatal("Rewrite changed its input")
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("Rewrite produced invalid JSON: %s", out)
		}
		again, err := c.Inspect(out)
		if err != nil {
			t.Fatalf("rewritten body refused: %v\n%s", err, out)
		}
		if again.MaxTokens != 777 {
			t.Fatalf("rewritten MaxTokens = %d", again.MaxTokens)
		}
		if p != protocol.GeminiNative && again.Model != `fuzz-"model"` {
			t.Fatalf("rewritten Model = %q", again.Model)
		}
		if req.InputEstimate() < 0 {
			t.Fatal("negative estimate")
		}
	})
}

func FuzzInspectChat(f *testing.F) {
	fuzzInspect(f, protocol.OpenAIChat,
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}],"stream":true,"stream_options":{}}`,
		`{"model":"m","messages":[{"role":"system","content":"s"}],"tools":[{"type":"web_search"}],"max_tokens":5}`,
		`{}`)
}

func FuzzInspectMessages(f *testing.F) {
	fuzzInspect(f, protocol.AnthropicMessages,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"image"}]}]}]}`)
}

func FuzzInspectResponses(f *testing.F) {
	fuzzInspect(f, protocol.OpenAIResponses,
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}],"tools":[{"type":"web_search"}],"reasoning":{"effort":"low"}}`)
}

func FuzzInspectGemini(f *testing.F) {
	fuzzInspect(f, protocol.GeminiNative,
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
		`{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png"}}]}],"generation_config":{"max_output_tokens":3}}`)
}

// FuzzStreamObserve feeds one event to every protocol's tracker: it must
// never panic, and counts never go negative.
func FuzzStreamObserve(f *testing.F) {
	for _, s := range []string{
		`[DONE]`,
		`{"choices":[{"delta":{"content":"a\u00e9"}}],"usage":{"prompt_tokens":1}}`,
		`{"type":"message_delta","usage":{"output_tokens":3}}`,
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"response.completed","response":{"usage":{"input_tokens":1}}}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2}}`,
	} {
		f.Add("", []byte(s))
	}
	f.Add("message_start", []byte(`{"message":{"usage":{"input_tokens":-4}}}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		for _, p := range protocol.All {
			st := For(p).NewStream()
			st.Observe(protocol.Event{Name: name, Data: data})
			st.Observe(protocol.Event{Name: name, Data: data})
			u := st.Usage()
			if st.OutputChars() < 0 || u.InputTokens < 0 || u.OutputTokens < 0 {
				t.Fatalf("%s: negative count: %+v, chars %d", p, u, st.OutputChars())
			}
		}
	})
}
