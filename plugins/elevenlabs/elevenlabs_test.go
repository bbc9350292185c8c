package elevenlabs_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/elevenlabs"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/family/voice"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func start(t *testing.T, allowPrivate bool, settings map[string]string) (*elevenlabs.Vendor, *vendorsim.Recorder) {
	t.Helper()
	rec := &vendorsim.Recorder{}
	upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "xi-key", Record: rec.Record})
	v := elevenlabs.New()
	if err := v.Configure(context.Background(), vendor.Config{AllowPrivateURLs: allowPrivate,
		Channels: []vendor.Channel{{Name: "main", BaseURL: upURL, APIKey: "xi-key", Settings: settings}}}); err != nil {
		t.Fatal(err)
	}
	return v, rec
}

func job(family, op, body string, files ...vendor.JobFile) *vendor.JobRequest {
	return &vendor.JobRequest{Family: family, Operation: op, Channel: "main", Body: []byte(body), Files: files,
		Model: vendor.JobModel{ID: "m", Upstream: "eleven_multilingual_v2"}, Timeout: 5 * time.Second,
		TaskID: "voc_wire", Submitted: time.Unix(1767225600, 0), Headers: vt.ClientHeaders()}
}

func run(t *testing.T, v *elevenlabs.Vendor, req *vendor.JobRequest) *vendor.JobOutcome {
	t.Helper()
	out, err := v.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// formOf reads a recorded multipart body.
func formOf(t *testing.T, r vendorsim.Request) (map[string]string, map[string][2]string) {
	t.Helper()
	fields, files, err := r.Form()
	if err != nil {
		t.Fatal(err)
	}
	return fields, files
}

// A clone posts name, description and the sample as files to
// /v1/voices/add with xi-api-key: an upload streams from the gateway's
// link, a link the client gave is fetched first. The answer's voice_id is
// the task's reference.
func TestCloneWire(t *testing.T) {
	v, rec := start(t, true, map[string]string{elevenlabs.SettingRemoveNoise: "true"})
	upload := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("RIFF-upload-bytes"))
	}))
	t.Cleanup(upload.Close)
	out := run(t, v, job(voice.Family, voice.OpClone, `{"name":"Ada","description":"warm"}`,
		vendor.JobFile{Field: "file", Filename: "ada.wav", ContentType: "audio/wav", URL: upload.URL + "/files/1", Size: 17}))
	if out.State != vendor.JobSucceeded || out.UpstreamRef == "" || gjson.GetBytes(out.Body, "object").Str != "voice" {
		t.Fatalf("%+v %s", out, out.Body)
	}
	got, _ := rec.Last("/v1/voices/add")
	fields, files := formOf(t, got)
	if got.Header.Get("Xi-Api-Key") != "xi-key" || got.Header.Get("Authorization") != "" || fields["name"] != "Ada" ||
		fields["description"] != "warm" || fields["remove_background_noise"] != "true" || files["files"] != [2]string{"ada.wav", "RIFF-upload-bytes"} {
		t.Fatalf("upstream got %v %v %v", got.Header, fields, files)
	}
	vt.NoClientHeaders(t, got.Header)

	sample := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("RIFF-linked"))
	}))
	t.Cleanup(sample.Close)
	run(t, v, job(voice.Family, voice.OpClone, `{"name":"Bo","audio_url":"`+sample.URL+`/s/bo.wav?x=1"}`))
	got, _ = rec.Last("/v1/voices/add")
	if _, files = formOf(t, got); files["files"] != [2]string{"bo.wav", "RIFF-linked"} {
		t.Fatalf("files %v", files)
	}

	// Without allow_private_urls the loopback link is the client's 400,
	// and nothing goes upstream.
	pv, prec := start(t, false, nil)
	out = run(t, pv, job(voice.Family, voice.OpClone, `{"name":"Bo","audio_url":"`+sample.URL+`/s/bo.wav"}`))
	if out.State != vendor.JobFailed || out.Error.Code != "invalid_request" || !strings.Contains(out.Error.Message, "audio_url") || len(prec.Requests()) != 0 {
		t.Fatalf("%+v", out.Error)
	}
}

