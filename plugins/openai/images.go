package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

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

// Validate checks a request by the family's rules. OpenAI runs no image
// jobs: the plan is always a Run.
func (v *Vendor) Validate(_ context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	_, _, plan := images.Plan(req)
	return plan, nil
}

// Run makes the upstream call: generations without a reference image,
// edits (multipart, the references fetched or decoded and uploaded) with
// one, as OpenAI takes reference images only there.
func (v *Vendor) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
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

// noJobs answers the job calls: OpenAI runs images synchronously.
var noJobs = &vendor.Failure{Kind: vendor.FailureConfig, Message: "openai: images run synchronously; there is no upstream job"}

// Submit is not offered: Validate never plans an upstream job.
func (v *Vendor) Submit(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return nil, noJobs
}

// Poll is not offered: Validate never plans an upstream job.
func (v *Vendor) Poll(context.Context, *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return nil, noJobs
}

// Cancel is not offered: Validate never plans an upstream job.
func (v *Vendor) Cancel(context.Context, *vendor.JobRequest) error { return noJobs }

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
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(func() error {
			field := func(name, value string) error { return w.WriteField(name, value) }
			if err := field("model", upstream); err != nil {
				return err
			}
			if err := field("prompt", sh.Prompt); err != nil {
				return err
			}
			if err := field("n", strconv.Itoa(sh.N)); err != nil {
				return err
			}
			if sh.Size != "" {
				if err := field("size", sh.Size); err != nil {
					return err
				}
			}
			if sendsResponseFormat(upstream) {
				if err := field("response_format", "b64_json"); err != nil {
					return err
				}
			}
			for _, f := range r.Extra {
				val := gjson.Parse(f.Raw)
				var err error
				switch val.Type {
				case gjson.Null:
				case gjson.String:
					err = field(f.Name, val.Str)
				default:
					err = field(f.Name, f.Raw)
				}
				if err != nil {
					return err
				}
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
				if err := writeFile(ctx, w, imageField, name, p.ct, p.data, p.file); err != nil {
					return err
				}
			}
			if r.Mask != nil {
				name := r.Mask.Filename
				if name == "" {
					name = "mask.png"
				}
				if err := writeFile(ctx, w, "mask", name, imageType(r.Mask.ContentType, r.Mask.Data), r.Mask.Data, r.Mask); err != nil {
					return err
				}
			}
			return w.Close()
		}())
	}()
	return pr, w.FormDataContentType(), nil, nil
}

// writeFile writes one file part: data, or the upload streamed from the
// gateway.
func writeFile(ctx context.Context, w *multipart.Writer, field, filename, ct string, data []byte, f *vendor.JobFile) error {
	h := make(textproto.MIMEHeader, 2)
	h.Set("Content-Disposition", `form-data; name="`+field+`"; filename="`+quoteEscaper.Replace(filename)+`"`)
	h.Set("Content-Type", ct)
	pw, err := w.CreatePart(h)
	if err != nil {
		return err
	}
	if data != nil || f == nil {
		_, err = pw.Write(data)
		return err
	}
	rc, err := vendor.OpenFile(ctx, f)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(pw, rc)
	return err
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "", "\n", "")

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

var _ vendor.Jobs = (*Vendor)(nil)
