package vendorsim

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

func imagesServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(New(Options{APIKey: testKey}).Handler())
	t.Cleanup(srv.Close)
	return srv
}

func imagesPost(t *testing.T, url, ct, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func form(t *testing.T, fields map[string]string, files ...[3]string) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	for _, f := range files { // field, filename, content type
		h := map[string][]string{
			"Content-Disposition": {`form-data; name="` + f[0] + `"; filename="` + f[1] + `"`},
			"Content-Type":        {f[2]},
		}
		pw, _ := w.CreatePart(h)
		_, _ = pw.Write([]byte("\x89PNG\r\n\x1a\n"))
	}
	_ = w.Close()
	return w.FormDataContentType(), buf.String()
}

func TestImagesGenerations(t *testing.T) {
	srv := imagesServer(t)
	url := srv.URL + "/v1/images/generations"
	status, _, body := imagesPost(t, url, "application/json", `{"model":"gpt-image-1","prompt":"a cat","n":2,"size":"1536x1024","quality":"low"}`)
	b := gjson.Parse(body)
	if status != 200 || len(b.Get("data").Array()) != 2 || b.Get("background").Str != "opaque" || b.Get("output_format").Str != "png" ||
		b.Get("quality").Str != "low" || b.Get("size").Str != "1536x1024" || b.Get("usage.output_tokens").Int() != 2*272 ||
		!b.Get("usage.input_tokens_details.text_tokens").Exists() || b.Get("created").Int() == 0 || b.Get("data.0.url").Exists() {
		t.Fatalf("%d %s", status, body)
	}
	raw, _ := base64.StdEncoding.DecodeString(b.Get("data.0.b64_json").Str)
	if c, err := png.DecodeConfig(bytes.NewReader(raw)); err != nil || c.Width != 1536 || c.Height != 1024 {
		t.Fatalf("%+v %v", c, err)
	}

	t.Run("dall-e answers url by default, served here", func(t *testing.T) {
		status, _, body := imagesPost(t, url, "application/json", `{"model":"dall-e-2","prompt":"a cat","size":"256x256"}`)
		u := gjson.Get(body, "data.0.url").Str
		if status != 200 || !strings.Contains(u, "/sim-files/256x256/") || gjson.Get(body, "usage").Exists() {
			t.Fatalf("%d %s", status, body)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if c, err := png.DecodeConfig(resp.Body); err != nil || c.Width != 256 || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("%+v %v", c, err)
		}
		_, _, body = imagesPost(t, url, "application/json", `{"model":"dall-e-3","prompt":"a cat","response_format":"b64_json"}`)
		if gjson.Get(body, "data.0.b64_json").Str == "" || gjson.Get(body, "data.0.revised_prompt").Str == "" {
			t.Fatalf("%s", body)
		}
	})

	errCases := []struct {
		desc, body    string
		status        int
		message, code string
	}{
		{"prompt missing", `{"model":"gpt-image-1"}`, 400, "Missing required parameter: 'prompt'.", "missing_required_parameter"},
		{"response_format on a GPT image model", `{"model":"gpt-image-1","prompt":"p","response_format":"url"}`, 400,
			"Unknown parameter: 'response_format'.", "unknown_parameter"},
		{"size", `{"model":"gpt-image-1","prompt":"p","size":"512x512"}`, 400,
			"Invalid value: '512x512'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.", "invalid_value"},
		{"n above 10", `{"model":"dall-e-2","prompt":"p","n":11}`, 400,
			"Invalid 'n': integer above maximum value. Expected a value <= 10, but got 11 instead.", "integer_above_max_value"},
		{"dall-e-3 takes one", `{"model":"dall-e-3","prompt":"p","n":2}`, 400, "You must provide n=1 for this model.", ""},
		{"unknown model", `{"model":"gpt-4o","prompt":"p"}`, 400, "", "invalid_value"},
		{"marker error", `{"model":"gpt-image-1","prompt":"p [sim:error=503]"}`, 503, "Simulated upstream error 503 requested by [sim:error=503].", ""},
		{"marker fail", `{"model":"gpt-image-1","prompt":"p [sim:fail=500]"}`, 500, "Simulated upstream error 500 requested by [sim:fail=500].", ""},
		{"bad JSON", `{`, 400, "", ""},
	}
	for _, tc := range errCases {
		t.Run(tc.desc, func(t *testing.T) {
			status, h, body := imagesPost(t, url, "application/json", tc.body)
			e := gjson.Get(body, "error")
			if status != tc.status || !e.Get("type").Exists() || !e.Get("param").Exists() || !e.Get("code").Exists() ||
				tc.message != "" && e.Get("message").Str != tc.message || tc.code != "" && e.Get("code").Str != tc.code {
				t.Fatalf("%d %s", status, body)
			}
			if status == 503 && h.Get("Retry-After") == "" {
				t.Fatal("no retry-after")
			}
		})
	}
	t.Run("images marker", func(t *testing.T) {
		_, _, body := imagesPost(t, url, "application/json", `{"model":"gpt-image-1","prompt":"p %5Bsim:images=3%5D"}`)
		if n := len(gjson.Get(body, "data").Array()); n != 3 {
			t.Fatalf("%d images", n)
		}
	})
	t.Run("auth", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"prompt":"p"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
}

func TestImagesEdits(t *testing.T) {
	srv := imagesServer(t)
	url := srv.URL + "/v1/images/edits"
	ct, body := form(t, map[string]string{"model": "gpt-image-1", "prompt": "blue", "n": "2"},
		[3]string{"image[]", "a.png", "image/png"}, [3]string{"image[]", "b.png", "image/png"}, [3]string{"mask", "m.png", "image/png"})
	status, _, answer := imagesPost(t, url, ct, body)
	if status != 200 || len(gjson.Get(answer, "data").Array()) != 2 {
		t.Fatalf("%d %.300s", status, answer)
	}
	type refusal struct {
		desc          string
		ct, body      string
		message, code string
	}
	cases := []refusal{{"JSON", "application/json", `{"prompt":"p"}`, "Unsupported content type: 'application/json'. This API method only accepts 'multipart/form-data' requests, but you specified the header 'Content-Type: application/json'. Please try again with a supported content type.", "unsupported_content_type"}}
	ct, body = form(t, map[string]string{"model": "gpt-image-1", "prompt": "p"})
	cases = append(cases, refusal{"no image", ct, body, "Missing required parameter: 'image'.", "missing_required_parameter"})
	ct, body = form(t, map[string]string{"model": "gpt-image-1", "prompt": "p"}, [3]string{"image", "a.bin", "application/octet-stream"})
	cases = append(cases, refusal{"octet-stream", ct, body, "Invalid file 'image': unsupported mimetype ('application/octet-stream'). Supported file formats are 'image/jpeg', 'image/png', and 'image/webp'.", "invalid_value"})
	ct, body = form(t, map[string]string{"model": "dall-e-3", "prompt": "p"}, [3]string{"image", "a.png", "image/png"})
	cases = append(cases, refusal{"dall-e-3 does not edit", ct, body, "", "invalid_value"})
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			status, _, answer := imagesPost(t, url, tc.ct, tc.body)
			e := gjson.Get(answer, "error")
			if status != 400 || tc.message != "" && e.Get("message").Str != tc.message || e.Get("code").Str != tc.code {
				t.Fatalf("%d %s", status, answer)
			}
		})
	}
}

