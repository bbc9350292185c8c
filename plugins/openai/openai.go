// Package openai is the vendor plugin for the OpenAI API: chat completions
// (POST /v1/chat/completions) and responses (POST /v1/responses), and the
// image family on its images API (images.go), speech on its speech API
// (speech.go) and video on its videos API (video.go), with Authorization:
// Bearer and, when the channel sets them, the organization and project
// headers.
package openai

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/family/images"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Channel settings.
const (
	SettingOrganization = "organization" // sent as OpenAI-Organization
	SettingProject      = "project"      // sent as OpenAI-Project
	// SettingPollInterval is how often a video job is polled ("10s").
	SettingPollInterval = "poll_interval"
)

// defaultPollInterval is how often a video job is polled: OpenAI's own
// examples poll every 10 to 20 seconds.
const defaultPollInterval = 10 * time.Second

var spoken = []string{string(protocol.OpenAIChat), string(protocol.OpenAIResponses)}

// Vendor is the openai vendor: chat through the shared HTTP machinery,
// and the image, speech and video families through vendor.Jobs
// (jobs.go).
type Vendor struct {
	*httpvendor.Vendor
}

// New returns the openai vendor with no channels yet.
func New() *Vendor {
	return &Vendor{httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{
			Name:      "openai",
			Protocols: spoken,
			Families:  []string{"chat", images.Family, speech.Family, video.Family},
			Version:   httpvendor.Version,
			Specs:     []vendor.FamilySpec{images.Spec(), speech.Spec(), video.Spec()},
		},
		Prepare: prepare,
	})}
}

type route struct {
	base            string
	chat, responses string
	protocols       []string
	auth            []string
	org, project    []string
	pollEvery       time.Duration
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	if err := httpvendor.CheckSettings(ch, SettingOrganization, SettingProject, SettingPollInterval); err != nil {
		return nil, err
	}
	every, err := httpvendor.DurationSetting(ch, SettingPollInterval, defaultPollInterval)
	if err != nil {
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
		base:      base,
		chat:      base + "/v1/chat/completions",
		responses: base + "/v1/responses",
		protocols: protos,
		auth:      []string{"Bearer " + key},
		pollEvery: every,
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
	r.headers(h)
	if req.Protocol == string(protocol.OpenAIResponses) {
		return r.responses, nil
	}
	return r.chat, nil
}

// BuildPath is the URL of an images API path, with the same headers.
func (r *route) BuildPath(path string, h http.Header) (string, error) {
	r.headers(h)
	return r.base + path, nil
}

// headers adds the key and, when set, the organization and project.
func (r *route) headers(h http.Header) {
	h["Authorization"] = r.auth
	if r.org != nil {
		h["Openai-Organization"] = r.org
	}
	if r.project != nil {
		h["Openai-Project"] = r.project
	}
}
