// Package imagestest is the conformance suite every image plugin passes:
// a plugin's test calls Run with a Target (the vendor, configured, and the
// models to use). Run it against the in-process vendor and against one
// behind the real gRPC transport (OverGRPC, or a plugin binary through
// plugins/host), so both behave alike.
package imagestest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	_ "image/jpeg" // image.DecodeConfig reads JPEG answers too
	"image/png"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/images"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Target is the image plugin under test.
type Target struct {
	// Name is the name Describe must report.
	Name string
	// New returns the vendor configured with channel Channel and with
	// AllowPrivateURLs (the suite serves reference images on loopback).
	// It is called once per Run.
	New     func(t *testing.T) vendor.Vendor
	Channel string // "main" when empty
	// Plain is a model priced per image that honours n; Grid a fixed-grid
	// model (settings grid = "4"); Area an area-priced one (tier hd,
	// area_threshold_mp). Cases of a model whose ID is empty are skipped.
	Plain, Grid, Area vendor.JobModel
	// GridRuns: the upstream serves Grid as a fixed-grid model (it returns
	// grid images for n = 1); otherwise only Grid's hold is checked.
	GridRuns bool
	// SmallSize is a size the upstream accepts at or below Area's
	// threshold; LargeSize one above it. The upstream's default size
	// must be at or below the threshold.
	SmallSize, LargeSize string
	// FetchesReferences: the plugin itself fetches reference URLs (the
	// suite checks its loopback image was read).
	FetchesReferences bool
	// Reject, when set, is a body the upstream refuses, and the status
	// and message the refusal must carry, unchanged.
	Reject *Reject
}

// Reject is an upstream refusal the suite checks is passed through.
type Reject struct {
	Body    string // a generations body for Plain
	Status  int
	Message string
}

// Run runs the suite as subtests of t. The upstream must obey the sim's
// job markers in the prompt: [sim:error=CODE] (refused at submit),
// [sim:fail=CODE] (fails at its end), [sim:images=N], [sim:latency=DUR],
// [sim:hang].
func Run(t *testing.T, target Target) {
	t.Helper()
	if target.Channel == "" {
		target.Channel = "main"
	}
	s := &suite{target: target, v: target.New(t)}
	s.refServer(t)
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"describe", s.describe},
		{"validate_refusals", s.refusals},
		{"hold", s.hold},
		{"run_url", s.runURL},
		{"run_b64_json", s.runB64},
		{"edits_multipart", s.editsMultipart},
		{"edits_data_uri", s.editsDataURI},
		{"edits_reference_url", s.editsURL},
		{"units_and_tiers", s.tiers},
		{"grid", s.grid},
		{"images_returned", s.imagesMarker},
		{"upstream_error", s.upstreamError},
		{"upstream_reject_passed_through", s.reject},
		{"job_failure_at_its_end", s.failMarker},
		{"unknown_channel", s.unknownChannel},
		{"hang_timeout", s.hang},
		{"async", s.async},
	} {
		t.Run(c.name, c.run)
	}
}

type suite struct {
	target  Target
	v       vendor.Vendor
	refURL  string
	refHits atomic.Int64
}

// refServer serves a reference image on loopback for the whole run.
func (s *suite) refServer(t *testing.T) {
	img := PNG(32, 32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.refHits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(img)
	}))
	t.Cleanup(srv.Close)
	s.refURL = srv.URL + "/ref.png"
}

// req builds a request to the target's channel.
func (s *suite) req(m vendor.JobModel, op, body string, files ...vendor.JobFile) *vendor.JobRequest {
	return &vendor.JobRequest{Family: images.Family, Operation: op, Channel: s.target.Channel, Model: m,
		Body: []byte(body), Files: files, Async: gjson.Get(body, "async").Bool(),
		RequestID: "req-conformance", Timeout: familytest.CallLimit / 2}
}

func (s *suite) describe(t *testing.T) {
	familytest.Describes(t, s.v, s.target.Name, images.Spec())
}