// The official SDK's calls are what the simulator answers, and its
// answers parse.
func TestImagesWithSDK(t *testing.T) {
	srv := imagesServer(t)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	gen, err := client.Images.Generate(t.Context(), openai.ImageGenerateParams{Prompt: "a cat", Model: "gpt-image-1",
		N: openai.Int(2), Size: openai.ImageGenerateParamsSize1024x1536})
	if err != nil || len(gen.Data) != 2 || gen.Data[0].B64JSON == "" || gen.Usage.TotalTokens == 0 || gen.Size != "1024x1536" {
		t.Fatalf("%+v %v", gen, err)
	}
	img := func(name string) io.Reader {
		return openai.File(bytes.NewReader([]byte("\x89PNG\r\n\x1a\n")), name, "image/png")
	}
	edit, err := client.Images.Edit(t.Context(), openai.ImageEditParams{Prompt: "blue", Model: "gpt-image-1",
		Image: openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{img("a.png"), img("b.png")}}})
	if err != nil || len(edit.Data) != 1 {
		t.Fatalf("%+v %v", edit, err)
	}
	_, err = client.Images.Generate(t.Context(), openai.ImageGenerateParams{Prompt: "a cat", Model: "gpt-image-1", Size: "640x480"})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_value" || apiErr.Param != "size" {
		t.Fatalf("%v", err)
	}
}
