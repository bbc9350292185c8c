package images

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Image is one image an upstream returned.
type Image struct {
	// Data is the image's bytes; nil when the upstream only gave a URL.
	Data        []byte
	ContentType string // "" to sniff it from Data
	// URL is a link the upstream hosts itself, and Header what fetching
	// it needs (the upstream's credentials), if anything.
	URL    string
	Header map[string]string
	// Size is WxH as the upstream reports it; "" to read it from Data,
	// else the requested size.
	Size string
	// Fields are the item's other fields (revised_prompt...), passed
	// through.
	Fields []Field
}

// Result is an upstream's successful answer, as Render takes it.
type Result struct {
	Created int64 // Unix seconds; 0 for now
	Images  []Image
	// Usage is the upstream's usage object, raw JSON ("" for none): its
	// fields are merged into the answer's usage.
	Usage string
	// Fields are the upstream's other top-level fields, passed through.
	Fields []Field
}

// ExpiresSlot is where the gateway writes when the files it hosts expire.
const ExpiresSlot = "expires_at"

// Render is the synchronous answer for the images an upstream returned:
//
//	{model, created, expires_at, data: [{url, size} | {b64_json, size}], ..., usage}
//
// The client's response_format holds whatever the upstream answered. With
// url, an image becomes a file the gateway hosts, its link written at
// data.i.url and the expiry at expires_at: its bytes, or what the
// upstream's own link answers (the gateway fetches and re-hosts it, so no
// answer carries an upstream's address). With b64_json the bytes are in
// the body (the outcome is Inline): an image the upstream answered as a
// link is fetched and written at data.i.b64_json by the gateway. usage is
// {generated_images, output_tokens, total_tokens} merged with the
// upstream's usage; other upstream fields pass through. Units are the
// images returned at their tiers (Model.Delivered).
func Render(m Model, r *Request, res Result) *vendor.JobOutcome {
	out := &vendor.JobOutcome{State: vendor.JobSucceeded, Status: http.StatusOK,
		Headers: map[string]string{"content-type": "application/json"}}
	created := res.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	hosts := r.ResponseFormat != FormatB64 && len(res.Images) > 0
	b := make([]byte, 0, 256+estimate(r, res))
	b = append(b, `{"model":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, created, 10)
	if hosts {
		b = append(b, `,"expires_at":null`...)
		out.ExpiresSlot = ExpiresSlot
	}
	b = append(b, `,"data":[`...)
	sizes := make([][2]int, len(res.Images))
	for i, im := range res.Images {
		if i > 0 {
			b = append(b, ',')
		}
		size := im.Size
		if size == "" {
			size = sniffSize(im.Data)
		}
		if size == "" {
			size = r.Size
		}
		sizes[i][0], sizes[i][1] = ParseSize(size)
		b = append(b, '{')
		switch {
		case im.Data != nil && r.ResponseFormat == FormatB64:
			out.Inline = true // too large to keep for a replay (the spec's idempotency table)
			b = append(b, `"b64_json":"`...)
			b = base64.StdEncoding.AppendEncode(b, im.Data)
			b = append(b, '"')
		case r.ResponseFormat == FormatB64:
			// The gateway fetches the upstream's link and writes its bytes here.
			out.Inline = true
			b = append(b, `"b64_json":""`...)
			out.Files = append(out.Files, vendor.ResultFile{Slot: "data." + strconv.Itoa(i) + ".b64_json",
				ContentType: im.ContentType, URL: im.URL, Header: im.Header, Inline: true})
		case im.Data != nil:
			// The gateway writes the hosted file's link here.
			b = append(b, `"url":""`...)
			ct := im.ContentType
			if ct == "" {
				ct = http.DetectContentType(im.Data)
			}
			out.Files = append(out.Files, vendor.ResultFile{
				Slot: "data." + strconv.Itoa(i) + ".url", ContentType: ct,
				Name: "image-" + strconv.Itoa(i) + extension(ct), Data: im.Data,
			})
		default:
			// The gateway re-hosts the upstream's link and writes its own here.
			b = append(b, `"url":""`...)
			out.Files = append(out.Files, vendor.ResultFile{Slot: "data." + strconv.Itoa(i) + ".url",
				ContentType: im.ContentType, Name: "image-" + strconv.Itoa(i) + extension(im.ContentType), URL: im.URL, Header: im.Header})
		}
		if size != "" {
			b = append(b, `,"size":`...)
			b = appendString(b, size)
		}
		for _, f := range im.Fields {
			if f.Name == "url" || f.Name == "b64_json" || f.Name == "size" {
				continue
			}
			b = appendField(b, f)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	for _, f := range res.Fields {
		switch f.Name {
		case "model", "created", "expires_at", "data", "usage":
			continue
		}
		b = appendField(b, f)
	}
	b = append(b, `,"usage":`...)
	b = appendUsage(b, len(res.Images), res.Usage)
	out.Body = append(b, '}')
	out.Units = m.Delivered(r, sizes)
	return out
}

// appendUsage appends {generated_images, output_tokens, total_tokens} with
// the upstream's usage fields merged in (its token counts win).
func appendUsage(b []byte, images int, upstream string) []byte {
	u := gjson.Parse(upstream)
	if !u.IsObject() {
		u = gjson.Result{}
	}
	b = append(b, `{"generated_images":`...)
	b = strconv.AppendInt(b, int64(images), 10)
	for _, k := range [...]string{"output_tokens", "total_tokens"} {
		b = append(b, `,"`...)
		b = append(b, k...)
		b = append(b, `":`...)
		if v := u.Get(k); v.Exists() {
			b = append(b, v.Raw...)
		} else {
			b = append(b, '0')
		}
	}
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "generated_images", "output_tokens", "total_tokens":
		default:
			b = appendField(b, Field{Name: k.String(), Raw: v.Raw})
		}
		return true
	})
	return append(b, '}')
}

