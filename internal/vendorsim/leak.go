package vendorsim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/sim"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// leakMessage is the error message of Options.Leak: the base URL the call
// reached, its host:port alone, and the key it carried, in the clear.
func leakMessage(r *http.Request) string {
	return "upstream http://" + r.Host + "/v1 failed for key " + callerKey(r) +
		" (dial " + r.Host + "): simulated failure"
}

// callerKey is the key of a call in any of the vendors' auth forms.
func callerKey(r *http.Request) string {
	for _, h := range [...]string{"X-Api-Key", "X-Goog-Api-Key"} {
		if k := r.Header.Get(h); k != "" {
			return k
		}
	}
	if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return k
	}
	return r.URL.Query().Get("key")
}

// streamError is the vendor's in-stream error event: Anthropic's `event:
// error`, the Responses API's `error` event (seq is its sequence_number),
// and the {"error":{...}} chunk of chat completions and Gemini.
func streamError(p protocol.ID, seq int, msg string) vendor.Event {
	switch p {
	case protocol.AnthropicMessages:
		return vendor.Event{Name: "error", Data: sim.ErrorBody(p, 500, "", msg)}
	case protocol.OpenAIResponses:
		m, _ := json.Marshal(msg)
		b := []byte(`{"type":"error","code":"server_error","message":`)
		b = append(b, m...)
		b = append(b, `,"param":null,"sequence_number":`...)
		b = strconv.AppendInt(b, int64(seq), 10)
		return vendor.Event{Name: "error", Data: append(b, '}')}
	}
	return vendor.Event{Data: sim.ErrorBody(p, 500, "", msg)}
}
