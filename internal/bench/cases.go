package bench

import (
	"net/http"
)

// Case is one workload, sent once straight to the upstream and once
// through the gateway.
type Case struct {
	Name  string
	Title string
	// DirectMeans says what the baseline call is.
	DirectMeans string
	Streaming   bool
	Direct      Request
	Gateway     Request
	// Translation, when set, is the X-Protocol-Translation the gateway
	// must answer with.
	Translation string
}

// Model is the model id the bench config declares.
const Model = "bench-model"

var (
	completionsBody = []byte(`{"model":"` + Model + `","max_tokens":64,"messages":[{"role":"user","content":"Reply in a few words. [sim:words=16]"}]}`)
	streamBody      = []byte(`{"model":"` + Model + `","max_tokens":256,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Count slowly. [sim:chunks=20]"}]}`)
	messagesBody    = []byte(`{"model":"` + Model + `","max_tokens":64,"messages":[{"role":"user","content":"Reply in a few words. [sim:words=16]"}]}`)
	// messagesStreamBody is stream-20 as a messages-style client sends it.
	messagesStreamBody = []byte(`{"model":"` + Model + `","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Count slowly. [sim:chunks=20]"}]}`)
)

// Cases are the workloads of a run: upstream is the simulator's root URL,
// gateway the gateway's; upstreamKey and key authenticate to each.
func Cases(upstream, gateway, upstreamKey, key string) []Case {
	direct := http.Header{"Authorization": {"Bearer " + upstreamKey}, "Content-Type": {"application/json"}}
	viaGW := http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
	viaGWMessages := http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	completions := Request{URL: upstream + "/v1/chat/completions", Header: direct, Body: completionsBody, Expect: []byte(`"chat.completion"`)}
	return []Case{
		{
			Name:        "completions",
			Title:       "completions-style, non-streaming",
			DirectMeans: "the same request sent to the upstream's /v1/chat/completions",
			Direct:      completions,
			Gateway:     Request{URL: gateway + "/v1/chat/completions", Header: viaGW, Body: completionsBody, Expect: []byte(`"chat.completion"`)},
		},
		{
			Name:        "stream-20",
			Title:       "completions-style, streaming 20 content chunks and a usage chunk",
			DirectMeans: "the same streaming request sent to the upstream's /v1/chat/completions",
			Streaming:   true,
			Direct:      Request{URL: upstream + "/v1/chat/completions", Header: direct, Body: streamBody, Stream: true, Expect: []byte("[DONE]")},
			Gateway:     Request{URL: gateway + "/v1/chat/completions", Header: viaGW, Body: streamBody, Stream: true, Expect: []byte("[DONE]")},
		},
		{
			Name:        "messages-translated",
			Title:       "messages-style client, reverse-translated to the completions upstream, non-streaming",
			DirectMeans: "the completions upstream call itself (the direct call of the completions case): no messages-style upstream is involved",
			Direct:      completions,
			Gateway:     Request{URL: gateway + "/v1/messages", Header: viaGWMessages, Body: messagesBody, Expect: []byte(`"message"`)},
			Translation: "anthropic_messages_to_openai_chat",
		},
		{
			Name:        "messages-stream-translated",
			Title:       "messages-style client, streaming 20 content chunks, translated event by event from the completions upstream",
			DirectMeans: "the completions upstream stream itself (the direct call of the stream-20 case): no messages-style upstream is involved",
			Streaming:   true,
			Direct:      Request{URL: upstream + "/v1/chat/completions", Header: direct, Body: streamBody, Stream: true, Expect: []byte("[DONE]")},
			Gateway:     Request{URL: gateway + "/v1/messages", Header: viaGWMessages, Body: messagesStreamBody, Stream: true, Expect: []byte("message_stop")},
			Translation: "anthropic_messages_to_openai_chat",
		},
	}
}

// Config is the gateway config of a run: one openai channel to the
// upstream simulator, one model that messages-style clients reach by
// reverse translation, no limits (unset means unlimited).
func Config(upstream, upstreamKey, dataDir string) string {
	return ConfigFor(upstream, upstreamKey, dataDir, "", "")
}

// StorePostgres is Options.Store for a gateway on PostgreSQL.
const StorePostgres = "postgres"

// ConfigFor is Config with the store chosen: Badger in dataDir, or
// PostgreSQL at pgURL (dataDir then keeps the hosted files), with the
// account limits on.
func ConfigFor(upstream, upstreamKey, dataDir, storeKind, pgURL string) string {
	st := "store \"badger\" {\n  dir = " + quote(dataDir) + "\n}\n"
	if storeKind == StorePostgres {
		// Limits high enough never to refuse: on PostgreSQL they cost a
		// round trip each way, which the run should measure.
		st = "store \"postgres\" {\n  url = " + quote(pgURL) + "\n  dir = " + quote(dataDir) + "\n}\n" +
			"limits {\n  rpm         = 1000000000\n  concurrency = 1000000\n}\n"
	}
	return `# Written by tollgate-bench for one run.
server {
  listen = "127.0.0.1:0"
}
` + st + `channel "up" {
  vendor    = "openai"
  base_url  = ` + quote(upstream) + `
  api_key   = ` + quote(upstreamKey) + `
  families  = ["chat"]
  protocols = ["openai_chat"]
  models    = ["` + Model + `"]
}
model "` + Model + `" {
  owned_by       = "bench"
  translate_from = ["anthropic_messages"]
  price {
    input  = "1"
    output = "2"
  }
}
`
}

// quote writes s as an HCL string: no templates, escapes as in JSON.
func quote(s string) string {
	out := make([]byte, 0, len(s)+2)
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '$', '%':
			// "${" and "%{" start templates; doubling escapes them.
			if i+1 < len(s) && s[i+1] == '{' {
				out = append(out, c)
			}
			out = append(out, c)
		case '\n':
			out = append(out, '\\', 'n')
		default:
			out = append(out, c)
		}
	}
	return string(append(out, '"'))
}