func appendField(b []byte, f Field) []byte {
	b = append(b, ',')
	b = appendString(b, f.Name)
	b = append(b, ':')
	return append(b, f.Raw...)
}

func appendString(b []byte, s string) []byte { return append(b, rules.Quote(s)...) }

func estimate(r *Request, res Result) int {
	n := len(res.Usage)
	for _, im := range res.Images {
		n += 64 + len(im.URL)
		if r.ResponseFormat == FormatB64 {
			n += base64.StdEncoding.EncodedLen(len(im.Data))
		}
		for _, f := range im.Fields {
			n += len(f.Name) + len(f.Raw) + 4
		}
	}
	for _, f := range res.Fields {
		n += len(f.Name) + len(f.Raw) + 4
	}
	return n
}

func extension(ct string) string {
	switch strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0])) {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	case "image/gif":
		return ".gif"
	}
	return ""
}

// ParseAnswer reads the answer shape the spec itself uses, which OpenAI
// and the servers that copy its images API return: {created, data:
// [{url | b64_json, revised_prompt...}], usage, ...}. A top-level size
// (GPT image models) is every image's size.
func ParseAnswer(body []byte) (Result, bool) {
	if !gjson.ValidBytes(body) {
		return Result{}, false
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() || !root.Get("data").IsArray() {
		return Result{}, false
	}
	res := Result{Created: root.Get("created").Int(), Usage: root.Get("usage").Raw}
	size := root.Get("size").Str
	ok := true
	root.Get("data").ForEach(func(_, it gjson.Result) bool {
		im := Image{URL: it.Get("url").Str, Size: it.Get("size").Str}
		if im.Size == "" {
			im.Size = size
		}
		if b64 := it.Get("b64_json"); b64.Type == gjson.String && b64.Str != "" {
			data, err := base64.StdEncoding.DecodeString(b64.Str)
			if err != nil {
				ok = false
				return false
			}
			im.Data = data
		} else if im.URL == "" {
			ok = false
			return false
		}
		it.ForEach(func(k, v gjson.Result) bool {
			switch k.String() {
			case "url", "b64_json", "size":
			default:
				im.Fields = append(im.Fields, Field{Name: k.String(), Raw: v.Raw})
			}
			return true
		})
		res.Images = append(res.Images, im)
		return true
	})
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "created", "data", "usage":
		default:
			res.Fields = append(res.Fields, Field{Name: k.String(), Raw: v.Raw})
		}
		return true
	})
	return res, ok
}

// Failed is the outcome of an upstream's refusal: its status and message.
func Failed(status int, body []byte) *vendor.JobOutcome { return rules.Failed(status, body) }

// UpstreamMessage is the message of an upstream error body.
func UpstreamMessage(status int, body []byte) string { return rules.UpstreamMessage(status, body) }
