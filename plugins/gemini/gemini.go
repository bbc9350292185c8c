// Package gemini is the vendor plugin for the Gemini API: POST
// /v1beta/models/{model}:generateContent and, streaming,
// :streamGenerateContent?alt=sse, with x-goog-api-key.
package gemini

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// SettingAPIVersion picks the API version path segment; "v1beta" by default
// (the version that has every current model feature).
const SettingAPIVersion = "api_version"

var spoken = []string{string(protocol.GeminiNative)}

// New returns the gemini vendor with no channels yet.
func New() *httpvendor.Vendor {
	return httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{
			Name:      "gemini",
			Protocols: spoken,
			Families:  []string{"chat"},
			Version:   httpvendor.Version,
		},
		Prepare: prepare,
	})
}

type route struct {
	models string // base + "/v1beta/models/"
	key    []string
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	if err := httpvendor.CheckSettings(ch, SettingAPIVersion); err != nil {
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
	ver := "v1beta"
	if v, ok := ch.Settings[SettingAPIVersion]; ok {
		if v == "" || strings.ContainsAny(v, "/?#") {
			return nil, vendor.ChannelError(ch.Name, "settings", "%s %q is not a version segment like v1beta", SettingAPIVersion, v)
		}
		ver = v
	}
	return &route{models: base + "/" + ver + "/models/", key: []string{key}}, nil
}

// Build takes the model from the request (Gemini bodies do not name it) and
// forwards no client header.
func (r *route) Build(req *vendor.ChatRequest, h http.Header) (string, error) {
	if req.Protocol != string(protocol.GeminiNative) {
		return "", fmt.Errorf("the channel does not speak %q", req.Protocol)
	}
	if req.Operation != "" {
		return "", fmt.Errorf("operation %q is not offered by gemini", req.Operation)
	}
	model := strings.TrimPrefix(req.Model, "models/")
	if model == "" {
		return "", fmt.Errorf("no model to call")
	}
	h["X-Goog-Api-Key"] = r.key
	if req.Stream {
		return r.models + url.PathEscape(model) + ":streamGenerateContent?alt=sse", nil
	}
	return r.models + url.PathEscape(model) + ":generateContent", nil
}
