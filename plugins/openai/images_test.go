package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// recorded is an images upstream (internal/vendorsim) that keeps what
// reached it.
type recorded struct {
	mu   sync.Mutex
	reqs []vendorsim.Request
	url  string
}

func (r *recorded) last(t *testing.T) vendorsim.Request {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("the upstream got no request")
	}
	return r.reqs[len(r.reqs)-1]
}

func (r *recorded) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

// imagesVendor is the openai plugin on a recording vendorsim.
func imagesVendor(t *testing.T, allowPrivate bool, settings map[string]string) (*openai.Vendor, *recorded) {
	rec := &recorded{}
	up := httptest.NewServer(vendorsim.New(vendorsim.Options{APIKey: "sk-img", Record: func(r vendorsim.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r)
		rec.mu.Unlock()
	}}).Handler())
	t.Cleanup(up.Close)
	rec.url = up.URL
	v := openai.New()
	if err := v.Configure(context.Background(), vendor.Config{AllowPrivateURLs: allowPrivate, Channels: []vendor.Channel{
		{Name: "main", BaseURL: up.URL, APIKey: "sk-img", Settings: settings}}}); err != nil {
		t.Fatal(err)
	}
	return v, rec
}

func imageJob(upstream, op, body string, files ...vendor.JobFile) *vendor.JobRequest {
	return &vendor.JobRequest{Family: "image", Operation: op, Channel: "main", Body: []byte(body), Files: files,
		Model: vendor.JobModel{ID: "img", Upstream: upstream}, Timeout: 10 * time.Second}
}

func run(t *testing.T, v *openai.Vendor, req *vendor.JobRequest) *vendor.JobOutcome {
	t.Helper()
	out, err := v.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImagesGenerationsWire(t *testing.T) {
	v, up := imagesVendor(t, false, map[string]string{"organization": "org-1", "project": "proj-1"})
	out := run(t, v, imageJob("gpt-image-1", "generations",
		`{"model":"img","prompt":"a cat","n":2,"size":"1024x1024","quality":"high","user":"u1","response_format":"url","async":false}`))
	got := up.last(t)
	if got.Path != "/v1/images/generations" || got.Header.Get("Content-Type") != "application/json" ||
		got.Header.Get("Authorization") != "Bearer sk-img" || got.Header.Get("OpenAI-Organization") != "org-1" ||
		got.Header.Get("OpenAI-Project") != "proj-1" {
		t.Fatalf("upstream got %s %v", got.Path, got.Header)
	}
	// GPT image models refuse response_format: it is not sent; the
	// gateway's own fields (async) never are.
	if want := `{"model":"gpt-image-1","prompt":"a cat","n":2,"size":"1024x1024","quality":"high","user":"u1"}`; string(got.Body) != want {
		t.Fatalf("body %s\nwant %s", got.Body, want)
	}
	if out.State != vendor.JobSucceeded || len(out.Files) != 2 || out.ExpiresSlot != "expires_at" {
		t.Fatalf("%+v", out)
	}
	b := gjson.ParseBytes(out.Body)
	for _, f := range []string{"background", "output_format", "quality", "size", "usage.input_tokens_details.text_tokens"} {
		if !b.Get(f).Exists() {
			t.Errorf("upstream field %s not passed through: %s", f, out.Body)
		}
	}
	if b.Get("usage.generated_images").Int() != 2 || b.Get("usage.output_tokens").Int() != 2*4160 || b.Get("model").Str != "img" {
		t.Fatalf("%s", out.Body)
	}
}

func TestImagesDallEAsksBase64(t *testing.T) {
	v, up := imagesVendor(t, false, nil)
	out := run(t, v, imageJob("dall-e-3", "generations", `{"prompt":"a cat","response_format":"url"}`))
	if !strings.Contains(string(up.last(t).Body), `"response_format":"b64_json"`) {
		t.Fatalf("body %s", up.last(t).Body)
	}
	// The gateway hosts the bytes; dall-e-3's revised_prompt passes through.
	if len(out.Files) != 1 || gjson.GetBytes(out.Body, "data.0.revised_prompt").Str != "A detailed rendering of: a cat" ||
		gjson.GetBytes(out.Body, "data.0.size").Str != "1024x1024" {
		t.Fatalf("%+v %s", out, out.Body)
	}
	out = run(t, v, imageJob("dall-e-2", "generations", `{"prompt":"a cat","response_format":"b64_json","size":"256x256"}`))
	if len(out.Files) != 0 || gjson.GetBytes(out.Body, "data.0.b64_json").Str == "" || gjson.GetBytes(out.Body, "data.0.size").Str != "256x256" {
		t.Fatalf("%s", out.Body)
	}
}

// multipartOf reads a recorded multipart body: its text fields and its
// files (field, filename, content type).
func multipartOf(t *testing.T, r vendorsim.Request) (map[string]string, [][3]string) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("content type %q", r.Header.Get("Content-Type"))
	}
	fields := map[string]string{}
	var files [][3]string
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return fields, files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		if p.FileName() == "" {
			fields[p.FormName()] = string(data)
			continue
		}
		files = append(files, [3]string{p.FormName(), p.FileName(), p.Header.Get("Content-Type")})
	}
}

