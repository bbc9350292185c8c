// Package elevenlabs is the vendor plugin for ElevenLabs' voice API, with
// the key in xi-api-key: the voice family (POST /v1/voices/add clones a
// voice from a sample, multipart with the sample in files; GET /v1/voices
// gives the premade voices the voices list shows as presets) and the
// speech family (POST /v1/text-to-speech/{voice_id}), so a voice cloned
// here speaks on the same channel.
package elevenlabs

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/family/voice"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// SettingRemoveNoise asks the clone to remove background noise ("true").
const SettingRemoveNoise = "remove_background_noise"

const (
	pathClone  = "/v1/voices/add"
	pathVoices = "/v1/voices"
	pathSpeak  = "/v1/text-to-speech/"
	// maxAudio bounds a speech answer.
	maxAudio = 64 << 20
)

// Vendor is the elevenlabs vendor: voices and speech through vendor.Jobs,
// the presets through vendor.JobReader.
type Vendor struct {
	*httpvendor.Vendor
	httpvendor.Synchronous
}

// New returns the elevenlabs vendor with no channels yet.
func New() *Vendor {
	return &Vendor{Vendor: httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{Name: "elevenlabs", Families: []string{voice.Family, speech.Family},
			Version: httpvendor.Version, Specs: []vendor.FamilySpec{voice.Spec(), speech.Spec()}},
		Prepare: prepare,
	})}
}

type route struct {
	*httpvendor.JobRoute
	removeNoise bool
}

func prepare(ch vendor.Channel) (httpvendor.Route, error) {
	jr, err := httpvendor.JobChannel(ch, httpvendor.Auth{Name: "Xi-Api-Key"}, true, SettingRemoveNoise)
	if err != nil {
		return nil, err
	}
	rt := &route{JobRoute: jr}
	if v, ok := ch.Settings[SettingRemoveNoise]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, vendor.ChannelError(ch.Name, "settings", "%s = %q: want true or false", SettingRemoveNoise, v)
		}
		rt.removeNoise = b
	}
	return rt, nil
}

// formats are the response formats ElevenLabs makes and the output_format
// asked for each: wav is its 24 kHz PCM with a WAV header the plugin
// writes, as OpenAI's wav and pcm are 24 kHz 16-bit mono too.
var formats = map[string]string{"mp3": "mp3_44100_128", "opus": "opus_48000_128", "pcm": "pcm_24000", "wav": "pcm_24000"}

// Validate checks a request by its family's rules and the formats
// ElevenLabs makes. A clone and speech are synchronous.
func (v *Vendor) Validate(_ context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	switch req.Family {
	case voice.Family:
		_, plan := voice.Plan(req)
		return plan, nil
	case speech.Family:
		r, plan := speech.Plan(req)
		if plan.Error == nil && formats[r.Format] == "" {
			return &vendor.JobPlan{Error: rules.Invalid("response_format " + r.Format + " is not offered by this model's voice vendor (mp3, opus, wav or pcm).")}, nil
		}
		return plan, nil
	}
	return &vendor.JobPlan{Error: rules.Invalid("the elevenlabs plugin does not serve the family " + req.Family + ".")}, nil
}

// Run makes the call: a clone, or speech.
func (v *Vendor) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	plan, _ := v.Validate(ctx, req)
	if plan.Error != nil {
		return rules.Refused(plan.Error), nil
	}
	if req.Family == voice.Family {
		return v.clone(ctx, req)
	}
	return v.speak(ctx, req)
}

