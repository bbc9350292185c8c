// Package openai is the vendor plugin for the OpenAI API: chat completions
// (POST /v1/chat/completions) and responses (POST /v1/responses), with
// Authorization: Bearer and, when the channel sets them, the organization
// and project headers.
package openai

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Channel settings.
const (
	SettingOrganization = "organization" // sent as OpenAI-Organization
	SettingProject      = "project"      // sent as OpenAI-Project
)

var spoken = []string{string(protocol.OpenAIChat), string(protocol.OpenAIResponses)}

// New returns the openai vendor with no channels yet.
func New() *httpvendor.Vendor {
	return httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{
			Name:      "openai",
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
	auth            []string
	org, project    []string
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	if err := httpvendor.CheckSettings(ch, SettingOrganization, SettingProject); err != nil {
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
	protos, err := httpvendor.Protocols(ch, spoken)
	if err != nil {
		return nil, err
	}
	r := &route{
		chat:      base + "/v1/chat/completions",
		responses: base + "/v1/responses",
		protocols: protos,
		auth:      []string{"Bearer " + key},
	}
	if v := ch.Settings[SettingOrganization]; v != "" {
		r.org = []string{v}
	}
	if v := ch.Settings[SettingProject]; v != "" {
		r.project = []string{v}
	}
	return r, nil
}

// Build sends no client header: OpenAI needs none of them.
func (r *route) Build(req *vendor.ChatRequest, h http.Header) (string, error) {
	if req.Operation != "" {
		return "", fmt.Errorf("operation %q is not offered by openai", req.Operation)
	}
	if !slices.Contains(r.protocols, req.Protocol) {
		return "", fmt.Errorf("the channel does not speak %q", req.Protocol)
	}
	h["Authorization"] = r.auth
	if r.org != nil {
		h["Openai-Organization"] = r.org
	}
	if r.project != nil {
		h["Openai-Project"] = r.project
	}
	if req.Protocol == string(protocol.OpenAIResponses) {
		return r.responses, nil
	}
	return r.chat, nil
}