func TestImagesEditsWire(t *testing.T) {
	v, up := imagesVendor(t, false, nil)
	png := imagestest.PNG(8, 8)
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	out := run(t, v, imageJob("gpt-image-1", "edits", `{"prompt":"make it blue","n":"1","quality":"low","image":"`+uri+`","background":"auto"}`,
		vendor.JobFile{Field: "image[]", Filename: "a.png", ContentType: "application/octet-stream", Data: png},
		vendor.JobFile{Field: "mask", Filename: "m.png", Data: png}))
	if out.State != vendor.JobSucceeded {
		t.Fatalf("%+v", out.Error)
	}
	got := up.last(t)
	fields, files := multipartOf(t, got)
	if got.Path != "/v1/images/edits" || fields["model"] != "gpt-image-1" || fields["prompt"] != "make it blue" || fields["n"] != "1" ||
		fields["quality"] != "low" || fields["background"] != "auto" || fields["response_format"] != "" {
		t.Fatalf("fields %v", fields)
	}
	// The client's file first, then its reference, both as image[]; the
	// declared octet-stream is replaced by what the bytes are.
	want := [][3]string{{"image[]", "a.png", "image/png"}, {"image[]", "image-2.png", "image/png"}, {"mask", "m.png", "image/png"}}
	if len(files) != 3 || files[0] != want[0] || files[1] != want[1] || files[2] != want[2] {
		t.Fatalf("files %v", files)
	}

	// One image is sent as image; a generations call with a reference
	// goes to edits.
	run(t, v, imageJob("gpt-image-1", "generations", `{"prompt":"p","image_urls":["`+uri+`"]}`))
	got = up.last(t)
	if _, files := multipartOf(t, got); got.Path != "/v1/images/edits" || len(files) != 1 || files[0][0] != "image" {
		t.Fatalf("%s %v", got.Path, files)
	}
}

func TestImagesReferenceFetching(t *testing.T) {
	png := imagestest.PNG(8, 8)
	ref := vt.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(png)
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html></html>")
		default:
			http.NotFound(w, r)
		}
	})
	t.Run("private addresses refused by default", func(t *testing.T) {
		v, up := imagesVendor(t, false, nil)
		for _, u := range []string{ref.URL + "/a.png", strings.Replace(ref.URL, "127.0.0.1", "localhost", 1) + "/a.png"} {
			out := run(t, v, imageJob("gpt-image-1", "edits", `{"prompt":"p","image":"`+u+`"}`))
			if out.State != vendor.JobFailed || out.Error.Status != 400 || !strings.Contains(out.Error.Message, "no usable answer") {
				t.Fatalf("%s: %+v", u, out.Error)
			}
		}
		if up.count() != 0 {
			t.Fatal("the upstream was called")
		}
	})
	t.Run("allowed by allow_private_urls", func(t *testing.T) {
		v, up := imagesVendor(t, true, nil)
		out := run(t, v, imageJob("gpt-image-1", "edits", `{"prompt":"p","image":"`+ref.URL+`/a.png"}`))
		if out.State != vendor.JobSucceeded {
			t.Fatalf("%+v", out.Error)
		}
		if _, files := multipartOf(t, up.last(t)); len(files) != 1 || files[0][2] != "image/png" {
			t.Fatalf("%v", files)
		}
		for path, want := range map[string]string{"/gone.png": "no usable answer", "/page": "is not a PNG"} {
			out := run(t, v, imageJob("gpt-image-1", "edits", `{"prompt":"p","image":"`+ref.URL+path+`"}`))
			if out.State != vendor.JobFailed || out.Error.Status != 400 || !strings.Contains(out.Error.Message, want) {
				t.Fatalf("%s: %+v", path, out.Error)
			}
		}
	})
}

func TestImagesAnswerNotImagesShape(t *testing.T) {
	up := vt.NewUpstream(t, vt.Reply(200, `{"ok":true}`))
	v := openai.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	_, err := v.Run(context.Background(), imageJob("gpt-image-1", "generations", `{"prompt":"p"}`))
	if vt.Kind(err) != vendor.FailureBroken {
		t.Fatalf("got %v", err)
	}
}

func TestImagesUpstreamErrorPassedThrough(t *testing.T) {
	body := `{"error":{"message":"Your request was rejected by the safety system.","type":"image_generation_user_error","param":null,"code":"moderation_blocked"}}`
	up := vt.NewUpstream(t, vt.Reply(400, body))
	v := openai.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: up.URL, APIKey: "k"})
	out := run(t, v, imageJob("gpt-image-1", "generations", `{"prompt":"p"}`))
	if out.State != vendor.JobFailed || out.Error.Status != 400 || out.Error.Code != "" ||
		out.Error.Message != "Your request was rejected by the safety system." {
		t.Fatalf("%+v", out.Error)
	}
}

func TestImagesNoUpstreamJobs(t *testing.T) {
	v, _ := imagesVendor(t, false, nil)
	plan, _ := v.Validate(context.Background(), imageJob("gpt-image-1", "generations", `{"prompt":"p","async":true}`))
	if plan.UpstreamJob || plan.Error != nil {
		t.Fatalf("%+v", plan)
	}
	if _, err := v.Submit(context.Background(), imageJob("gpt-image-1", "generations", `{"prompt":"p"}`)); vt.Kind(err) != vendor.FailureConfig {
		t.Fatalf("submit: %v", err)
	}
}
