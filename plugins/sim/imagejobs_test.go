package sim

import (
	"bytes"
	"context"
	"image/png"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func imageVendor(t *testing.T, settings map[string]string) *Vendor {
	t.Helper()
	v := New(nil)
	if err := v.Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{{Name: "main", Settings: settings}}}); err != nil {
		t.Fatal(err)
	}
	return v
}

func imageReq(body string, settings map[string]string) *vendor.JobRequest {
	return &vendor.JobRequest{Family: "image", Operation: "generations", Channel: "main", Body: []byte(body),
		Model: vendor.JobModel{ID: "sim-image", Upstream: "sim-image", Settings: settings}, Timeout: 5 * time.Second}
}

func TestImagePNG(t *testing.T) {
	for _, s := range [][2]int{{1, 1}, {64, 33}, {1024, 1024}, {1456, 816}} {
		b := ImagePNG(s[0], s[1], 42)
		c, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil || c.Width != s[0] || c.Height != s[1] {
			t.Fatalf("%v: %+v %v", s, c, err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ImagePNG(1024, 1024, 1)); n > 4096 {
		t.Fatalf("a 1024x1024 image of %d bytes", n)
	}
	if !bytes.Equal(ImagePNG(8, 8, 7), ImagePNG(8, 8, 7)) || bytes.Equal(ImagePNG(8, 8, 7), ImagePNG(8, 8, 8)) {
		t.Fatal("not deterministic by seed")
	}
}

func TestImageMarkers(t *testing.T) {
	cases := []struct {
		desc  string
		texts []string
		want  JobKnobs
	}{
		{"none", []string{"a cat"}, JobKnobs{Images: -1}},
		{"raw", []string{"a cat [sim:latency=2s,fail=503,images=2]"}, JobKnobs{Latency: 2 * time.Second, Fail: 503, Images: 2}},
		{"percent-encoded", []string{"a cat %5Bsim%3Aerror%3D429%5D"}, JobKnobs{Error: 429, Images: -1}},
		{"in a reference URL's query", []string{"a cat", "https://h/x.png?m=%5Bsim:images=3%5D"}, JobKnobs{Images: 3}},
		{"chat fault markers", []string{"[sim:hang] [sim:cut=2] [sim:words=5]"}, JobKnobs{Hang: true, Cut: true, Images: -1}},
		{"out of range values are text", []string{"[sim:fail=200,images=99,latency=-1s,error=x]"}, JobKnobs{Images: -1}},
		{"unclosed", []string{"[sim:fail=500"}, JobKnobs{Images: -1}},
		{"seconds and a flag", []string{"a song [sim:seconds=7.5] [sim:nospeech]"}, JobKnobs{Images: -1, Seconds: 7.5, NoSpeech: true}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			k := JobKnobs{Images: -1}
			ScanJobMarkers(&k, tc.texts...)
			if k != tc.want {
				t.Fatalf("got %+v, want %+v", k, tc.want)
			}
		})
	}
}

func TestImageFrame(t *testing.T) {
	cases := []struct {
		size, aspect, min string
		w, h              int
		refused           string
	}{
		{"", "", "", 1024, 1024, ""},
		{"auto", "", "", 1024, 1024, ""},
		{"640x480", "", "", 640, 480, ""},
		{"10x10", "", "", 0, 0, "between 64 and 4096"},
		{"5000x1000", "", "", 0, 0, "between 64 and 4096"},
		{"banana", "", "", 0, 0, "Invalid value: 'banana'"},
		{"16:9", "", "", 0, 0, "Invalid value: '16:9'"},
		{"", "16:9", "", 1456, 816, ""},
		{"512x512", "", "960x960", 0, 0, "at least 960x960"},
		{"", "", "1920x1920", 1920, 1920, ""},
		{"1920x1920", "", "1920x1920", 1920, 1920, ""},
	}
	for _, tc := range cases {
		w, h, refused := ImageFrame(tc.size, tc.aspect, tc.min)
		if w != tc.w || h != tc.h || (tc.refused == "") != (refused == "") || !strings.Contains(refused, tc.refused) {
			t.Errorf("%+v: %d %d %q", tc, w, h, refused)
		}
	}
}

func TestImageGridShaping(t *testing.T) {
	v := imageVendor(t, nil)
	req := imageReq(`{"prompt":"four cats","size":"1920x1080","quality":"hd"}`, map[string]string{"grid": "4"})
	out, err := v.Run(context.Background(), req)
	if err != nil || out.State != vendor.JobSucceeded {
		t.Fatalf("%+v %v", out, err)
	}
	b := gjson.ParseBytes(out.Body)
	if len(b.Get("data").Array()) != 4 || b.Get("data.0.size").Str != "1456x816" || b.Get("data.0.revised_prompt").Str != "four cats --hd" {
		t.Fatalf("%s", out.Body)
	}
}

func TestImageChannelKnobs(t *testing.T) {
	v := imageVendor(t, map[string]string{"fault": "error=503"})
	out, err := v.Run(context.Background(), imageReq(`{"prompt":"a cat"}`, nil))
	if err != nil || out.State != vendor.JobFailed || out.Error.Status != 503 {
		t.Fatalf("%+v %v", out, err)
	}
	v = imageVendor(t, map[string]string{"latency": "1h"})
	req := imageReq(`{"prompt":"a cat"}`, nil)
	req.Timeout = 50 * time.Millisecond
	if _, err := v.Run(context.Background(), req); err == nil || err.(*vendor.Failure).Kind != vendor.FailureTimeout {
		t.Fatalf("got %v", err)
	}
}

func TestImageMinSize(t *testing.T) {
	v := imageVendor(t, nil)
	out, err := v.Run(context.Background(), imageReq(`{"prompt":"a cat","size":"512x512"}`, map[string]string{SettingMinSize: "960x960"}))
	if err != nil || out.State != vendor.JobFailed || out.Error.Status != 400 ||
		out.Error.Message != "Invalid size '512x512'. This model requires a size of at least 960x960." {
		t.Fatalf("%+v %v", out.Error, err)
	}
}

func TestImageJobRef(t *testing.T) {
	v := imageVendor(t, nil)
	req := imageReq(`{"prompt":"a cat [sim:latency=40ms,images=2]","n":3,"size":"256x128","async":true}`,
		map[string]string{"area_threshold_mp": "0.01"})
	req.Model.Tiers = []string{"hd"}
	plan, _ := v.Validate(context.Background(), req)
	if !plan.UpstreamJob || !reflect.DeepEqual(plan.Hold, []vendor.Units{{Tier: "hd", Count: 3}}) {
		t.Fatalf("%+v", plan)
	}
	sub, err := v.Submit(context.Background(), req)
	if err != nil || sub.State != vendor.JobRunning || !strings.HasPrefix(sub.UpstreamRef, refPrefix) {
		t.Fatalf("%+v %v", sub, err)
	}
	// A fresh plugin (a restart) polls the job from its reference alone.
	v2 := imageVendor(t, nil)
	poll := &vendor.JobRequest{Family: "image", Channel: "main", UpstreamRef: sub.UpstreamRef}
	out, _ := v2.Poll(context.Background(), poll)
	if out.State != vendor.JobRunning {
		t.Fatalf("%+v", out)
	}
	time.Sleep(50 * time.Millisecond)
	out, err = v2.Poll(context.Background(), poll)
	if err != nil || out.State != vendor.JobSucceeded || len(out.Files) != 2 || gjson.GetBytes(out.Body, "data.1.size").Str != "256x128" ||
		!reflect.DeepEqual(out.Units, []vendor.Units{{Tier: "hd", Count: 2}}) || gjson.GetBytes(out.Body, "model").Str != "sim-image" {
		t.Fatalf("%+v %v %s", out, err, out.Body)
	}
	for _, bad := range []string{"", "other", refPrefix + "!!", refPrefix + "e30"} {
		poll.UpstreamRef = bad
		out, err := v2.Poll(context.Background(), poll)
		if err != nil || out.State != vendor.JobFailed || out.Error.Status != 404 {
			t.Fatalf("%q: %+v %v", bad, out, err)
		}
	}
}

func TestImageAnswerIsDeterministic(t *testing.T) {
	v := imageVendor(t, nil)
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v.now = func() time.Time { return fixed } // only the timestamp is the clock's
	a, _ := v.Run(context.Background(), imageReq(`{"prompt":"a cat","response_format":"b64_json"}`, nil))
	b, _ := v.Run(context.Background(), imageReq(`{"prompt":"a cat","response_format":"b64_json"}`, nil))
	if !bytes.Equal(a.Body, b.Body) {
		t.Fatal("two answers to one request differ")
	}
}

// Like the vendors it stands in for, sim answers a value it does not take
// (size, quality, output format) with the upstream's 400, which the
// gateway passes on unchanged; it never draws a default image instead.
func TestImageBadValuesAreRefused(t *testing.T) {
	v := imageVendor(t, nil)
	for _, tc := range []struct{ desc, body, want string }{
		{"a size that is no size", `{"prompt":"a cat","size":"banana"}`, "Invalid value: 'banana'. Supported values are: 'auto' and 'WIDTHxHEIGHT'"},
		{"an unknown quality", `{"prompt":"a cat","quality":"ultra"}`, `Invalid value for 'quality': "ultra". Supported values are: 'auto', 'low', 'medium', 'high', 'standard', 'hd'.`},
		{"a quality that is no string", `{"prompt":"a cat","quality":3}`, `Invalid value for 'quality': 3.`},
		{"an unknown output format", `{"prompt":"a cat","output_format":"gif"}`, `Invalid value for 'output_format': "gif". Supported values are: 'png', 'jpeg', 'webp'.`},
	} {
		for _, async := range []bool{false, true} {
			req := imageReq(tc.body, nil)
			call := v.Run
			if async {
				call = v.Submit
			}
			out, err := call(context.Background(), req)
			if err != nil || out.State != vendor.JobFailed || out.Error == nil || out.Error.Status != 400 ||
				!strings.Contains(out.Error.Message, tc.want) {
				t.Errorf("%s (async %v): %+v %v", tc.desc, async, out, err)
			}
		}
	}
	for _, ok := range []string{`{"prompt":"a cat","size":"auto","quality":"high","output_format":"webp"}`, `{"prompt":"a cat","quality":null}`} {
		if out, err := v.Run(context.Background(), imageReq(ok, nil)); err != nil || out.State != vendor.JobSucceeded {
			t.Errorf("%s: %+v %v", ok, out, err)
		}
	}
	// A fixed-grid model takes any quality as its tier flag.
	if out, err := v.Run(context.Background(), imageReq(`{"prompt":"a cat","quality":"ultra"}`, map[string]string{"grid": "4"})); err != nil || out.State != vendor.JobSucceeded {
		t.Errorf("grid quality: %+v %v", out, err)
	}
}

// An answer's created is when the images were made: the request's time
// for a synchronous call, the job's end for an async one, never before
// the job was submitted.
func TestImageCreatedIsNow(t *testing.T) {
	v := imageVendor(t, nil)
	now := time.Unix(1_900_000_000, 0)
	v.now = func() time.Time { return now }
	out, err := v.Run(context.Background(), imageReq(`{"prompt":"a cat"}`, nil))
	if err != nil || gjson.GetBytes(out.Body, "created").Int() != now.Unix() {
		t.Fatalf("sync created %s, want %d (%v)", gjson.GetBytes(out.Body, "created").Raw, now.Unix(), err)
	}
	sub, err := v.Submit(context.Background(), imageReq(`{"prompt":"a cat [sim:latency=90s]"}`, nil))
	if err != nil || sub.State != vendor.JobRunning {
		t.Fatalf("submit %+v %v", sub, err)
	}
	poll := imageReq(`{"prompt":"a cat [sim:latency=90s]"}`, nil)
	poll.UpstreamRef = sub.UpstreamRef
	now = now.Add(5 * time.Minute)
	out, err = v.Poll(context.Background(), poll)
	if err != nil || out.State != vendor.JobSucceeded || gjson.GetBytes(out.Body, "created").Int() != 1_900_000_090 {
		t.Fatalf("async created %s, want the job's end 1900000090 (%+v %v)", gjson.GetBytes(out.Body, "created").Raw, out, err)
	}
}
