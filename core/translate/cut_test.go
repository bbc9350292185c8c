package translate

import (
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestCutRawKeepsCharactersWhole(t *testing.T) {
	for _, tc := range []struct {
		desc, raw string
		n         int64
		want      string
	}{
		{"plain", "abcdef", 3, "abc"},
		{"an escape is one character", `a\nb\"c`, 3, `a\nb`},
		{"a \\u escape", `\u00e9t\u00e9`, 2, `\u00e9t`},
		{"a surrogate pair is one character", `\ud83d\ude00x`, 1, `\ud83d\ude00`},
		{"utf-8", "héllo", 2, "hé"},
		{"shorter than n", "ab", 5, "ab"},
		{"zero", "ab", 0, ""},
	} {
		got, _ := cutRaw([]byte(tc.raw), tc.n)
		if string(got) != tc.want {
			t.Errorf("%s: cutRaw(%q, %d) = %q, want %q", tc.desc, tc.raw, tc.n, got, tc.want)
		}
	}
}

func TestCutAnswer(t *testing.T) {
	o := ResponseOptions{Model: "gw-model", RequestID: "req_1", Created: time.Unix(1700000000, 0)}
	u := protocol.Usage{InputTokens: 7, OutputTokens: 5}
	chat := []byte(`{"id":"x","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"one two three four five six"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":900,"total_tokens":907}}`)

	out, err := CutAnswer(protocol.OpenAIChat, protocol.OpenAIChat, chat, 7, u, o)
	if err != nil {
		t.Fatal(err)
	}
	r := gjson.ParseBytes(out)
	if r.Get("choices.0.message.content").Str != "one two" || r.Get("choices.0.finish_reason").Str != "length" ||
		r.Get("usage.completion_tokens").Int() != 5 || r.Get("model").Str != "gw-model" {
		t.Errorf("native cut: %s", out)
	}

	out, err = CutAnswer(protocol.AnthropicMessages, protocol.OpenAIChat, chat, 3, u, o)
	if err != nil {
		t.Fatal(err)
	}
	r = gjson.ParseBytes(out)
	if r.Get("content.0.text").Str != "one" || r.Get("stop_reason").Str != "max_tokens" || r.Get("usage.output_tokens").Int() != 5 {
		t.Errorf("translated cut: %s", out)
	}

	// A tool call that no longer fits is dropped, not cut.
	call := []byte(`{"id":"x","object":"chat.completion","created":1,"model":"up","choices":[{"index":0,"message":{"role":"assistant","content":"ok","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}]}`)
	out, err = CutAnswer(protocol.OpenAIChat, protocol.OpenAIChat, call, 4, u, o)
	if err != nil {
		t.Fatal(err)
	}
	if r := gjson.ParseBytes(out); r.Get("choices.0.message.tool_calls").Exists() || r.Get("choices.0.message.content").Str != "ok" {
		t.Errorf("tool call kept: %s", out)
	}
}

func TestStreamStopTranslated(t *testing.T) {
	tr, _ := Lookup(protocol.AnthropicMessages, protocol.OpenAIChat)
	s := tr.NewStream(ResponseOptions{Model: "gw-model", RequestID: "req_1", Created: time.Unix(1, 0)})
	var names []string
	emit := func(e protocol.Event) error { names = append(names, e.Name); return nil }
	chunk := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"up","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}`
	if err := s.Event(protocol.Event{Data: []byte(chunk)}, emit); err != nil {
		t.Fatal(err)
	}
	var last []byte
	if err := s.Stop(protocol.Usage{InputTokens: 3, OutputTokens: 50}, func(e protocol.Event) error {
		names = append(names, e.Name)
		last = append(last[:0], e.Data...)
		if e.Name == "message_delta" && (gjson.GetBytes(e.Data, "delta.stop_reason").Str != "max_tokens" ||
			gjson.GetBytes(e.Data, "usage.output_tokens").Int() != 50) {
			t.Errorf("message_delta: %s", e.Data)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if names[len(names)-1] != "message_stop" {
		t.Errorf("events %v, last %s", names, last)
	}
}
