package suno_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/music"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/suno"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func start(t *testing.T, settings map[string]string) (*suno.Vendor, *vendorsim.Recorder, string) {
	t.Helper()
	rec := &vendorsim.Recorder{}
	upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "sk-suno", Record: rec.Record})
	if settings == nil {
		settings = map[string]string{}
	}
	settings[suno.SettingPollInterval] = "10ms"
	v := suno.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: upURL, APIKey: "sk-suno", Settings: settings})
	return v, rec, upURL
}

func musicReq(body string) *vendor.JobRequest {
	return &vendor.JobRequest{Family: music.Family, Operation: music.OpGenerations, Channel: "main", Body: []byte(body),
		Model: vendor.JobModel{ID: "suno", Upstream: "V4_5ALL"}, Timeout: 5 * time.Second, Async: true,
		TaskID: "mus_wire", Submitted: time.Unix(1767225600, 0), Headers: vt.ClientHeaders()}
}

func submit(t *testing.T, v *suno.Vendor, body string) *vendor.JobOutcome {
	t.Helper()
	out, err := v.Submit(context.Background(), musicReq(body))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A description goes in non-custom mode; lyrics or a style in custom
// mode with a title; the callback is the channel's; the client's own
// copies of the API's fields never pass.
func TestGenerateWire(t *testing.T) {
	v, rec, _ := start(t, map[string]string{suno.SettingCallbackURL: "https://hooks.example/suno"})
	out := submit(t, v, `{"prompt":"a sea shanty","title":"Toll Road","callBackUrl":"https://evil.example/","negativeTags":"metal"}`)
	if out.State != vendor.JobRunning || out.UpstreamRef == "" || out.PollAfter != 10*time.Millisecond {
		t.Fatalf("%+v", out)
	}
	got, _ := rec.Last("/api/v1/generate")
	b := gjson.ParseBytes(got.Body)
	if got.Method != "POST" || got.Header.Get("Authorization") != "Bearer sk-suno" || b.Get("customMode").Type != gjson.False ||
		b.Get("instrumental").Type != gjson.False || b.Get("model").Str != "V4_5ALL" || b.Get("callBackUrl").Str != "https://hooks.example/suno" ||
		b.Get("prompt").Str != "a sea shanty" || b.Get("style").Exists() || b.Get("title").Exists() || b.Get("negativeTags").Str != "metal" {
		t.Fatalf("upstream got %v %s", got.Header, got.Body)
	}
	vt.NoClientHeaders(t, got.Header)

	submit(t, v, `{"lyrics":"[Verse] the road goes on and on","style":"folk","instrumental":false}`)
	got, _ = rec.Last("/api/v1/generate")
	b = gjson.ParseBytes(got.Body)
	if b.Get("customMode").Type != gjson.True || b.Get("prompt").Str != "[Verse] the road goes on and on" ||
		b.Get("style").Str != "folk" || b.Get("title").Str != "[Verse] the road goes" {
		t.Fatalf("custom mode got %s", got.Body)
	}

	// Custom mode without a style is the API's refusal, passed through.
	out = submit(t, v, `{"lyrics":"la la la"}`)
	if out.State != vendor.JobFailed || out.Error.Status != 400 || !strings.Contains(out.Error.Message, "style and title are required") {
		t.Fatalf("%+v", out.Error)
	}
}

// The API answers errors under HTTP 200 with the code in the body: each
// code becomes its status (430 a 429, 455 a 503, 413 itself).
func TestErrorEnvelope(t *testing.T) {
	v, _, _ := start(t, nil)
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"prompt":"a [sim:error=429]"}`, 429},
		{`{"prompt":"a [sim:error=503]"}`, 503},
		{`{"prompt":"a [sim:error=500]"}`, 500},
		{`{"prompt":"` + strings.Repeat("long ", 120) + `"}`, 413},
	} {
		out := submit(t, v, tc.body)
		if out.State != vendor.JobFailed || out.Error.Status != tc.status || out.Error.Message == "" {
			t.Fatalf("%s: %+v", tc.body, out.Error)
		}
	}
	wrong := suno.New()
	_, _, url := start(t, nil)
	vt.Configure(t, wrong, vendor.Channel{Name: "main", BaseURL: url, APIKey: "nope"})
	out, err := wrong.Submit(context.Background(), musicReq(`{"prompt":"p"}`))
	if err != nil || out.Error.Status != 401 || out.Error.Message != "You do not have access permissions" {
		t.Fatalf("%+v %v", out, err)
	}
}

// Polls map the task's statuses onto the job's: running while pending,
// the songs (links the gateway fetches) once it succeeded, the content
// filter a 400, a failed generation a 502, a task the API does not know
// a 404; an error status says nothing of the job (asked again later).
func TestPollStates(t *testing.T) {
	v, _, _ := start(t, nil)
	poll := func(ref, body string) (*vendor.JobOutcome, error) {
		req := musicReq(body)
		req.UpstreamRef = ref
		return v.Poll(context.Background(), req)
	}
	run := submit(t, v, `{"prompt":"slow [sim:latency=1h]"}`)
	if out, err := poll(run.UpstreamRef, `{"prompt":"slow [sim:latency=1h]"}`); err != nil || out.State != vendor.JobRunning || out.PollAfter <= 0 {
		t.Fatalf("%+v %v", out, err)
	}
	body := `{"prompt":"a sea shanty [sim:seconds=95.5]","title":"Toll Road"}`
	ok := submit(t, v, body)
	out, err := poll(ok.UpstreamRef, body)
	if err != nil || out.State != vendor.JobSucceeded || len(out.Files) != 2 || !strings.Contains(out.Files[0].URL, "/sim-media/suno/") ||
		gjson.GetBytes(out.Body, "songs.0.title").Str != "Toll Road" || gjson.GetBytes(out.Body, "songs.1.duration").Num != 95.5 {
		t.Fatalf("%+v %s %v", out, out.Body, err)
	}
	for marker, status := range map[string]int{"fail=400": 400, "fail=500": 502} {
		b := `{"prompt":"x [sim:` + marker + `]"}`
		j := submit(t, v, b)
		if out, err := poll(j.UpstreamRef, b); err != nil || out.State != vendor.JobFailed || out.Error.Status != status {
			t.Fatalf("%s: %+v %v", marker, out, err)
		}
	}
	if out, err := poll("nosuchtask", `{"prompt":"p"}`); err != nil || out.State != vendor.JobFailed || out.Error.Status != 404 {
		t.Fatalf("unknown task: %+v %v", out, err)
	}

	down := vt.NewUpstream(t, vt.Reply(502, `<html>bad gateway</html>`))
	dv := suno.New()
	vt.Configure(t, dv, vendor.Channel{Name: "main", BaseURL: down.URL, APIKey: "k"})
	req := musicReq(`{"prompt":"p"}`)
	req.UpstreamRef = "t1"
	if _, err := dv.Poll(context.Background(), req); vt.Kind(err) != vendor.FailureBroken {
		t.Fatalf("a 502 poll: %v", err)
	}
	if got := down.Last(t); got.Method != http.MethodGet || got.Path != "/api/v1/generate/record-info" || got.RawQuery != "taskId=t1" {
		t.Fatalf("poll went to %s %s?%s", got.Method, got.Path, got.RawQuery)
	}
}

// Channels are checked at start.
func TestChannelChecks(t *testing.T) {
	for _, s := range []map[string]string{{"callback_url": "not a url"}, {"poll_interval": "often"}, {"mode": "x"}} {
		if err := suno.New().Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{
			{Name: "c", BaseURL: "https://api.sunoapi.org", APIKey: "k", Settings: s}}}); err == nil {
			t.Errorf("%v was accepted", s)
		}
	}
}