// refusals are requests every image plugin refuses at Validate, with the
// spec rule they break.
var refusals = []struct {
	desc, op, body string
}{
	{"prompt required", images.OpGenerations, `{"model":"m"}`},
	{"prompt empty", images.OpGenerations, `{"prompt":""}`},
	{"n above 10", images.OpGenerations, `{"prompt":"p","n":11}`},
	{"n zero", images.OpGenerations, `{"prompt":"p","n":0}`},
	{"n not whole", images.OpGenerations, `{"prompt":"p","n":2.5}`},
	{"response_format unknown", images.OpGenerations, `{"prompt":"p","response_format":"png"}`},
	{"size not a string", images.OpGenerations, `{"prompt":"p","size":512}`},
	{"async not a bool", images.OpGenerations, `{"prompt":"p","async":"maybe"}`},
	{"reference not http(s)", images.OpGenerations, `{"prompt":"p","image":"file:///etc/passwd"}`},
	{"reference data URI not an image", images.OpGenerations, `{"prompt":"p","image":"data:text/html;base64,PGI+"}`},
	{"image_urls not strings", images.OpGenerations, `{"prompt":"p","image_urls":[1]}`},
	{"edits without a reference image", images.OpEdits, `{"prompt":"p"}`},
	{"body not an object", images.OpGenerations, `"p"`},
}

func (s *suite) refusals(t *testing.T) {
	for _, tc := range refusals {
		t.Run(tc.desc, func(t *testing.T) {
			plan, err := familytest.Jobs(t, s.v).Validate(familytest.Ctx(t), s.req(s.target.Plain, tc.op, tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if plan.Error == nil || plan.Error.Status != 400 || plan.Error.Code != "invalid_request" || plan.Error.Message == "" {
				t.Fatalf("plan %+v, want a 400 invalid_request refusal", plan)
			}
			if len(plan.Hold) != 0 {
				t.Fatalf("a refusal holds %+v", plan.Hold)
			}
		})
	}
}

func (s *suite) hold(t *testing.T) {
	tg := s.target
	cases := []struct {
		desc  string
		model vendor.JobModel
		body  string
		want  []vendor.Units
	}{
		{"n defaults to 1", tg.Plain, `{"prompt":"p"}`, []vendor.Units{{Count: 1}}},
		{"n images", tg.Plain, `{"prompt":"p","n":3}`, []vendor.Units{{Count: 3}}},
		{"grid: max(n, grid) for n 1", tg.Grid, `{"prompt":"p","n":1}`, []vendor.Units{{Count: 4}}},
		{"grid: max(n, grid) for n 6", tg.Grid, `{"prompt":"p","n":6}`, []vendor.Units{{Count: 6}}},
		{"area: size omitted holds hd", tg.Area, `{"prompt":"p","n":2}`, []vendor.Units{{Tier: "hd", Count: 2}}},
		{"area: a small size holds base", tg.Area, `{"prompt":"p","size":"` + tg.SmallSize + `"}`, []vendor.Units{{Count: 1}}},
		{"area: a large size holds hd", tg.Area, `{"prompt":"p","size":"` + tg.LargeSize + `"}`, []vendor.Units{{Tier: "hd", Count: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if tc.model.ID == "" {
				t.Skip("no such model in the target")
			}
			plan, err := familytest.Jobs(t, s.v).Validate(familytest.Ctx(t), s.req(tc.model, images.OpGenerations, tc.body))
			if err != nil || plan.Error != nil {
				t.Fatalf("%+v %v", plan, err)
			}
			if !reflect.DeepEqual(plan.Hold, tc.want) {
				t.Fatalf("hold %+v, want %+v", plan.Hold, tc.want)
			}
		})
	}
}

// succeeded checks an outcome is a 200 JSON answer for model with count
// images, and returns its body.
func succeeded(t *testing.T, out *vendor.JobOutcome, err error, model string, count int) gjson.Result {
	t.Helper()
	if err != nil {
		t.Fatalf("error %v", err)
	}
	if out.State != vendor.JobSucceeded || out.Status != 200 || out.Error != nil {
		t.Fatalf("outcome state %d status %d error %+v body %.300s", out.State, out.Status, out.Error, out.Body)
	}
	if !gjson.ValidBytes(out.Body) {
		t.Fatalf("body is not JSON: %.300s", out.Body)
	}
	b := gjson.ParseBytes(out.Body)
	if b.Get("model").Str != model || b.Get("created").Int() <= 0 {
		t.Fatalf("model/created: %.300s", out.Body)
	}
	if n := len(b.Get("data").Array()); n != count {
		t.Fatalf("%d images, want %d: %.300s", n, count, out.Body)
	}
	u := b.Get("usage")
	if u.Get("generated_images").Int() != int64(count) || !u.Get("output_tokens").Exists() || !u.Get("total_tokens").Exists() {
		t.Fatalf("usage %s", u.Raw)
	}
	var units int64
	for _, x := range out.Units {
		units += x.Count
	}
	if units != int64(count) {
		t.Fatalf("units %+v for %d images", out.Units, count)
	}
	return b
}

// hosted checks a url answer whose images the gateway hosts: each item's
// url slot is empty and has its file, which decodes at the item's size.
func hosted(t *testing.T, out *vendor.JobOutcome, b gjson.Result) {
	t.Helper()
	items := b.Get("data").Array()
	if out.Inline {
		t.Fatal("a url answer is marked Inline")
	}
	if len(out.Files) != len(items) || out.ExpiresSlot != "expires_at" || !b.Get("expires_at").Exists() {
		t.Fatalf("%d files, expires slot %q, for %d items: %.300s", len(out.Files), out.ExpiresSlot, len(items), out.Body)
	}
	for i, f := range out.Files {
		if f.Slot != "data."+strconv.Itoa(i)+".url" || items[i].Get("url").Str != "" || f.ContentType == "" || len(f.Data) == 0 {
			t.Fatalf("file %d: slot %q type %q, %d bytes; item %s", i, f.Slot, f.ContentType, len(f.Data), items[i].Raw)
		}
		checkImage(t, f.Data, items[i].Get("size").Str)
	}
}

// checkImage checks b is an image of size (WxH).
func checkImage(t *testing.T, b []byte, size string) {
	t.Helper()
	c, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not an image: %v", err)
	}
	if got := strconv.Itoa(c.Width) + "x" + strconv.Itoa(c.Height); got != size {
		t.Fatalf("image of %s, reported as %q", got, size)
	}
}

func (s *suite) runURL(t *testing.T) {
	m := s.target.Plain
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpGenerations, `{"prompt":"a toll booth at dawn","n":2,"response_format":"url"}`))
	b := succeeded(t, out, err, m.ID, 2)
	hosted(t, out, b)
	if !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 2}}) {
		t.Fatalf("units %+v", out.Units)
	}
}

