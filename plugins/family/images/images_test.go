package images

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func job(op, body string, files ...vendor.JobFile) *vendor.JobRequest {
	return &vendor.JobRequest{Family: Family, Operation: op, Body: []byte(body), Files: files,
		Model: vendor.JobModel{ID: "img", Upstream: "up-img"}}
}

func pngOf(w, h int) []byte {
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

func dataURI(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }

func TestSpec(t *testing.T) {
	s := Spec()
	if s.Name != "image" || s.UnitType != "image" || s.PriceUnit != "per_image" || s.TaskPrefix != "img_" ||
		s.InFlightStatus != 202 || s.ListItem != "task" || s.ListLimitDefault != 30 || s.ListLimitMax != 100 ||
		!s.ListToExcludesDay || s.ResumeAfterRestart || s.MaxRuntime.Seconds() != 280 || s.AttemptTimeout.Seconds() != 240 ||
		s.CallTimeout.Seconds() != 280 || s.KeepAliveAfter.Seconds() != 90 || s.Retention.Hours() != 24 {
		t.Fatalf("spec %+v", s)
	}
	if !reflect.DeepEqual(s.ListStatuses, []string{"queued", "running", "succeeded", "failed", "in_flight"}) {
		t.Fatalf("statuses %v", s.ListStatuses)
	}
	want := []vendor.FamilyRoute{
		{Method: "POST", Path: "/v1/images/generations", Kind: "create", Operation: "generations", MaxBody: 32 << 20, Async: "field"},
		{Method: "POST", Path: "/v1/images/edits", Kind: "create", Operation: "edits", Multipart: true, MaxBody: 95 << 20, Async: "field"},
		{Method: "GET", Path: "/v1/images/generations/{id}", Kind: "poll"},
		{Method: "GET", Path: "/v1/images/generations", Kind: "list"},
	}
	if !reflect.DeepEqual(s.Routes, want) {
		t.Fatalf("routes %+v", s.Routes)
	}
}

func TestParseRefusals(t *testing.T) {
	cases := []struct {
		desc, op, body string
		files          []vendor.JobFile
		want           string
	}{
		{"prompt required", OpGenerations, `{"model":"img"}`, nil, "prompt is required"},
		{"prompt empty", OpGenerations, `{"prompt":"  "}`, nil, "prompt is required"},
		{"prompt not a string", OpGenerations, `{"prompt":5}`, nil, "prompt must be a string"},
		{"n above 10", OpGenerations, `{"prompt":"p","n":11}`, nil, "n must be"},
		{"n zero", OpGenerations, `{"prompt":"p","n":0}`, nil, "n must be"},
		{"n negative", OpGenerations, `{"prompt":"p","n":-1}`, nil, "n must be"},
		{"n fraction", OpGenerations, `{"prompt":"p","n":1.5}`, nil, "n must be"},
		{"n word", OpGenerations, `{"prompt":"p","n":"two"}`, nil, "n must be"},
		{"n bool", OpGenerations, `{"prompt":"p","n":true}`, nil, "n must be"},
		{"response_format png", OpGenerations, `{"prompt":"p","response_format":"png"}`, nil, "response_format must be"},
		{"size number", OpGenerations, `{"prompt":"p","size":1024}`, nil, "size must be a string"},
		{"async word", OpGenerations, `{"prompt":"p","async":"yes"}`, nil, "async must be"},
		{"async number", OpGenerations, `{"prompt":"p","async":1}`, nil, "async must be"},
		{"stream", OpGenerations, `{"prompt":"p","stream":true}`, nil, "stream is not supported"},
		{"image number", OpGenerations, `{"prompt":"p","image":5}`, nil, "image must be"},
		{"image ftp", OpGenerations, `{"prompt":"p","image":"ftp://h/a.png"}`, nil, "image: must be a public http(s) URL"},
		{"image relative", OpGenerations, `{"prompt":"p","image":"/a.png"}`, nil, "image: must be"},
		{"image no host", OpGenerations, `{"prompt":"p","image":"https:///a.png"}`, nil, "image: must be"},
		{"image array item", OpGenerations, `{"prompt":"p","image":["https://h/a.png",3]}`, nil, "image[1] must be a string"},
		{"data URI not an image", OpGenerations, `{"prompt":"p","image":"data:text/plain;base64,aGk="}`, nil, "must be an image"},
		{"data URI not base64", OpGenerations, `{"prompt":"p","image":"data:image/png,rawbytes"}`, nil, "must be base64"},
		{"data URI bad base64", OpGenerations, `{"prompt":"p","image":"data:image/png;base64,@@@"}`, nil, "does not decode"},
		{"data URI without comma", OpGenerations, `{"prompt":"p","image":"data:image/png;base64"}`, nil, "comma"},
		{"image_urls object", OpGenerations, `{"prompt":"p","image_urls":{"a":1}}`, nil, "image_urls must be"},
		{"image_urls item", OpGenerations, `{"prompt":"p","image_urls":["gopher://h"]}`, nil, "image_urls[0]: must be"},
		{"body not JSON", OpGenerations, `{"prompt":`, nil, "JSON object"},
		{"body an array", OpGenerations, `["prompt"]`, nil, "JSON object"},
		{"body empty", OpGenerations, ``, nil, "JSON object"},
		{"edits without a reference", OpEdits, `{"prompt":"p"}`, nil, "edits needs a reference image"},
		{"edits with an empty file", OpEdits, `{"prompt":"p"}`, []vendor.JobFile{{Field: "image", Filename: "a.png"}}, "is empty"},
		{"unknown file field", OpEdits, `{"prompt":"p"}`, []vendor.JobFile{{Field: "photo", Data: []byte("x")}}, "unknown file field"},
		{"unknown operation", "variations", `{"prompt":"p"}`, nil, "unknown images operation"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			r, err := Parse(job(tc.op, tc.body, tc.files...))
			if err == nil {
				t.Fatalf("accepted: %+v", r)
			}
			if err.Status != 400 || err.Code != "invalid_request" || !strings.Contains(err.Message, tc.want) {
				t.Fatalf("got %+v, want 400 invalid_request with %q", err, tc.want)
			}
		})
	}
}