// clone posts the sample (the client's upload, streamed, or its link,
// fetched under the private-address policy) to /v1/voices/add.
func (v *Vendor) clone(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if err := v.Known(req.Channel); err != nil {
		return nil, err
	}
	r, _ := voice.Plan(req)
	var f httpvendor.Form
	f.Field("name", r.Name)
	if r.Description != "" {
		f.Field("description", r.Description)
	}
	if rt, ok := v.Route(req.Channel); ok && rt.(*route).removeNoise {
		f.Field("remove_background_noise", "true")
	}
	if r.File != nil {
		name := r.File.Filename
		if name == "" {
			name = "sample"
		}
		f.Upload("files", name, r.File.ContentType, r.File)
	} else {
		data, ct, err := v.Fetch(ctx, r.AudioURL, voice.MaxAudio)
		var fe *httpvendor.FetchError
		if errors.As(err, &fe) {
			return rules.Refused(rules.Invalid("audio_url (" + r.AudioURL + ") could not be fetched: " + fe.Reason + ".")), nil
		}
		if err != nil {
			return nil, err
		}
		name := path.Base(r.AudioURL)
		if u, err := url.Parse(r.AudioURL); err == nil && path.Base(u.Path) != "/" && path.Base(u.Path) != "." {
			name = path.Base(u.Path)
		}
		f.File("files", name, ct, data)
	}
	body, ct := f.Reader(ctx)
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Path: pathClone, ContentType: ct, BodyReader: body,
		Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return rules.Failed(resp.Status, resp.Body), nil
	}
	id := gjson.GetBytes(resp.Body, "voice_id").Str
	if id == "" {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "elevenlabs: the clone's answer holds no voice_id"}
	}
	return voice.Cloned(req, r, id), nil
}

// speak posts the text to /v1/text-to-speech/{voice_id}: the voice a
// preset's id, or the voice a clone made (the gateway resolved it).
func (v *Vendor) speak(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, _ := speech.Plan(req)
	body := rules.NewRecord().Str("text", r.Input).Str("model_id", req.Model.Upstream)
	if r.Speed != 0 {
		body.Raw("voice_settings", `{"speed":`+strconv.FormatFloat(r.Speed, 'f', -1, 64)+`}`)
	}
	for _, f := range r.Extra {
		body.Raw(f.Name, f.Raw)
	}
	p := pathSpeak + url.PathEscape(r.Upstream) + "?output_format=" + formats[r.Format]
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Path: p, ContentType: "application/json",
		Accept: "audio/*", Body: body.Bytes(), Timeout: req.Timeout, MaxBody: maxAudio, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	audio, ct, refusal, err := httpvendor.Audio(resp)
	if refusal != nil || err != nil {
		return refusal, err
	}
	switch r.Format {
	case "wav":
		audio, ct = wav(audio, 24000), "audio/wav"
	case "pcm":
		ct = "audio/pcm"
	}
	return speech.Succeeded(req, r, audio, ct), nil
}

// wav is 16-bit mono PCM at rate in a WAV file.
func wav(pcm []byte, rate uint32) []byte {
	b := make([]byte, 0, 44+len(pcm))
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(36+len(pcm)))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1) // PCM
	b = binary.LittleEndian.AppendUint16(b, 1) // mono
	b = binary.LittleEndian.AppendUint32(b, rate)
	b = binary.LittleEndian.AppendUint32(b, rate*2)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(pcm)))
	return append(b, pcm...)
}

// Read answers the voices list's presets: the account's premade voices
// (never its clones, which belong to the gateway's accounts).
func (v *Vendor) Read(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.Family != voice.Family || req.Operation != voice.OpPresets {
		return rules.Refused(rules.Invalid("no read " + req.Operation + " in the family " + req.Family + ".")), nil
	}
	resp, err := v.Post(ctx, &httpvendor.PostRequest{Channel: req.Channel, Method: http.MethodGet, Path: pathVoices,
		Timeout: req.Timeout, Headers: req.Headers})
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return rules.Failed(resp.Status, resp.Body), nil
	}
	var ps []voice.Preset
	gjson.GetBytes(resp.Body, "voices").ForEach(func(_, it gjson.Result) bool {
		if it.Get("category").Str == "premade" && it.Get("voice_id").Str != "" {
			ps = append(ps, voice.Preset{ID: it.Get("voice_id").Str, Name: strings.TrimSpace(it.Get("name").Str)})
		}
		return true
	})
	return voice.Presets(ps), nil
}

var (
	_ vendor.Jobs      = (*Vendor)(nil)
	_ vendor.JobReader = (*Vendor)(nil)
)