func (s *suite) runB64(t *testing.T) {
	m := s.target.Plain
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpGenerations, `{"prompt":"a toll booth at dusk","response_format":"b64_json"}`))
	b := succeeded(t, out, err, m.ID, 1)
	if len(out.Files) != 0 || out.ExpiresSlot != "" || b.Get("expires_at").Exists() {
		t.Fatalf("b64_json hosts files: %d, %q", len(out.Files), out.ExpiresSlot)
	}
	if !out.Inline {
		t.Fatal("a b64_json answer is not marked Inline (kept for replays)")
	}
	raw, err := base64.StdEncoding.DecodeString(b.Get("data.0.b64_json").Str)
	if err != nil {
		t.Fatalf("b64_json: %v", err)
	}
	checkImage(t, raw, b.Get("data.0.size").Str)
}

func (s *suite) editsMultipart(t *testing.T) {
	m := s.target.Plain
	files := []vendor.JobFile{
		{Field: "image[]", Filename: "a.png", ContentType: "image/png", Data: PNG(16, 16)},
		{Field: "image[]", Filename: "b.png", ContentType: "image/png", Data: PNG(16, 16)},
	}
	// A multipart request's text fields arrive as strings.
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpEdits, `{"prompt":"make it blue","n":"1","response_format":"url"}`, files...))
	hosted(t, out, succeeded(t, out, err, m.ID, 1))

	one := []vendor.JobFile{{Field: "image", Filename: "a.png", ContentType: "image/png", Data: PNG(16, 16)}}
	out, err = familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpEdits, `{"prompt":"make it red","response_format":"b64_json"}`, one...))
	succeeded(t, out, err, m.ID, 1)
}

func (s *suite) editsDataURI(t *testing.T) {
	m := s.target.Plain
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(PNG(16, 16))
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpEdits, `{"prompt":"add a flag","image":"`+uri+`"}`))
	hosted(t, out, succeeded(t, out, err, m.ID, 1))
}