func TestParseDefaultsAndPassThrough(t *testing.T) {
	r, err := Parse(job(OpGenerations, `{"model":"img","quality":"high","prompt":"a cat","user":"u1","n":null,"style":{"x":[1]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 1 || r.ResponseFormat != FormatURL || r.Size != "" || r.Width != 0 || r.Async || r.Quality != "high" {
		t.Fatalf("defaults %+v", r)
	}
	want := []Field{{"quality", `"high"`}, {"user", `"u1"`}, {"style", `{"x":[1]}`}}
	if !reflect.DeepEqual(r.Extra, want) {
		t.Fatalf("extra %+v", r.Extra)
	}
}

func TestNFromOneToTen(t *testing.T) {
	for _, body := range []string{`{"prompt":"p","n":1}`, `{"prompt":"p","n":10}`, `{"prompt":"p","n":4.0}`, `{"prompt":"p","n":"3"}`} {
		if _, err := Parse(job(OpGenerations, body)); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
}

func TestMultipartStrings(t *testing.T) {
	// A multipart edit's text fields arrive as strings.
	r, err := Parse(job(OpEdits, `{"prompt":"p","n":"2","async":"true","response_format":"b64_json"}`,
		vendor.JobFile{Field: "image[]", Filename: "a.png", ContentType: "image/png", Data: pngOf(2, 2)},
		vendor.JobFile{Field: "image[]", Filename: "b.png", Data: pngOf(2, 2)},
		vendor.JobFile{Field: "mask", Filename: "m.png", Data: pngOf(2, 2)}))
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 2 || !r.Async || r.ResponseFormat != FormatB64 || len(r.Files) != 2 || r.Mask == nil || r.Mask.Filename != "m.png" {
		t.Fatalf("%+v", r)
	}
	// Files only, no text field but the prompt's absence: refused for the prompt.
	if _, err := Parse(&vendor.JobRequest{Operation: OpEdits, Files: []vendor.JobFile{{Field: "image", Data: []byte("x")}}}); err == nil ||
		!strings.Contains(err.Message, "prompt") {
		t.Fatalf("got %v", err)
	}
}

func TestRule4SizePassedThroughUnmodified(t *testing.T) {
	for _, size := range []string{"1024x1024", "10x10", "auto", "1K", "1920X1080"} {
		r, err := Parse(job(OpGenerations, `{"prompt":"p","size":"`+size+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if s := (Model{}).Shape(r); s.Size != size {
			t.Fatalf("size %q sent as %q", size, s.Size)
		}
	}
	if w, h := ParseSize("1920X1080"); w != 1920 || h != 1080 {
		t.Fatalf("%d %d", w, h)
	}
	for _, s := range []string{"auto", "x10", "10x", "0x10", "+1x2", "1x2x3", ""} {
		if w, h := ParseSize(s); w != 0 || h != 0 {
			t.Fatalf("%q parsed as %dx%d", s, w, h)
		}
	}
}

func TestRule7ReferencesMergedInWireOrder(t *testing.T) {
	png1 := pngOf(3, 3)
	body := `{"image_urls":["https://a.example/1.png"],"prompt":"p","image":["` + dataURI(png1) + `","http://b.example/2.png?x=1"]}`
	r, err := Parse(job(OpGenerations, body))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.References) != 3 || r.References[0].URL != "https://a.example/1.png" || !r.References[1].IsData() ||
		!bytes.Equal(r.References[1].Data, png1) || r.References[1].ContentType != "image/png" ||
		r.References[2].URL != "http://b.example/2.png?x=1" || r.References[2].IsData() {
		t.Fatalf("refs %+v", r.References)
	}
	// image as one string; unpadded base64 decodes too.
	raw := base64.RawStdEncoding.EncodeToString(png1)
	r, err = Parse(job(OpEdits, `{"prompt":"p","image":"data:image/png;base64,`+raw+`"}`))
	if err != nil || len(r.References) != 1 || !bytes.Equal(r.References[0].Data, png1) {
		t.Fatalf("%+v %v", r, err)
	}
	// A form's image[] text fields are references too.
	r, err = Parse(job(OpEdits, `{"prompt":"p","image[]":["https://h/1.png","https://h/2.png"]}`))
	if err != nil || len(r.References) != 2 || len(r.Extra) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	// edits with image_urls only are fine.
	if _, err := Parse(job(OpEdits, `{"prompt":"p","image_urls":["https://h/x.png"]}`)); err != nil {
		t.Fatal(err)
	}
}

