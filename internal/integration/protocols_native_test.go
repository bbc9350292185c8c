package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// nativeSuite drives every official SDK against a gateway whose model for
// that SDK has a channel speaking the SDK's protocol: a plain answer and a
// tool round trip, streaming and not, each billed on one row with no hold
// left.
func nativeSuite(t *testing.T, g *testgw.Gateway, models map[string]string) {
	for _, kind := range sdkKinds {
		model := models[sdkProtocol(kind)]
		for _, stream := range []bool{false, true} {
			mode := "non-streaming"
			if stream {
				mode = "streaming"
			}
			t.Run(kind+"/"+mode, func(t *testing.T) {
				t.Parallel()
				w := newWallet(g)
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				c := newSDK(t, kind, g.URL, w.key, model)
				tr, err := c.ask(ctx, "Hello, Tollgate! [sim:chunks=4]", false, stream)
				if err != nil {
					t.Fatal(err)
				}
				if tr.text == "" || tr.finish != textFinish[kind] || tr.toolName != "" {
					t.Fatalf("answer %+v", tr)
				}
				if tr.header.Get("X-Protocol-Translation") != "" || tr.header.Get("x-gateway-trace") == "" {
					t.Fatalf("headers %v", tr.header)
				}
				row := w.last(t, 1)
				checkRow(t, row, rowWant{status: "success", attempts: 1, billed: true})
				if str(row["request_id"]) != tr.header.Get("x-gateway-trace") {
					t.Errorf("row request_id %v, trace %s", row["request_id"], tr.header.Get("x-gateway-trace"))
				}
				w.settled(t, 1)
			})
			t.Run(kind+"/tool round trip/"+mode, func(t *testing.T) {
				t.Parallel()
				w := newWallet(g)
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				c := newSDK(t, kind, g.URL, w.key, model)
				tr, err := c.ask(ctx, "Use the get_weather tool for Paris.", true, stream)
				if err != nil {
					t.Fatal(err)
				}
				checkToolCall(t, tr)
				if tr.finish != toolFinish[kind] {
					t.Fatalf("tool call finish %q", tr.finish)
				}
				tr, err = c.answer(ctx, `{"temp_c": 21}`, stream)
				if err != nil {
					t.Fatal(err)
				}
				if tr.text == "" || tr.toolName != "" || tr.finish != textFinish[kind] {
					t.Fatalf("after the tool result: %+v", tr)
				}
				for _, row := range w.rows(t, 2) {
					checkRow(t, row, rowWant{status: "success", attempts: 1, billed: true})
				}
				w.settled(t, 2)
			})
		}
	}
}

// Every SDK on the embedded default, whose sim plugin speaks all four
// protocols natively.
func TestProtocolsNativeOnSimPlugin(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testgw.Options{})
	nativeSuite(t, g, map[string]string{
		"openai_chat": "gpt-4o-mini", "openai_responses": "gpt-5-codex",
		"anthropic_messages": "claude-sonnet-4-5", "gemini_native": "gemini-2.5-flash",
	})
}

// vendorsConfig wires the four real vendor plugins to one vendorsim:
// up-gpt (openai: chat and responses), up-claude (anthropic), up-gemini
// (gemini), up-chat (openai-compatible, chat only, reverse translation on)
// and up-chatonly (openai chat, no reverse translation).
func vendorsConfig(url string) string {
	return `
channel "openai" {
  vendor    = "openai"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["openai_chat", "openai_responses"]
  models    = ["up-gpt", "up-chatonly"]
}
channel "anthropic" {
  vendor    = "anthropic"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["anthropic_messages"]
  models    = ["up-claude"]
}
channel "gemini" {
  vendor    = "gemini"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["gemini_native"]
  models    = ["up-gemini"]
}
channel "compat" {
  vendor    = "openai-compatible"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["openai_chat"]
  models    = ["up-chat=sim-upstream-chat"]
}
model "up-gpt" {
  price {
    input  = "1"
    output = "2"
  }
}
model "up-chatonly" {
  price {
    input  = "1"
    output = "2"
  }
}
model "up-claude" {
  price {
    input  = "3"
    output = "15"
  }
}
model "up-gemini" {
  price {
    input  = "0.3"
    output = "2.5"
  }
}
model "up-chat" {
  translate_from = ["anthropic_messages", "openai_responses", "gemini_native"]
  price {
    input  = "0.5"
    output = "1.5"
  }
}
`
}

// Every SDK through the real vendor plugin of its protocol, against the
// vendors' wire formats.
func TestProtocolsNativeThroughVendorPlugins(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: vendorsConfig(up.URL)})
	t.Run("suite", func(t *testing.T) {
		nativeSuite(t, g, map[string]string{
			"openai_chat": "up-gpt", "openai_responses": "up-gpt",
			"anthropic_messages": "up-claude", "gemini_native": "up-gemini",
		})
	})
	// Each SDK call reached the upstream on its vendor's own path, with the
	// channel's key and never the client's.
	paths := map[string]bool{}
	for _, r := range up.requests() {
		paths[r.Path] = true
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, "sk-tollgate") {
					t.Errorf("the client's key reached the upstream in %s on %s", k, r.Path)
				}
			}
		}
		if !strings.Contains(r.Header.Get("Authorization")+r.Header.Get("x-api-key")+r.Header.Get("x-goog-api-key"), upstreamKey) {
			t.Errorf("no channel key on %s: %v", r.Path, r.Header)
		}
	}
	for _, p := range []string{"/v1/chat/completions", "/v1/responses", "/v1/messages",
		"/v1beta/models/up-gemini:generateContent", "/v1beta/models/up-gemini:streamGenerateContent"} {
		if !paths[p] {
			t.Errorf("no upstream call on %s (saw %v)", p, paths)
		}
	}
}
