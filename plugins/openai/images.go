package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/family/images"
	"github.com/tollgate-gw/tollgate/plugins/httpvendor"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The image family on OpenAI's images API: POST /v1/images/generations
// (JSON) and POST /v1/images/edits (multipart/form-data, image files as
// image or image[]). OpenAI has no image jobs, so every request is one
// synchronous Run, async ones included (the gateway runs those in the
// background). The family's rules (plugins/family/images) validate, hold
// and render; this file speaks OpenAI's wire.

const (
	// maxAnswer bounds an images answer: up to ten base64 images.
	maxAnswer = 100 << 20
	// maxReference bounds one fetched reference image (OpenAI's limit
	// for an edit's image).
	maxReference = 50 << 20
)

// planImages checks a request by the family's rules. OpenAI runs no image
// jobs: the plan is always a Run.
func planImages(req *vendor.JobRequest) *vendor.JobPlan {
	_, _, plan := images.Plan(req)
	return plan
}

// runImages makes the upstream call: generations without a reference
// image, edits (multipart, the references fetched or decoded and
// uploaded) with one, as OpenAI takes reference images only there.
func (v *Vendor) runImages(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	r, m, plan := images.Plan(req)
	if plan.Error != nil {
		return images.Refused(plan.Error), nil
	}
	// One deadline for the fetches and the call.
	var deadline time.Time
	if req.Timeout > 0 {
		deadline = time.Now().Add(req.Timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	sh := m.Shape(r)
	post := &httpvendor.PostRequest{Channel: req.Channel, MaxBody: maxAnswer, Headers: req.Headers}
	if r.HasReference() {
		body, ct, refusal, err := v.editsBody(ctx, req.Model.Upstream, r, sh)
		if refusal != nil || err != nil {
			return refusal, err
		}
		post.Path, post.ContentType, post.BodyReader = images.PathEdits, ct, body
	} else {
		post.Path, post.ContentType, post.Body = images.PathGenerations, "application/json", generationsBody(req.Model.Upstream, r, sh)
	}
	if !deadline.IsZero() {
		post.Timeout = max(time.Until(deadline), time.Millisecond)
	}
	resp, err := v.Post(ctx, post)
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return images.Failed(resp.Status, resp.Body), nil
	}
	res, ok := images.ParseAnswer(resp.Body)
	if !ok {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "openai: the images answer is not the images API's shape"}
	}
	return images.Render(m, r, res), nil
}

// sendsResponseFormat reports whether the upstream model takes
// response_format: the DALL·E models do (we ask b64_json, so the gateway
// hosts what a client asked as url); GPT image models always answer
// base64 and refuse the field.
func sendsResponseFormat(upstream string) bool {
	return strings.HasPrefix(strings.ToLower(upstream), "dall-e")
}

// generationsBody is the JSON of POST /v1/images/generations.
func generationsBody(upstream string, r *images.Request, sh images.Shaped) []byte {
	b := make([]byte, 0, 256+len(sh.Prompt))
	b = append(b, `{"model":`...)
	b = appendJSONString(b, upstream)
	b = append(b, `,"prompt":`...)
	b = appendJSONString(b, sh.Prompt)
	b = append(b, `,"n":`...)
	b = strconv.AppendInt(b, int64(sh.N), 10)
	if sh.Size != "" {
		b = append(b, `,"size":`...)
		b = appendJSONString(b, sh.Size)
	}
	if sendsResponseFormat(upstream) {
		b = append(b, `,"response_format":"b64_json"`...)
	}
	for _, f := range r.Extra {
		b = append(b, ',')
		b = appendJSONString(b, f.Name)
		b = append(b, ':')
		b = append(b, f.Raw...)
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// editsBody is the multipart form of POST /v1/images/edits: the text
// fields, then the images (the client's files, then its references,
// fetched or decoded), then the mask. Uploads stream from the gateway into
// the form as it goes out, never whole in memory; a reference that cannot
// be had is the client's 400, found before anything is sent.
func (v *Vendor) editsBody(ctx context.Context, upstream string, r *images.Request, sh images.Shaped) (io.Reader, string, *vendor.JobOutcome, error) {
	type part struct {
		name, ct string
		data     []byte
		file     *vendor.JobFile
	}
	var parts []part
	for i := range r.Files {
		f := &r.Files[i]
		ct := imageType(f.ContentType, f.Data)
		if ct == "" {
			return nil, "", images.Refused(images.Invalid("image " + strconv.Itoa(i+1) + " (" + f.Filename + ") is not a PNG, JPEG, WebP or GIF image.")), nil
		}
		parts = append(parts, part{f.Filename, ct, nil, f})
	}
	for i, ref := range r.References {
		data, ct := ref.Data, ref.ContentType
		if !ref.IsData() {
			var err error
			data, ct, err = v.Fetch(ctx, ref.URL, maxReference)
			var fe *httpvendor.FetchError
			if errors.As(err, &fe) {
				return nil, "", images.Refused(images.Invalid("reference image " + strconv.Itoa(i+1) + " (" + ref.URL +
					") could not be fetched: " + fe.Reason + ".")), nil
			}
			if err != nil {
				return nil, "", nil, err
			}
		}
		if ct = imageType(ct, data); ct == "" {
			return nil, "", images.Refused(images.Invalid("reference image " + strconv.Itoa(i+1) + " is not a PNG, JPEG, WebP or GIF image.")), nil
		}
		parts = append(parts, part{"", ct, data, nil})
	}
	if r.Mask != nil && imageType(r.Mask.ContentType, r.Mask.Data) == "" {
		return nil, "", images.Refused(images.Invalid("the mask is not a PNG image.")), nil
	}
	var f httpvendor.Form
	f.Field("model", upstream)
	f.Field("prompt", sh.Prompt)
	f.Field("n", strconv.Itoa(sh.N))
	if sh.Size != "" {
		f.Field("size", sh.Size)
	}
	if sendsResponseFormat(upstream) {
		f.Field("response_format", "b64_json")
	}
	for _, x := range r.Extra {
		f.JSONField(x.Name, x.Raw)
	}
	imageField := "image"
	if len(parts) > 1 {
		imageField = "image[]"
	}
	for i, p := range parts {
		name := p.name
		if name == "" {
			name = "image-" + strconv.Itoa(i+1) + "." + strings.TrimPrefix(p.ct, "image/")
		}
		if p.file != nil {
			f.Upload(imageField, name, p.ct, p.file)
		} else {
			f.File(imageField, name, p.ct, p.data)
		}
	}
	if r.Mask != nil {
		name := r.Mask.Filename
		if name == "" {
			name = "mask.png"
		}
		f.Upload("mask", name, imageType(r.Mask.ContentType, r.Mask.Data), r.Mask)
	}
	body, ct := f.Reader(ctx)
	return body, ct, nil, nil
}

// imageType is the image media type OpenAI is told for an upload: the
// declared one when it is an image type it takes, else what the bytes
// are (an upload's declared type is what the gateway sniffed when the
// client sent none); "" when they are no image. OpenAI refuses
// application/octet-stream.
func imageType(declared string, data []byte) string {
	if mt, _, err := mime.ParseMediaType(declared); err == nil {
		switch mt {
		case "image/png", "image/jpeg", "image/webp", "image/gif":
			return mt
		}
	}
	switch mt := http.DetectContentType(data); mt {
	case "image/png", "image/jpeg", "image/webp", "image/gif":
		return mt
	}
	return ""
}
