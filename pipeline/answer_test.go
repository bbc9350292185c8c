package pipeline

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// brokenVendor answers a 200 whose body is not one JSON object.
type brokenVendor struct {
	fastVendor
	body string
}

func (v brokenVendor) Chat(context.Context, *vendor.ChatRequest) (*vendor.ChatResponse, error) {
	return &vendor.ChatResponse{Status: http.StatusOK, Body: []byte(v.body)}, nil
}

// A malformed whole answer is refused, natively and translated, though
// it is checked once (the translator is told it was): a 502
// upstream_error, the row an error, nothing charged.
func TestMalformedAnswerIsRefused(t *testing.T) {
	for _, body := range []string{
		`{"id":"chatcmpl-1","choices":[`,
		`[{"id":"chatcmpl-1"}]`,
		`{"id":"chatcmpl-1"} trailing`,
		string(benchAnswer[:len(benchAnswer)-1]),
	} {
		g := newGatewayWith(t, brokenVendor{body: body})
		for _, tc := range []struct {
			p    protocol.ID
			path string
			body []byte
		}{
			{protocol.OpenAIChat, "/v1/chat/completions", benchChatBody},
			{protocol.AnthropicMessages, "/v1/messages", benchMessagesBody},
		} {
			c := g.call(tc.p, tc.path, tc.body)
			g.chain.Run(context.Background(), c)
			if c.Err == nil || c.Err.Status != http.StatusBadGateway || c.Err.Code != apierr.UpstreamError ||
				!strings.Contains(c.Err.Message, "not valid JSON") {
				t.Fatalf("%s, upstream body %q: error %+v; want the 502 of a broken answer", tc.p, body, c.Err)
			}
			if c.Row == nil || c.Row.Status != store.StatusError || c.Row.Cost != 0 {
				t.Fatalf("%s: row %+v; want an error row without a charge", tc.p, c.Row)
			}
		}
	}
}
