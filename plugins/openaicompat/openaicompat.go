// Package openaicompat is the vendor plugin for servers that speak the
// OpenAI chat completions (and, where they offer it, responses) wire format:
// vLLM, Ollama, OpenRouter, LM Studio and the like. They differ in where the
// API sits, so the channel setting path_prefix (default "/v1") is put
// between base_url and /chat/completions; OpenRouter takes "/api/v1".
package openaicompat

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// SettingPathPrefix is the path between base_url and the endpoint.
const SettingPathPrefix = "path_prefix"

// DefaultPathPrefix is what vLLM, Ollama and LM Studio use.
const DefaultPathPrefix = "/v1"

var spoken = []string{string(protocol.OpenAIChat), string(protocol.OpenAIResponses)}

// New returns the openai-compatible vendor with no channels yet.
func New() *httpvendor.Vendor {
	return httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{
			Name:      "openai-compatible",
			Protocols: spoken,
			Families:  []string{"chat"},
			Version:   httpvendor.Version,
		},
		Prepare: prepare,
	})
}

type route struct {
	chat, responses string
	protocols       []string
	auth            []string // nil when the server takes no key (a local Ollama)
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	if err := httpvendor.CheckSettings(ch, SettingPathPrefix); err != nil {
		return nil, err
	}
	// The prefix says where the version goes, so base_url may hold any path.
	base, err := httpvendor.BaseURL(ch, false)
	if err != nil {
		return nil, err
	}
	key, err := httpvendor.APIKey(ch, false)
	if err != nil {
		return nil, err
	}
	protos, err := httpvendor.Protocols(ch, spoken)
	if err != nil {
		return nil, err
	}
	prefix := DefaultPathPrefix
	if p, ok := ch.Settings[SettingPathPrefix]; ok {
		if strings.ContainsAny(p, "?#") {
			return nil, vendor.ChannelError(ch.Name, "settings", "%s %q: a path only", SettingPathPrefix, p)
		}
		prefix = strings.Trim(p, "/")
		if prefix != "" {
			prefix = "/" + prefix
		}
	}
	r := &route{
		chat:      base + prefix + "/chat/completions",
		responses: base + prefix + "/responses",
		protocols: protos,
	}
	if key != "" {
		r.auth = []string{"Bearer " + key}
	}
	return r, nil
}

// Build sends no client header.
func (r *route) Build(req *vendor.ChatRequest, h http.Header) (string, error) {
	if req.Operation != "" {
		return "", fmt.Errorf("operation %q is not offered by openai-compatible servers", req.Operation)
	}
	if !slices.Contains(r.protocols, req.Protocol) {
		return "", fmt.Errorf("the channel does not speak %q", req.Protocol)
	}
	if r.auth != nil {
		h["Authorization"] = r.auth
	}
	if req.Protocol == string(protocol.OpenAIResponses) {
		return r.responses, nil
	}
	return r.chat, nil
}
