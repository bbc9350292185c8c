package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func mediaUpstream(t *testing.T) (*openai.Vendor, *vendorsim.Recorder, string) {
	t.Helper()
	rec := &vendorsim.Recorder{}
	upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "sk-media", Record: rec.Record})
	v := openai.New()
	if err := v.Configure(context.Background(), vendor.Config{AllowPrivateURLs: true, Channels: []vendor.Channel{{Name: "main",
		BaseURL: upURL, APIKey: "sk-media", Settings: map[string]string{openai.SettingPollInterval: "10ms", openai.SettingProject: "proj_1"}}}}); err != nil {
		t.Fatal(err)
	}
	return v, rec, upURL
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

func mediaJob(family, op, upstream, body string) *vendor.JobRequest {
	return &vendor.JobRequest{Family: family, Operation: op, Channel: "main", Body: []byte(body),
		Model: vendor.JobModel{ID: "m", Upstream: upstream, Settings: map[string]string{"max_duration": "12"}}, Timeout: 5 * time.Second,
		TaskID: "vid_wire", Submitted: time.Unix(1767225600, 0), Headers: vt.ClientHeaders()}
}

// Speech: POST /v1/audio/speech as JSON with the upstream model, the
// family's fields and the client's others verbatim; the audio comes back
// with OpenAI's content type; OpenAI's refusals pass through.
func TestSpeechWire(t *testing.T) {
	v, rec, _ := mediaUpstream(t)
	out, err := v.Run(context.Background(), mediaJob(speech.Family, speech.OpSpeech, "tts-1-hd",
		`{"input":"Hello","voice":"coral","response_format":"opus","speed":1.5,"instructions":"cheerful","async":false}`))
	if err != nil || out.State != vendor.JobSucceeded || out.Headers["content-type"] != "audio/opus" || len(out.Body) == 0 {
		t.Fatalf("%+v %v", out, err)
	}
	got, _ := rec.Last("/v1/audio/speech")
	b := gjson.ParseBytes(got.Body)
	if got.Header.Get("Authorization") != "Bearer sk-media" || got.Header.Get("Openai-Project") != "proj_1" || b.Get("model").Str != "tts-1-hd" ||
		b.Get("input").Str != "Hello" || b.Get("voice").Str != "coral" || b.Get("response_format").Str != "opus" ||
		b.Get("speed").Num != 1.5 || b.Get("instructions").Str != "cheerful" || b.Get("async").Exists() {
		t.Fatalf("upstream got %v %s", got.Header, got.Body)
	}
	vt.NoClientHeaders(t, got.Header)
	for body, want := range map[string]int{
		`{"input":"Hi","voice":"nobody"}`:              400,
		`{"input":"Hi [sim:error=503]","voice":"ash"}`: 503,
		`{"input":"Hi","voice":"ash","pitch":2}`:       400,
	} {
		out, err := v.Run(context.Background(), mediaJob(speech.Family, speech.OpSpeech, "tts-1", body))
		if err != nil || out.State != vendor.JobFailed || out.Error.Status != want || out.Error.Message == "" {
			t.Fatalf("%s: %+v %v", body, out, err)
		}
	}
	out, _ = v.Run(context.Background(), mediaJob(speech.Family, speech.OpSpeech, "whisper-1", `{"input":"Hi","voice":"ash"}`))
	if out.Error == nil || out.Error.Status != 404 || !strings.Contains(out.Error.Message, "does not exist") {
		t.Fatalf("%+v", out.Error)
	}
	if _, err := v.Submit(context.Background(), mediaJob(speech.Family, speech.OpSpeech, "tts-1", `{"input":"Hi","voice":"ash"}`)); vt.Kind(err) != vendor.FailureConfig {
		t.Fatalf("speech has no upstream job: %v", err)
	}
}

// A speech answer that is no audio is a broken answer, not a success.
func TestSpeechNotAudio(t *testing.T) {
	up := vt.NewUpstream(t, vt.Reply(200, `{"ok":true}`))
	v := openai.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	if _, err := v.Run(context.Background(), mediaJob(speech.Family, speech.OpSpeech, "tts-1", `{"input":"Hi","voice":"ash"}`)); vt.Kind(err) != vendor.FailureBroken {
		t.Fatalf("%v", err)
	}
}

