package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
	"github.com/tollgate-gw/tollgate/core/translate"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

const upstreamKey = "sk-matrix"

var respOpts = translate.ResponseOptions{Model: "client-model", RequestID: "req1", Created: time.Unix(1754000000, 0), IncludeUsage: true}

// exchange is one upstream call and its answer.
type exchange struct {
	status int
	body   []byte           // a non-streaming answer, or an error body
	events []protocol.Event // a streamed answer
}

// call sends an upstream body to vendorsim on protocol p's path.
func call(t *testing.T, base string, p protocol.ID, body []byte, stream bool) exchange {
	t.Helper()
	var path string
	h := http.Header{"Content-Type": {"application/json"}}
	switch p {
	case protocol.OpenAIChat:
		path = "/v1/chat/completions"
		h.Set("Authorization", "Bearer "+upstreamKey)
	case protocol.OpenAIResponses:
		path = "/v1/responses"
		h.Set("Authorization", "Bearer "+upstreamKey)
	case protocol.AnthropicMessages:
		path = "/v1/messages"
		h.Set("x-api-key", upstreamKey)
		h.Set("anthropic-version", "2023-06-01")
	case protocol.GeminiNative:
		path = "/v1beta/models/up-model:generateContent"
		if stream {
			path = "/v1beta/models/up-model:streamGenerateContent?alt=sse"
		}
		h.Set("x-goog-api-key", upstreamKey)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ex := exchange{status: resp.StatusCode}
	if resp.StatusCode != 200 || !stream {
		ex.body, err = io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	r := sse.NewReader(resp.Body)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return ex
		}
		if err != nil {
			t.Fatal(err)
		}
		ev.Data = bytes.Clone(ev.Data)
		ex.events = append(ex.events, ev)
	}
}

// TestMatrix runs every case through every pair, streaming and not.
func TestMatrix(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: upstreamKey}).Handler())
	t.Cleanup(srv.Close)
	for _, from := range protocol.All {
		for _, to := range protocol.All {
			if from == to {
				continue
			}
			tr, ok := translate.Lookup(from, to)
			if !ok {
				t.Fatalf("no translator %s -> %s", from, to)
			}
			t.Run(translate.HeaderValue(from, to), func(t *testing.T) {
				t.Parallel()
				for _, c := range cases {
					for _, stream := range []bool{false, true} {
						name := c.name
						if stream {
							name += "/stream"
						}
						t.Run(name, func(t *testing.T) { runCase(t, srv.URL, tr, c, stream) })
					}
				}
			})
		}
	}
}

func runCase(t *testing.T, base string, tr translate.Translator, c tc, stream bool) {
	from, to := tr.From(), tr.To()
	body := build(from, c, stream)
	if _, err := codec.For(from).Inspect([]byte(body)); err != nil {
		t.Fatalf("the case's client body is invalid: %v\n%s", err, body)
	}
	up, warnings, err := tr.Request([]byte(body), translate.RequestOptions{Model: "up-model", Stream: stream})
	if err != nil {
		t.Fatalf("Request: %v", err)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings %q for a request every protocol carries", warnings)
	}
	// The upstream body is valid in its own protocol, and carries what
	// the client sent.
	req, err := codec.For(to).Inspect(up)
	if err != nil {
		t.Fatalf("the upstream body is invalid %s: %v\n%s", to, err, up)
	}
	if req.HasImages != c.image {
		t.Errorf("upstream body has images %v, want %v:\n%s", req.HasImages, c.image, up)
	}
	if to != protocol.GeminiNative && (req.Model != "up-model" || req.Stream != stream) {
		t.Errorf("upstream model %q stream %v", req.Model, req.Stream)
	}
	if req.MaxTokens != c.maxTokens {
		t.Errorf("upstream max tokens %d, want %d", req.MaxTokens, c.maxTokens)
	}
	if !strings.Contains(string(up), "You are terse.") {
		t.Errorf("the system prompt was lost:\n%s", up)
	}

	ex := call(t, base, to, up, stream)
	if c.errStatus != 0 {
		checkError(t, from, to, ex, c.errStatus)
		return
	}
	if ex.status != 200 {
		t.Fatalf("upstream %s answered %d: %s\nrequest: %s", to, ex.status, ex.body, up)
	}
	var upstream, client norm
	if !stream {
		upstream = readAnswer(t, to, ex.body)
		out, err := tr.Response(ex.body, respOpts)
		if err != nil {
			t.Fatalf("Response: %v", err)
		}
		client = readAnswer(t, from, out)
		checkEcho(t, from, out)
	} else {
		upstream = readStream(t, to, ex.events)
		client = readStream(t, from, replay(t, tr, to, ex.events))
	}
	compare(t, from, to, c, upstream, client)
}

