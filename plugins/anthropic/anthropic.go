// Package anthropic is the vendor plugin for the Anthropic Messages API:
// POST /v1/messages and POST /v1/messages/count_tokens, with x-api-key and
// the anthropic-version the plugin was written against.
package anthropic

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// APIVersion is the anthropic-version header sent on every call. The
// client's own anthropic-version is never forwarded: the request body was
// checked against this one.
const APIVersion = "2023-06-01"

var spoken = []string{string(protocol.AnthropicMessages)}

// New returns the anthropic vendor with no channels yet.
func New() *httpvendor.Vendor {
	return httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{
			Name:      "anthropic",
			Protocols: spoken,
			Families:  []string{"chat"},
			Version:   httpvendor.Version,
		},
		Prepare: prepare,
	})
}

type route struct {
	messages, countTokens string
	key                   []string
}

var version = []string{APIVersion}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	if err := httpvendor.CheckSettings(ch); err != nil {
		return nil, err
	}
	base, err := httpvendor.BaseURL(ch, true)
	if err != nil {
		return nil, err
	}
	key, err := httpvendor.APIKey(ch, true)
	if err != nil {
		return nil, err
	}
	if _, err := httpvendor.Protocols(ch, spoken); err != nil {
		return nil, err
	}
	return &route{
		messages:    base + "/v1/messages",
		countTokens: base + "/v1/messages/count_tokens",
		key:         []string{key},
	}, nil
}

// Build forwards anthropic-beta (it opts a request into features its body
// uses) and nothing else from the client.
func (r *route) Build(req *vendor.ChatRequest, h http.Header) (string, error) {
	if !slices.Contains(spoken, req.Protocol) {
		return "", fmt.Errorf("the channel does not speak %q", req.Protocol)
	}
	h["X-Api-Key"] = r.key
	h["Anthropic-Version"] = version
	if beta := req.Headers["anthropic-beta"]; beta != "" && printable(beta) {
		h["Anthropic-Beta"] = []string{beta}
	}
	switch req.Operation {
	case "":
		return r.messages, nil
	case vendor.OpCountTokens:
		return r.countTokens, nil
	}
	return "", fmt.Errorf("operation %q is not offered by anthropic", req.Operation)
}

// printable refuses a value the transport would reject (control bytes),
// so a bad client header drops the header instead of failing the call.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