func (s *suite) editsURL(t *testing.T) {
	m := s.target.Plain
	before := s.refHits.Load()
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpEdits, `{"prompt":"add a flag","image_urls":["`+s.refURL+`"]}`))
	succeeded(t, out, err, m.ID, 1)
	if s.target.FetchesReferences && s.refHits.Load() == before {
		t.Fatal("the plugin never fetched the reference URL")
	}
}

func (s *suite) tiers(t *testing.T) {
	tg := s.target
	if tg.Area.ID == "" {
		t.Skip("no area-priced model in the target")
	}
	cases := []struct {
		desc, body string
		want       []vendor.Units
	}{
		{"a large image settles hd", `{"prompt":"p","size":"` + tg.LargeSize + `"}`, []vendor.Units{{Tier: "hd", Count: 1}}},
		{"a small image settles base", `{"prompt":"p","size":"` + tg.SmallSize + `"}`, []vendor.Units{{Count: 1}}},
		{"held hd, the default size settles downward", `{"prompt":"p"}`, []vendor.Units{{Count: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(tg.Area, images.OpGenerations, tc.body))
			succeeded(t, out, err, tg.Area.ID, 1)
			if !reflect.DeepEqual(out.Units, tc.want) {
				t.Fatalf("units %+v, want %+v", out.Units, tc.want)
			}
		})
	}
}

func (s *suite) grid(t *testing.T) {
	if s.target.Grid.ID == "" || !s.target.GridRuns {
		t.Skip("the target serves no fixed-grid model")
	}
	m := s.target.Grid
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpGenerations, `{"prompt":"four cats","n":1,"size":"1920x1080"}`))
	succeeded(t, out, err, m.ID, 4)
	if !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 4}}) {
		t.Fatalf("units %+v", out.Units)
	}
}

func (s *suite) imagesMarker(t *testing.T) {
	m := s.target.Plain
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpGenerations, `{"prompt":"three cats [sim:images=1]","n":3}`))
	succeeded(t, out, err, m.ID, 1)
	if !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 1}}) {
		t.Fatalf("units %+v for one image of three", out.Units)
	}
}

func (s *suite) upstreamError(t *testing.T) {
	for _, status := range []int{400, 429, 500, 503} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(s.target.Plain, images.OpGenerations,
				`{"prompt":"a cat [sim:error=`+strconv.Itoa(status)+`]"}`))
			familytest.Failed(t, out, err, status)
			if !strings.Contains(out.Error.Message, strconv.Itoa(status)) {
				t.Fatalf("message %q", out.Error.Message)
			}
		})
	}
}

func (s *suite) reject(t *testing.T) {
	r := s.target.Reject
	if r == nil {
		t.Skip("the target names no upstream refusal")
	}
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(s.target.Plain, images.OpGenerations, r.Body))
	familytest.Failed(t, out, err, r.Status)
	if out.Error.Message != r.Message {
		t.Fatalf("message %q, want the upstream's %q unchanged", out.Error.Message, r.Message)
	}
}

func (s *suite) failMarker(t *testing.T) {
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(s.target.Plain, images.OpGenerations, `{"prompt":"a cat [sim:fail=502,latency=20ms]"}`))
	familytest.Failed(t, out, err, 502)
}

func (s *suite) unknownChannel(t *testing.T) {
	req := s.req(s.target.Plain, images.OpGenerations, `{"prompt":"p"}`)
	req.Channel = "imagestest-unknown-channel"
	_, err := familytest.Jobs(t, s.v).Run(familytest.Ctx(t), req)
	familytest.WantFailure(t, err, vendor.FailureConfig)
	// A plugin without upstream jobs answers Submit with a failure too.
	_, err = familytest.Jobs(t, s.v).Submit(familytest.Ctx(t), req)
	var f *vendor.Failure
	if !errors.As(err, &f) {
		t.Fatalf("Submit: %v (%T), want a *vendor.Failure", err, err)
	}
}

func (s *suite) hang(t *testing.T) {
	req := s.req(s.target.Plain, images.OpGenerations, `{"prompt":"p [sim:hang]"}`)
	req.Timeout = familytest.HangTimeout
	start := time.Now()
	_, err := familytest.Jobs(t, s.v).Run(familytest.Ctx(t), req)
	familytest.WantFailure(t, err, vendor.FailureTimeout)
	if d := time.Since(start); d > familytest.HangLimit {
		t.Fatalf("a %v timeout took %v", familytest.HangTimeout, d)
	}
}