// Video: the submit is a multipart POST /v1/videos (prompt with the
// content's text, the upstream model, seconds as a string, the size its
// resolution and ratio name, the reference image fetched into
// input_reference); the job's reference is OpenAI's id; a running poll
// shows the progress; the finished video is a link to its content the
// gateway fetches with the channel's key; its seconds settle.
func TestVideoWire(t *testing.T) {
	v, rec, base := mediaUpstream(t)
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(imagestest.PNG(16, 16))
	}))
	t.Cleanup(img.Close)
	body := `{"prompt":"a harbour","content":[{"type":"text","text":"at dawn [sim:latency=150ms,seconds=7.2]"},` +
		`{"type":"image_url","image_url":{"url":"` + img.URL + `/first.png"}}],"duration":8,"resolution":"720p","ratio":"16:9"}`
	req := mediaJob(video.Family, video.OpGenerations, "sora-2-pro", body)
	plan, _ := v.Validate(context.Background(), req)
	if plan.Error != nil || !plan.UpstreamJob || plan.Hold[0].Count != 8 {
		t.Fatalf("%+v", plan)
	}
	out, err := v.Submit(context.Background(), req)
	if err != nil || out.State != vendor.JobRunning || !strings.HasPrefix(out.UpstreamRef, "video_") || out.PollAfter != 10*time.Millisecond {
		t.Fatalf("%+v %v", out, err)
	}
	got, _ := rec.Last("/v1/videos")
	fields, files := formOf(t, got)
	if got.Method != "POST" || fields["prompt"] != "a harbour\nat dawn [sim:latency=150ms,seconds=7.2]" || fields["model"] != "sora-2-pro" ||
		fields["seconds"] != "8" || fields["size"] != "1280x720" || fields["ratio"] != "" || files["input_reference"][0] != "reference.png" {
		t.Fatalf("upstream got %v %v", fields, files)
	}
	vt.NoClientHeaders(t, got.Header)
	req.UpstreamRef = out.UpstreamRef
	out, err = v.Poll(context.Background(), req)
	if err != nil || out.State != vendor.JobRunning || gjson.GetBytes(out.Body, "id").Str != "vid_wire" || !gjson.GetBytes(out.Body, "progress").Exists() {
		t.Fatalf("%+v %s %v", out, out.Body, err)
	}
	time.Sleep(200 * time.Millisecond)
	out, err = v.Poll(context.Background(), req)
	if err != nil || out.State != vendor.JobSucceeded || len(out.Files) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	f := out.Files[0]
	if f.URL != base+"/v1/videos/"+req.UpstreamRef+"/content" || f.Header["Authorization"] != "Bearer sk-media" ||
		f.Header["Openai-Project"] != "proj_1" || f.Slot != "video_url" || out.Units[0].Count != 8 || gjson.GetBytes(out.Body, "duration").Int() != 8 {
		t.Fatalf("%+v %+v %s", f, out.Units, out.Body)
	}
	// The link works with those headers.
	hr, _ := http.NewRequest(http.MethodGet, f.URL, nil)
	for k, v := range f.Header {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()

	// Cancel deletes the video; a poll then finds none (404, failed).
	if err := v.Cancel(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got, _ := rec.Last("/v1/videos/"); got.Method != http.MethodDelete {
		t.Fatalf("cancel sent %s %s", got.Method, got.Path)
	}
	if out, err := v.Poll(context.Background(), req); err != nil || out.State != vendor.JobFailed || out.Error.Status != 404 {
		t.Fatalf("%+v %v", out, err)
	}
}

// The seconds the video reports settle, rounded up and never above the
// hold; a failed video's code says its status.
func TestVideoSecondsAndFailures(t *testing.T) {
	v, _, _ := mediaUpstream(t)
	run := func(body string) *vendor.JobOutcome {
		out, err := v.Run(context.Background(), mediaJob(video.Family, video.OpGenerations, "sora-2", body))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := run(`{"prompt":"p [sim:seconds=3.2]","duration":4}`); out.Units[0].Count != 4 {
		t.Fatalf("%+v", out.Units)
	}
	if out := run(`{"prompt":"p [sim:seconds=2.2]","duration":4}`); out.Units[0].Count != 3 {
		t.Fatalf("%+v", out.Units)
	}
	for marker, status := range map[string]int{"fail=400": 400, "fail=429": 429, "fail=500": 502} {
		out := run(`{"prompt":"p [sim:` + marker + `]","duration":4}`)
		if out.State != vendor.JobFailed || out.Error.Status != status || !strings.Contains(out.Error.Message, "Simulated") || len(out.Units) != 0 {
			t.Fatalf("%s: %+v", marker, out)
		}
	}
	out := run(`{"prompt":"p","duration":25}`)
	if out.State != vendor.JobFailed || out.Error.Status != 400 || !strings.Contains(out.Error.Message, "seconds") {
		t.Fatalf("%+v", out.Error)
	}
}

// What the videos API cannot take is refused before any hold.
func TestVideoRefusals(t *testing.T) {
	v, rec, _ := mediaUpstream(t)
	for _, body := range []string{
		`{"prompt":"p","duration":4,"content":[{"type":"video_url","video_url":{"url":"https://v.example/a.mp4"}}]}`,
		`{"prompt":"p","duration":4,"content":[{"type":"image_url","image_url":"https://i.example/a.png"},{"type":"image_url","image_url":"https://i.example/b.png"}]}`,
		`{"prompt":"p","duration":4,"resolution":"4k"}`,
		`{"prompt":"p","duration":4,"resolution":"720p","ratio":"1:1"}`,
		`{"prompt":"p","duration":4,"size":"big"}`,
	} {
		plan, _ := v.Validate(context.Background(), mediaJob(video.Family, video.OpGenerations, "sora-2", body))
		if plan.Error == nil || plan.Error.Code != "invalid_request" || len(plan.Hold) != 0 {
			t.Fatalf("%s: %+v", body, plan)
		}
	}
	if n := len(rec.Requests()); n != 0 {
		t.Fatalf("%d requests went upstream", n)
	}
}

// A poll answered with an error status says nothing of the job: the
// gateway asks again later.
func TestVideoPollErrorStatus(t *testing.T) {
	up := vt.NewUpstream(t, vt.Reply(503, `{"error":{"message":"overloaded"}}`))
	v := openai.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	req := mediaJob(video.Family, video.OpGenerations, "sora-2", `{"prompt":"p","duration":4}`)
	req.UpstreamRef = "video_1"
	if _, err := v.Poll(context.Background(), req); vt.Kind(err) != vendor.FailureBroken || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("%v", err)
	}
	if got := up.Last(t); got.Method != http.MethodGet || got.Path != "/v1/videos/video_1" {
		t.Fatalf("%s %s", got.Method, got.Path)
	}
}