func TestRule1HoldIsN(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int64
	}{{`{"prompt":"p"}`, 1}, {`{"prompt":"p","n":3}`, 3}, {`{"prompt":"p","n":10}`, 10}} {
		_, _, plan := Plan(job(OpGenerations, tc.body))
		if plan.Error != nil || !reflect.DeepEqual(plan.Hold, []vendor.Units{{Count: tc.want}}) {
			t.Fatalf("%s: %+v", tc.body, plan)
		}
	}
}

func TestRule2FixedGridHoldsMaxOfNAndGrid(t *testing.T) {
	grid := vendor.JobModel{ID: "grid", Settings: map[string]string{SettingGrid: "4"}}
	for _, tc := range []struct {
		n    string
		want int64
	}{{"", 4}, {`,"n":1`, 4}, {`,"n":4`, 4}, {`,"n":6`, 6}} {
		req := job(OpGenerations, `{"prompt":"p"`+tc.n+`}`)
		req.Model = grid
		r, m, plan := Plan(req)
		if plan.Error != nil || !reflect.DeepEqual(plan.Hold, []vendor.Units{{Count: tc.want}}) {
			t.Fatalf("n%s: %+v", tc.n, plan)
		}
		if s := m.Shape(r); s.N != 1 {
			t.Fatalf("n sent as %d, want 1", s.N)
		}
	}
}