// async runs async requests: as an upstream job when the plan says so
// (then Submit refuses and Poll fails as the markers ask, and a running
// job stays running), else as one Run.
func (s *suite) async(t *testing.T) {
	m := s.target.Plain
	j := familytest.Jobs(t, s.v)
	body := `{"prompt":"a cat [sim:latency=30ms]","n":2,"async":true}`
	plan, err := j.Validate(familytest.Ctx(t), s.req(m, images.OpGenerations, body))
	if err != nil || plan.Error != nil || !reflect.DeepEqual(plan.Hold, []vendor.Units{{Count: 2}}) {
		t.Fatalf("plan %+v %v", plan, err)
	}
	out, err := familytest.Execute(t, familytest.Jobs(t, s.v), s.req(m, images.OpGenerations, body))
	hosted(t, out, succeeded(t, out, err, m.ID, 2))
	if !plan.UpstreamJob {
		return
	}
	t.Run("same answer as synchronous", func(t *testing.T) {
		syncBody := `{"prompt":"a cat","n":2,"response_format":"b64_json"}`
		sync, err := j.Run(familytest.Ctx(t), s.req(m, images.OpGenerations, syncBody))
		sb := succeeded(t, sync, err, m.ID, 2)
		async, err := familytest.SubmitAndPoll(t, familytest.Jobs(t, s.v), s.req(m, images.OpGenerations, `{"prompt":"a cat","n":2,"response_format":"b64_json","async":true}`))
		ab := succeeded(t, async, err, m.ID, 2)
		if familytest.Keys(sb) != familytest.Keys(ab) || familytest.Keys(sb.Get("data.0")) != familytest.Keys(ab.Get("data.0")) || familytest.Keys(sb.Get("usage")) != familytest.Keys(ab.Get("usage")) {
			t.Fatalf("sync %.200s\nasync %.200s", sync.Body, async.Body)
		}
	})
	t.Run("submit refused", func(t *testing.T) {
		out, err := j.Submit(familytest.Ctx(t), s.req(m, images.OpGenerations, `{"prompt":"a cat [sim:error=400]","async":true}`))
		familytest.Failed(t, out, err, 400)
	})
	t.Run("fails at its end", func(t *testing.T) {
		out, err := familytest.SubmitAndPoll(t, familytest.Jobs(t, s.v), s.req(m, images.OpGenerations, `{"prompt":"a cat [sim:fail=500,latency=20ms]","async":true}`))
		familytest.Failed(t, out, err, 500)
	})
	t.Run("running until its latency passed", func(t *testing.T) {
		req := s.req(m, images.OpGenerations, `{"prompt":"a cat [sim:latency=1h]","async":true}`)
		out, err := j.Submit(familytest.Ctx(t), req)
		if err != nil || out.State != vendor.JobRunning || out.UpstreamRef == "" {
			t.Fatalf("submit %+v %v", out, err)
		}
		req.UpstreamRef = out.UpstreamRef
		out, err = j.Poll(familytest.Ctx(t), req)
		if err != nil || out.State != vendor.JobRunning || out.PollAfter <= 0 || len(out.Units) != 0 {
			t.Fatalf("poll %+v %v", out, err)
		}
		if err := j.Cancel(familytest.Ctx(t), req); err != nil {
			var f *vendor.Failure
			if !errors.As(err, &f) {
				t.Fatalf("cancel: %v", err)
			}
		}
	})
	t.Run("unknown reference", func(t *testing.T) {
		req := s.req(m, images.OpGenerations, `{"prompt":"a cat","async":true}`)
		req.UpstreamRef = "imagestest-no-such-job"
		out, err := j.Poll(familytest.Ctx(t), req)
		var f *vendor.Failure
		if err == nil && out.State != vendor.JobFailed || err != nil && !errors.As(err, &f) {
			t.Fatalf("poll of an unknown job: %+v %v", out, err)
		}
	})
}

// PNG is a small w x h PNG.
func PNG(w, h int) []byte {
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // an in-memory image always encodes
	return buf.Bytes()
}

// OverGRPC serves impl over the real gRPC transport (familytest.OverGRPC).
func OverGRPC(t *testing.T, impl vendor.Vendor) vendor.Vendor { return familytest.OverGRPC(t, impl) }