// ElevenLabs' refusals pass through: a 422's first message, a detail's
// message.
func TestCloneErrors(t *testing.T) {
	v, _ := start(t, true, nil)
	out := run(t, v, job(voice.Family, voice.OpClone, `{"name":"Ada [sim:error=400]"}`,
		vendor.JobFile{Field: "file", Filename: "a.wav", Data: []byte("RIFF")}))
	if out.Error == nil || out.Error.Status != 400 || !strings.HasPrefix(out.Error.Message, "Simulated upstream error 400") {
		t.Fatalf("%+v", out.Error)
	}
	up := vt.NewUpstream(t, vt.Reply(422, `{"detail":[{"type":"missing","loc":["body","files"],"msg":"Field required","input":null}]}`))
	bad := elevenlabs.New()
	vt.Configure(t, bad, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	out = run(t, bad, job(voice.Family, voice.OpClone, `{"name":"Ada"}`, vendor.JobFile{Field: "file", Filename: "a.wav", Data: []byte("RIFF")}))
	if out.Error == nil || out.Error.Status != 422 || out.Error.Message != "Field required" {
		t.Fatalf("%+v", out.Error)
	}
}

// Speech: the voice (a preset, or a clone's own id the gateway resolved)
// in the path, output_format by response_format, text and model_id in the
// body, speed as voice_settings.speed; wav is the 24 kHz PCM in a WAV
// header; a format ElevenLabs does not make is refused before any hold.
func TestSpeechWire(t *testing.T) {
	v, rec := start(t, true, nil)
	clone := run(t, v, job(voice.Family, voice.OpClone, `{"name":"Ada"}`, vendor.JobFile{Field: "file", Filename: "a.wav", Data: []byte("RIFF")}))
	req := job(speech.Family, speech.OpSpeech, `{"input":"Hello there","voice":"voc_abc","response_format":"wav","speed":1.1}`)
	req.Refs = []vendor.JobRef{{Field: "voice", TaskID: "voc_abc", Family: voice.Family, UpstreamRef: clone.UpstreamRef}}
	out := run(t, v, req)
	got, _ := rec.Last("/v1/text-to-speech/")
	b := gjson.ParseBytes(got.Body)
	if got.Path != "/v1/text-to-speech/"+clone.UpstreamRef || got.RawQuery != "output_format=pcm_24000" || b.Get("text").Str != "Hello there" ||
		b.Get("model_id").Str != "eleven_multilingual_v2" || b.Get("voice_settings.speed").Num != 1.1 || got.Header.Get("Xi-Api-Key") != "xi-key" {
		t.Fatalf("upstream got %s?%s %s", got.Path, got.RawQuery, got.Body)
	}
	if out.State != vendor.JobSucceeded || out.Headers["content-type"] != "audio/wav" || string(out.Body[:4]) != "RIFF" ||
		string(out.Body[8:12]) != "WAVE" || len(out.Units) != 1 || out.Units[0].Count != 11 {
		t.Fatalf("%+v", out.Headers)
	}
	out = run(t, v, job(speech.Family, speech.OpSpeech, `{"input":"Hi","voice":"21m00Tcm4TlvDq8ikWAM"}`))
	if got, _ := rec.Last("/v1/text-to-speech/"); got.RawQuery != "output_format=mp3_44100_128" || out.Headers["content-type"] != "audio/mpeg" {
		t.Fatalf("mp3: %s %v", got.RawQuery, out.Headers)
	}
	plan, _ := v.Validate(context.Background(), job(speech.Family, speech.OpSpeech, `{"input":"Hi","voice":"x","response_format":"flac"}`))
	if plan.Error == nil || plan.Error.Status != 400 || len(plan.Hold) != 0 {
		t.Fatalf("flac: %+v", plan)
	}
	out = run(t, v, job(speech.Family, speech.OpSpeech, `{"input":"Hi","voice":"no-such-voice"}`))
	if out.Error == nil || out.Error.Status != 404 || !strings.Contains(out.Error.Message, "was not found") {
		t.Fatalf("%+v", out.Error)
	}
}

// The presets are the premade voices only: the account's clones belong
// to the gateway's accounts, and never show in another's list.
func TestPresets(t *testing.T) {
	v, _ := start(t, true, nil)
	run(t, v, job(voice.Family, voice.OpClone, `{"name":"Private"}`, vendor.JobFile{Field: "file", Filename: "a.wav", Data: []byte("RIFF")}))
	out, err := v.Read(context.Background(), &vendor.JobRequest{Family: voice.Family, Operation: voice.OpPresets, Channel: "main", Body: []byte(`{}`)})
	if err != nil || out.State != vendor.JobSucceeded {
		t.Fatalf("%+v %v", out, err)
	}
	ps := gjson.GetBytes(out.Body, "presets").Array()
	if len(ps) != 6 || ps[0].Get("id").Str != "21m00Tcm4TlvDq8ikWAM" || ps[0].Get("name").Str != "Rachel" || strings.Contains(string(out.Body), "Private") {
		t.Fatalf("%s", out.Body)
	}
}