func TestRule3FixedGridAspectAndTierFlag(t *testing.T) {
	m := Model{Grid: 4}
	cases := []struct{ size, aspect string }{
		{"", ""}, {"1024x1024", "1:1"}, {"1920x1080", "16:9"}, {"1080x1920", "9:16"}, {"1024x768", "4:3"},
		{"768x1024", "3:4"}, {"2048x1024", "16:9"}, {"1100x1000", "1:1"}, {"1400x1000", "4:3"},
		{"2100x900", ""}, {"1000x3000", ""}, {"auto", ""}, {"16:9", "16:9"}, {"21:9", ""},
	}
	for _, tc := range cases {
		r := &Request{Prompt: "a cat", N: 1, Size: tc.size}
		r.Width, r.Height = ParseSize(tc.size)
		s := m.Shape(r)
		if s.Aspect != tc.aspect || s.Size != "" {
			t.Errorf("size %q: aspect %q size %q, want aspect %q and no size", tc.size, s.Aspect, s.Size, tc.aspect)
		}
	}
	for _, tc := range []struct{ quality, prompt, want string }{
		{"", "a cat", "a cat --sd"}, {"standard", "a cat ", "a cat --sd"}, {"hd", "a cat", "a cat --hd"},
		{"HIGH", "a cat", "a cat --hd"}, {"low", "a cat", "a cat --sd"}, {"hd", "a cat --sd", "a cat --sd"},
	} {
		s := m.Shape(&Request{Prompt: tc.prompt, N: 1, Quality: tc.quality})
		if s.Prompt != tc.want {
			t.Errorf("quality %q prompt %q: got %q, want %q", tc.quality, tc.prompt, s.Prompt, tc.want)
		}
	}
	// Other models keep prompt, n and size as asked.
	s := Model{}.Shape(&Request{Prompt: "a cat", N: 3, Size: "1920x1080"})
	if s.Prompt != "a cat" || s.N != 3 || s.Size != "1920x1080" || s.Aspect != "" {
		t.Fatalf("%+v", s)
	}
}

