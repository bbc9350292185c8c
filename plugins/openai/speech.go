package openai

import (
	"context"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The speech family on OpenAI's speech API: POST /v1/audio/speech with
// {model, input, voice, response_format, speed, instructions}, answered
// with the audio's bytes under their content type. It is synchronous: a
// client's async request runs in the gateway's background.

// pathSpeech is OpenAI's speech endpoint.
const pathSpeech = "/v1/audio/speech"

// maxAudio bounds a speech answer (4096 characters of wav are some 15 MB).
const maxAudio = 64 << 20

// runSpeech makes the upstream call.
func (v *Vendor) runSpeech(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, plan := speech.Plan(req)
	if plan.Error != nil {
		return rules.Refused(plan.Error), nil
	}
	body := rules.NewRecord().Str("model", req.Model.Upstream).Str("input", r.Input).Str("voice", r.Upstream).
		Str("response_format", r.Format)
	if r.Speed != 0 {
		body.Float("speed", r.Speed)
	}
	if r.Instructions != "" {
		body.Str("instructions", r.Instructions)
	}
	for _, f := range r.Extra {
		body.Raw(f.Name, f.Raw)
	}
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Path: pathSpeech, ContentType: "application/json",
		Accept: "application/octet-stream", Body: body.Bytes(), Timeout: req.Timeout, MaxBody: maxAudio, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	audio, ct, refusal, err := httpvendor.Audio(resp)
	if refusal != nil || err != nil {
		return refusal, err
	}
	return speech.Succeeded(req, r, audio, ct), nil
}
