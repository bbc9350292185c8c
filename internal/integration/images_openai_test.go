package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// The openai plugin speaks OpenAI's images API (vendorsim answers it with
// OpenAI's wire format): GPT image models answer base64, which the gateway
// hosts as links; an edit goes upstream as multipart.
func TestImagesThroughTheOpenAIPlugin(t *testing.T) {
	up := startUpstream(t, sim.Knobs{})
	cfg := `
store "badger" {
  dir = "@DATA@"
}
channel "openai" {
  vendor    = "openai"
  base_url  = "` + up.URL + `"
  api_key   = "` + upstreamKey + `"
  families  = ["image"]
  models    = ["img=gpt-image-1", "dalle=dall-e-2"]
}
model "img" {
  owned_by = "openai"
  family   = "image"
  price {
    per_image = "0.042"
  }
}
model "dalle" {
  owned_by = "openai"
  family   = "image"
  price {
    per_image = "0.02"
  }
}
`
	g := testgw.Start(t, testgw.Options{Config: cfg})
	acct := g.Account("")
	_, key := g.Key(acct, nil)
	c := openai.NewClient(option.WithBaseURL(g.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))

	res, err := c.Images.Generate(t.Context(), openai.ImageGenerateParams{Model: "img", Prompt: "a harbour", N: openai.Int(2), Size: "1024x1536"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[0].URL == "" || res.Data[0].B64JSON != "" {
		t.Fatalf("generate: %s", res.RawJSON())
	}
	for _, d := range res.Data {
		download(t, d.URL)
	}
	// The upstream got the upstream model id, no response_format (GPT
	// image models refuse it), and the gateway's own key never.
	var body map[string]any
	for _, r := range up.requests() {
		if r.Path == "/v1/images/generations" {
			_ = json.Unmarshal(r.Body, &body)
		}
	}
	if body["model"] != "gpt-image-1" || body["response_format"] != nil || body["n"].(float64) != 2 {
		t.Fatalf("upstream body %v", body)
	}

	png := download(t, res.Data[0].URL)
	edit, err := c.Images.Edit(t.Context(), openai.ImageEditParams{Model: "img", Prompt: "at night",
		Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(bytes.NewReader(png), "in.png", "image/png")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(edit.Data) != 1 || edit.Data[0].URL == "" {
		t.Fatalf("edit: %s", edit.RawJSON())
	}
	var multipartSeen bool
	for _, r := range up.requests() {
		if r.Path == "/v1/images/edits" && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			multipartSeen = bytes.Contains(r.Body, []byte("gpt-image-1"))
		}
	}
	if !multipartSeen {
		t.Fatal("the edit did not go upstream as multipart")
	}

	// An upstream refusal passes through with its status and message.
	_, err = c.Images.Generate(t.Context(), openai.ImageGenerateParams{Model: "img", Prompt: "odd", Size: "640x480"})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_request" {
		t.Fatalf("refusal: %v", err)
	}

	// 3 images at 0.042; the refusal is free.
	bal, held := g.Balance(acct)
	if held != "0" || money.MustParse("121.32")-money.MustParse(bal) != money.MustParse("0.126") {
		t.Fatalf("balance %s held %s", bal, held)
	}
	resp := do(t, "GET", g.URL+"/v1/logs?period=all", bearer(key), "")
	var page struct{ Data []map[string]any }
	_ = json.NewDecoder(io.NopCloser(bytes.NewReader(resp.Body))).Decode(&page)
	if len(page.Data) != 3 || page.Data[0]["status"] != "rejected" && page.Data[0]["status"] != "error" {
		t.Fatalf("rows %v", page.Data)
	}
}