func TestRule5AreaTier(t *testing.T) {
	area := vendor.JobModel{ID: "area", Settings: map[string]string{SettingAreaThreshold: "2.61"}, Tiers: []string{"hd"}}
	cases := []struct {
		desc, body string
		want       []vendor.Units
	}{
		{"size omitted: held at hd", `{"prompt":"p"}`, []vendor.Units{{Tier: "hd", Count: 1}}},
		{"small size: base", `{"prompt":"p","size":"1024x1024","n":2}`, []vendor.Units{{Count: 2}}},
		{"at the threshold: base", `{"prompt":"p","size":"1000x2610"}`, []vendor.Units{{Count: 1}}},
		{"above the threshold: hd", `{"prompt":"p","size":"1000x2611"}`, []vendor.Units{{Tier: "hd", Count: 1}}},
		{"size of another form: hd", `{"prompt":"p","size":"auto"}`, []vendor.Units{{Tier: "hd", Count: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			req := job(OpGenerations, tc.body)
			req.Model = area
			_, _, plan := Plan(req)
			if plan.Error != nil || !reflect.DeepEqual(plan.Hold, tc.want) {
				t.Fatalf("%+v", plan)
			}
		})
	}
	t.Run("without the hd tier the threshold prices nothing", func(t *testing.T) {
		req := job(OpGenerations, `{"prompt":"p"}`)
		req.Model = vendor.JobModel{Settings: map[string]string{SettingAreaThreshold: "2.61"}}
		if _, _, plan := Plan(req); !reflect.DeepEqual(plan.Hold, []vendor.Units{{Count: 1}}) {
			t.Fatalf("%+v", plan.Hold)
		}
	})
	t.Run("settles downward only", func(t *testing.T) {
		m, _ := ModelOf(area)
		omitted := &Request{N: 3}
		got := m.Delivered(omitted, [][2]int{{1024, 1024}, {2048, 2048}, {0, 0}})
		if !reflect.DeepEqual(got, []vendor.Units{{Count: 1}, {Tier: "hd", Count: 2}}) {
			t.Fatalf("held hd: %+v", got)
		}
		small := &Request{N: 2, Size: "1024x1024", Width: 1024, Height: 1024}
		got = m.Delivered(small, [][2]int{{2048, 2048}, {4096, 4096}})
		if !reflect.DeepEqual(got, []vendor.Units{{Count: 2}}) {
			t.Fatalf("held base, delivered large: %+v", got)
		}
	})
	t.Run("threshold parsing", func(t *testing.T) {
		for in, want := range map[string]int64{"2.61": 2_610_000, "1": 1_000_000, ".5": 500_000, "0.000001": 1} {
			if got, err := megapixels(in); err != nil || got != want {
				t.Errorf("%q: %d %v", in, got, err)
			}
		}
		for _, in := range []string{"", "x", "-1", "0", "1.0000001", "1e3", "+2"} {
			if _, err := megapixels(in); err == nil {
				t.Errorf("%q accepted", in)
			}
		}
	})
}

func TestRule6IgnoreSizeDropsSize(t *testing.T) {
	req := job(OpGenerations, `{"prompt":"a wide cat, 16:9","size":"1920x1080"}`)
	req.Model = vendor.JobModel{Settings: map[string]string{SettingIgnoreSize: "true"}}
	r, m, plan := Plan(req)
	if plan.Error != nil {
		t.Fatal(plan.Error)
	}
	if s := m.Shape(r); s.Size != "" || s.Prompt != "a wide cat, 16:9" {
		t.Fatalf("%+v", s)
	}
}

func TestBadModelSettingIsTheOperatorsError(t *testing.T) {
	for _, s := range []map[string]string{{SettingGrid: "four"}, {SettingGrid: "0"}, {SettingAreaThreshold: "big"}, {SettingIgnoreSize: "yes"}} {
		req := job(OpGenerations, `{"prompt":"p"}`)
		req.Model = vendor.JobModel{ID: "m", Settings: s, Tiers: []string{"hd"}}
		_, _, plan := Plan(req)
		if plan.Error == nil || plan.Error.Status != 500 || plan.Error.Code != "internal_error" || !strings.Contains(plan.Error.Message, `model "m"`) {
			t.Fatalf("%v: %+v", s, plan.Error)
		}
	}
}

func TestPlanFamily(t *testing.T) {
	req := job(OpGenerations, `{"prompt":"p"}`)
	req.Family = "video"
	if _, _, plan := Plan(req); plan.Error == nil || plan.Error.Status != 400 {
		t.Fatalf("%+v", plan)
	}
}

func TestRenderURLHostsBytes(t *testing.T) {
	r := &Request{N: 2, ResponseFormat: FormatURL, Size: "64x32", Width: 64, Height: 32}
	res := Result{Created: 1700000000, Images: []Image{
		{Data: pngOf(64, 32), Fields: []Field{{"revised_prompt", `"a cat"`}}},
		{Data: pngOf(64, 32), Size: "64x32"},
	}, Usage: `{"input_tokens":5,"output_tokens":7,"input_tokens_details":{"text_tokens":5}}`,
		Fields: []Field{{"background", `"opaque"`}, {"model", `"up"`}}}
	out := Render(Model{ID: "img"}, r, res)
	if out.State != vendor.JobSucceeded || out.Status != 200 || out.ExpiresSlot != "expires_at" || len(out.URLs) != 0 || out.Inline {
		t.Fatalf("%+v", out)
	}
	want := `{"model":"img","created":1700000000,"expires_at":null,"data":[{"url":"","size":"64x32","revised_prompt":"a cat"},{"url":"","size":"64x32"}],"background":"opaque","usage":{"generated_images":2,"output_tokens":7,"total_tokens":0,"input_tokens":5,"input_tokens_details":{"text_tokens":5}}}`
	if string(out.Body) != want {
		t.Fatalf("body\n%s\nwant\n%s", out.Body, want)
	}
	if len(out.Files) != 2 || out.Files[1].Slot != "data.1.url" || out.Files[0].ContentType != "image/png" ||
		out.Files[0].Name != "image-0.png" || !bytes.Equal(out.Files[0].Data, res.Images[0].Data) {
		t.Fatalf("files %+v", out.Files)
	}
	if !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 2}}) {
		t.Fatalf("units %+v", out.Units)
	}
}

