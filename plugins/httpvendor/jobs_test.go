package httpvendor_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func jobVendor(t *testing.T, base string) *httpvendor.Vendor {
	t.Helper()
	v := httpvendor.New(httpvendor.Spec{
		Description: vendor.Description{Name: "jobs", Version: "1"},
		Prepare: func(ch vendor.Channel) (httpvendor.Route, error) {
			return httpvendor.JobChannel(ch, httpvendor.Auth{Name: "X-Key", Prefix: "k-"}, true, "every")
		},
	})
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: base, APIKey: "secret"})
	return v
}

// A families-only channel: its key in its header on every call, a GET or
// DELETE without a body, chat refused, and a link with its headers for a
// result the gateway fetches.
func TestJobChannel(t *testing.T) {
	up := vt.NewUpstream(t, vt.Reply(200, `{"ok":true}`))
	v := jobVendor(t, up.URL+"/")
	resp, err := v.Post(context.Background(), &httpvendor.PostRequest{Channel: "main", Method: http.MethodGet, Path: "/v1/x?id=1",
		Body: []byte("ignored"), Accept: "audio/*"})
	if err != nil || resp.Status != 200 {
		t.Fatalf("%+v %v", resp, err)
	}
	got := up.Last(t)
	if got.Method != "GET" || got.Path != "/v1/x" || got.RawQuery != "id=1" || got.Header.Get("X-Key") != "k-secret" ||
		len(got.Body) != 0 || got.Header.Get("Content-Type") != "" || got.Header.Get("Accept") != "audio/*" {
		t.Fatalf("upstream got %+v", got)
	}
	if _, err := v.Post(context.Background(), &httpvendor.PostRequest{Channel: "main", Method: http.MethodDelete, Path: "/v1/x/1"}); err != nil ||
		up.Last(t).Method != "DELETE" {
		t.Fatalf("delete: %v", err)
	}
	if _, err := v.Chat(context.Background(), &vendor.ChatRequest{Channel: "main", Protocol: "openai_chat"}); vt.Kind(err) != vendor.FailureConfig {
		t.Fatalf("chat on a families-only channel: %v", err)
	}
	link, h, err := v.Link("main", "/v1/videos/v1/content")
	if err != nil || link != up.URL+"/v1/videos/v1/content" || h["X-Key"] != "k-secret" || len(h) != 1 {
		t.Fatalf("%s %v %v", link, h, err)
	}
	if _, _, err := v.Link("nope", "/x"); vt.Kind(err) != vendor.FailureConfig {
		t.Fatalf("%v", err)
	}
	if vt.Kind(v.Known("nope")) != vendor.FailureConfig || v.Known("main") != nil {
		t.Fatal("Known")
	}
	for _, ch := range []vendor.Channel{
		{Name: "c", BaseURL: "https://h"},
		{Name: "c", BaseURL: "https://h", APIKey: "k", Protocols: []string{"openai_chat"}},
		{Name: "c", BaseURL: "https://h/v1", APIKey: "k"},
		{Name: "c", BaseURL: "https://h", APIKey: "k", Settings: map[string]string{"other": "1"}},
	} {
		if _, err := httpvendor.JobChannel(ch, httpvendor.Bearer, true, "every"); err == nil {
			t.Errorf("%+v accepted", ch)
		}
	}
	if _, err := httpvendor.DurationSetting(vendor.Channel{Settings: map[string]string{"every": "soon"}}, "every", time.Second); err == nil {
		t.Error("a bad duration was accepted")
	}
}

// A poll's error status: a 4xx ends the job (but 408, 409, 425 and 429),
// anything else is asked again later.
func TestPollRefusal(t *testing.T) {
	for status, ends := range map[int]bool{400: true, 401: true, 404: true, 408: false, 409: false, 429: false, 500: false, 503: false} {
		out, err := httpvendor.PollRefusal(&vendor.ChatResponse{Status: status, Body: []byte(`{"error":{"message":"m"}}`)})
		if ends && (err != nil || out.State != vendor.JobFailed || out.Error.Status != status || out.Error.Message != "m") ||
			!ends && vt.Kind(err) != vendor.FailureBroken {
			t.Errorf("%d: %+v %v", status, out, err)
		}
	}
}

// stepJobs is a job that runs for a number of polls.
type stepJobs struct {
	polls     int
	seen      atomic.Int64
	cancelled atomic.Bool
}

func (s *stepJobs) Validate(context.Context, *vendor.JobRequest) (*vendor.JobPlan, error) {
	return nil, nil
}
func (s *stepJobs) Run(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return nil, nil
}
func (s *stepJobs) Submit(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: "j1", PollAfter: time.Millisecond}, nil
}
func (s *stepJobs) Poll(_ context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.UpstreamRef != "j1" {
		return nil, errors.New("no reference")
	}
	if int(s.seen.Add(1)) < s.polls {
		return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: "j1", PollAfter: time.Millisecond}, nil
	}
	return &vendor.JobOutcome{State: vendor.JobSucceeded}, nil
}
func (s *stepJobs) Cancel(context.Context, *vendor.JobRequest) error {
	s.cancelled.Store(true)
	return nil
}

// RunJob submits and polls to the end; past its timeout it cancels the
// job and fails as a timeout.
func TestRunJob(t *testing.T) {
	j := &stepJobs{polls: 3}
	out, err := httpvendor.RunJob(context.Background(), j, &vendor.JobRequest{Timeout: 5 * time.Second}, time.Hour)
	if err != nil || out.State != vendor.JobSucceeded || j.seen.Load() != 3 {
		t.Fatalf("%+v %v %d", out, err, j.seen.Load())
	}
	slow := &stepJobs{polls: 1 << 30}
	start := time.Now()
	_, err = httpvendor.RunJob(context.Background(), slow, &vendor.JobRequest{Timeout: 50 * time.Millisecond}, time.Millisecond)
	if vt.Kind(err) != vendor.FailureTimeout || !slow.cancelled.Load() || time.Since(start) > 2*time.Second {
		t.Fatalf("%v cancelled %v", err, slow.cancelled.Load())
	}
}

// A form streams its fields and files, an upload read from its link as
// the request goes out.
func TestForm(t *testing.T) {
	src := vt.NewUpstream(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "streamed-bytes") })
	var f httpvendor.Form
	f.Field("name", "Ada")
	f.JSONField("n", "2")
	f.JSONField("s", `"text"`)
	f.JSONField("none", "null")
	f.File("a", `we"ird.png`, "image/png", []byte("PNG"))
	f.Upload("b", "b.wav", "audio/wav", &vendor.JobFile{URL: src.URL + "/files/1", Size: 14})
	up := vt.NewUpstream(t, vt.Reply(200, `{}`))
	v := jobVendor(t, up.URL)
	body, ct := f.Reader(context.Background())
	if _, err := v.Post(context.Background(), &httpvendor.PostRequest{Channel: "main", Path: "/f", ContentType: ct, BodyReader: body}); err != nil {
		t.Fatal(err)
	}
	got := string(up.Last(t).Body)
	for _, want := range []string{`name="name"` + "\r\n\r\nAda", `name="n"` + "\r\n\r\n2", `name="s"` + "\r\n\r\ntext",
		`filename="we\"ird.png"`, "Content-Type: image/png\r\n\r\nPNG", `name="b"; filename="b.wav"`, "streamed-bytes"} {
		if !strings.Contains(got, want) {
			t.Errorf("the form lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `name="none"`) {
		t.Error("a null field was sent")
	}
}