// replay feeds an upstream stream through the translator, checking that
// every upstream text delta reaches the client at once, in the same call.
func replay(t *testing.T, tr translate.Translator, up protocol.ID, evs []protocol.Event) []protocol.Event {
	t.Helper()
	var out []protocol.Event
	emit := func(ev protocol.Event) error {
		if !sse.IsDone(ev) && !json.Valid(ev.Data) {
			t.Fatalf("emitted invalid JSON: %s", ev.Data)
		}
		out = append(out, protocol.Event{Name: ev.Name, Data: bytes.Clone(ev.Data)})
		return nil
	}
	s := tr.NewStream(respOpts)
	track := codec.For(up).NewStream()
	for _, ev := range evs {
		before := len(out)
		if err := s.Event(ev, emit); err != nil {
			t.Fatalf("Event(%s): %v", ev.Data, err)
		}
		track.Observe(ev)
		if textDelta(up, ev) && len(out) == before {
			t.Fatalf("the text of %s %s was held back", ev.Name, ev.Data)
		}
	}
	if !track.Complete() {
		t.Fatalf("the upstream stream is not complete")
	}
	if err := s.End(emit); err != nil {
		t.Fatal(err)
	}
	return out
}

// compare checks that the client read what the upstream said.
func compare(t *testing.T, from, to protocol.ID, c tc, up, client norm) {
	t.Helper()
	if client.text != up.text {
		t.Errorf("text %q, upstream %q", client.text, up.text)
	}
	if client.finish != up.finish || client.finish != c.finish {
		t.Errorf("finish %q, upstream %q, case %q", client.finish, up.finish, c.finish)
	}
	if c.finish == "stop" && client.text == "" {
		t.Errorf("no text")
	}
	if len(client.calls) != len(up.calls) {
		t.Fatalf("calls %+v, upstream %+v", client.calls, up.calls)
	}
	for i, cc := range client.calls {
		u := up.calls[i]
		if cc.name != u.name || !reflect.DeepEqual(cc.args, u.args) || cc.id == "" || (u.id != "" && cc.id != u.id) {
			t.Errorf("call %d %+v, upstream %+v", i, cc, u)
		}
	}
	if c.finish == "tool_calls" && (len(client.calls) != 1 || client.calls[0].name != "get_weather") {
		t.Errorf("calls %+v, want get_weather", client.calls)
	}
	cu, uu := client.usage, up.usage
	cu.Reported, uu.Reported = false, false
	reasoning := c.reasoning
	if from == protocol.AnthropicMessages || to == protocol.AnthropicMessages {
		// The messages protocol counts thinking in its output tokens and
		// has no field for them apart: nothing to carry either way (the
		// gateway bills from the upstream's own usage).
		uu.ReasoningTokens, reasoning = 0, 0
	}
	if cu != uu {
		t.Errorf("usage %+v, upstream %+v", cu, uu)
	}
	if cu.CachedTokens != c.cached || cu.ReasoningTokens != reasoning || cu.InputTokens == 0 || cu.OutputTokens == 0 {
		t.Errorf("usage %+v, want cached %d reasoning %d", cu, c.cached, c.reasoning)
	}
}

// checkEcho checks the ids and model a translated answer carries.
func checkEcho(t *testing.T, p protocol.ID, out []byte) {
	t.Helper()
	r := gjson.ParseBytes(out)
	model := r.Get("model").String()
	if p == protocol.GeminiNative {
		model = r.Get("modelVersion").String()
	}
	if model != respOpts.Model {
		t.Errorf("model %q, want the client's %q", model, respOpts.Model)
	}
}

// checkError checks an upstream refusal as the client gets it: the
// pipeline reads the message with the upstream's codec and renders it in
// the client's error shape, with the upstream's status.
func checkError(t *testing.T, from, to protocol.ID, ex exchange, status int) {
	t.Helper()
	if ex.status != status {
		t.Fatalf("upstream status %d, want %d: %s", ex.status, status, ex.body)
	}
	msg := codec.For(to).ErrorMessage(ex.body)
	if msg == "" {
		t.Fatalf("no message in the upstream error %s", ex.body)
	}
	body := apierr.Body(from, apierr.FromUpstream(ex.status, msg))
	r := gjson.ParseBytes(body)
	switch from {
	case protocol.AnthropicMessages:
		if r.Get("type").String() != "error" || r.Get("error.type").String() != "rate_limit_error" || r.Get("error.message").String() != msg {
			t.Errorf("messages error %s", body)
		}
	case protocol.GeminiNative:
		if r.Get("error.code").Int() != int64(status) || r.Get("error.status").String() != "RESOURCE_EXHAUSTED" || r.Get("error.message").String() != msg {
			t.Errorf("generate-content error %s", body)
		}
	default:
		if r.Get("error.code").String() != apierr.RateLimitExceeded || r.Get("error.type").String() != "rate_limit_error" || r.Get("error.message").String() != msg {
			t.Errorf("completions-style error %s", body)
		}
	}
}