// The client's response_format holds whatever the upstream answers: an
// upstream's link is re-hosted for url, fetched and inlined for b64_json
// (issue 24, point 11); no answer carries the upstream's address.
func TestRenderUpstreamHostedURLs(t *testing.T) {
	img := Image{URL: "https://cdn.example/a.png", Size: "512x512", Header: map[string]string{"authorization": "Bearer k"}}
	out := Render(Model{ID: "img"}, &Request{N: 1, ResponseFormat: FormatURL}, Result{Created: 1, Images: []Image{img}})
	if out.ExpiresSlot != "expires_at" || len(out.URLs) != 0 || len(out.Files) != 1 || out.Inline {
		t.Fatalf("%+v", out)
	}
	f := out.Files[0]
	if f.Slot != "data.0.url" || f.URL != img.URL || f.Inline || f.Header["authorization"] != "Bearer k" {
		t.Fatalf("file %+v", f)
	}
	if strings.Contains(string(out.Body), "cdn.example") || gjson.GetBytes(out.Body, "data.0.size").Str != "512x512" {
		t.Fatalf("%s", out.Body)
	}
	out = Render(Model{ID: "img"}, &Request{N: 1, ResponseFormat: FormatB64}, Result{Created: 1, Images: []Image{img}})
	if !out.Inline || out.ExpiresSlot != "" || len(out.Files) != 1 || out.Files[0].Slot != "data.0.b64_json" || !out.Files[0].Inline {
		t.Fatalf("b64_json of a link: %+v", out)
	}
	if strings.Contains(string(out.Body), "cdn.example") || !gjson.GetBytes(out.Body, "data.0.b64_json").Exists() {
		t.Fatalf("%s", out.Body)
	}
}

func TestReferenceCaps(t *testing.T) {
	var refs []string
	for i := range MaxReferences + 1 {
		refs = append(refs, `"https://h/`+strconv.Itoa(i)+`.png"`)
	}
	if _, err := Parse(job(OpEdits, `{"prompt":"p","image_urls":[`+strings.Join(refs, ",")+`]}`)); err == nil || !strings.Contains(err.Message, "at most 16") {
		t.Fatalf("17 references: %v", err)
	}
	big := vendor.JobFile{Field: "image[]", Filename: "a.png", URL: "http://127.0.0.1/files/x", Size: MaxReferenceBytes/2 + 1}
	if _, err := Parse(job(OpEdits, `{"prompt":"p"}`, big, big)); err == nil || !strings.Contains(err.Message, "MB") {
		t.Fatalf("references over the byte cap: %v", err)
	}
	if _, err := Parse(job(OpEdits, `{"prompt":"p"}`, big)); err != nil {
		t.Fatalf("one file by link: %v", err)
	}
}

func TestRenderB64(t *testing.T) {
	img := pngOf(16, 8)
	r := &Request{N: 1, ResponseFormat: FormatB64}
	out := Render(Model{ID: "img"}, r, Result{Created: 1, Images: []Image{{Data: img}}})
	if out.ExpiresSlot != "" || len(out.Files) != 0 || !out.Inline {
		t.Fatalf("%+v", out)
	}
	b64 := gjson.GetBytes(out.Body, "data.0.b64_json").Str
	if got, _ := base64.StdEncoding.DecodeString(b64); !bytes.Equal(got, img) {
		t.Fatal("b64_json does not decode to the image")
	}
	if gjson.GetBytes(out.Body, "data.0.size").Str != "16x8" || gjson.GetBytes(out.Body, "usage.generated_images").Int() != 1 {
		t.Fatalf("%s", out.Body)
	}
}

func TestRenderNoImages(t *testing.T) {
	out := Render(Model{ID: "img"}, &Request{N: 2, ResponseFormat: FormatURL}, Result{Created: 1})
	if out.Units != nil || string(out.Body) != `{"model":"img","created":1,"data":[],"usage":{"generated_images":0,"output_tokens":0,"total_tokens":0}}` {
		t.Fatalf("%+v %s", out.Units, out.Body)
	}
}

func TestUnitsCappedAtTheHold(t *testing.T) {
	m := Model{Grid: 4}
	out := Render(m, &Request{N: 1, ResponseFormat: FormatB64}, Result{Created: 1, Images: make([]Image, 6)})
	if !reflect.DeepEqual(out.Units, []vendor.Units{{Count: 4}}) {
		t.Fatalf("%+v", out.Units)
	}
}

func TestParseAnswer(t *testing.T) {
	img := pngOf(4, 4)
	body := `{"created":7,"background":"opaque","data":[{"b64_json":"` + base64.StdEncoding.EncodeToString(img) +
		`","revised_prompt":"rp"},{"url":"https://u/x.png"}],"size":"1024x1024","usage":{"total_tokens":3}}`
	res, ok := ParseAnswer([]byte(body))
	if !ok || res.Created != 7 || len(res.Images) != 2 || !bytes.Equal(res.Images[0].Data, img) ||
		res.Images[0].Size != "1024x1024" || res.Images[1].URL != "https://u/x.png" || res.Usage != `{"total_tokens":3}` ||
		!reflect.DeepEqual(res.Images[0].Fields, []Field{{"revised_prompt", `"rp"`}}) ||
		!reflect.DeepEqual(res.Fields, []Field{{"background", `"opaque"`}, {"size", `"1024x1024"`}}) {
		t.Fatalf("%+v %v", res, ok)
	}
	for _, bad := range []string{`{"data":{}}`, `[]`, `{"data":[{"b64_json":"@@"}]}`, `{"data":[{}]}`, `{`} {
		if _, ok := ParseAnswer([]byte(bad)); ok {
			t.Fatalf("%s accepted", bad)
		}
	}
}

func TestSniffSize(t *testing.T) {
	if s := sniffSize(pngOf(33, 17)); s != "33x17" {
		t.Fatal(s)
	}
	// VP8X canvas 300x200.
	vp8x := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00\x2b\x01\x00\xc7\x00\x00")
	if s := sniffSize(vp8x); s != "300x200" {
		t.Fatal(s)
	}
	if s := sniffSize([]byte("not an image")); s != "" {
		t.Fatal(s)
	}
}

func TestFailedCarriesTheUpstreamStatusAndMessage(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"error":{"message":"Invalid size","type":"invalid_request_error","param":"size","code":"invalid_value"}}`, "Invalid size"},
		{500, `{"error":"boom"}`, "boom"},
		{422, `{"detail":"bad prompt"}`, "bad prompt"},
		{502, `<html>bad gateway</html>`, "<html>bad gateway</html>"},
		{503, ``, "Service Unavailable"},
		{599, ``, "upstream status 599"},
	}
	for _, tc := range cases {
		out := Failed(tc.status, []byte(tc.body))
		if out.State != vendor.JobFailed || out.Error.Status != tc.status || out.Error.Code != "" || out.Error.Message != tc.want {
			t.Errorf("%d %s: %+v", tc.status, tc.body, out.Error)
		}
	}
	if m := UpstreamMessage(500, []byte(strings.Repeat("é", 800))); len(m) > 1000 {
		t.Fatalf("message of %d bytes", len(m))
	}
	if out := Refused(Invalid("x")); out.State != vendor.JobFailed || out.Error.Status != http.StatusBadRequest {
		t.Fatalf("%+v", out)
	}
}
