package httpvendor

import (
	"context"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Form is a multipart/form-data body built part by part and streamed as
// it goes out (PostRequest.BodyReader): uploads are read from the
// gateway's links while the request is sent, never whole in memory.
type Form struct {
	parts []formPart
}

type formPart struct {
	name, value       string
	filename, ct      string
	data              []byte
	file              *vendor.JobFile
	isFile, fromBytes bool
}

// Field adds a text field.
func (f *Form) Field(name, value string) {
	f.parts = append(f.parts, formPart{name: name, value: value})
}

// JSONField adds a JSON value as a field: a string as it is, null not at
// all, any other value as its JSON text.
func (f *Form) JSONField(name, raw string) {
	switch v := gjson.Parse(raw); v.Type {
	case gjson.Null:
	case gjson.String:
		f.Field(name, v.Str)
	default:
		f.Field(name, raw)
	}
}

// File adds a file part holding data.
func (f *Form) File(name, filename, contentType string, data []byte) {
	f.parts = append(f.parts, formPart{name: name, filename: filename, ct: contentType, data: data, isFile: true, fromBytes: true})
}

// Upload adds a file part read from an upload (its bytes, or a stream
// from the gateway's link).
func (f *Form) Upload(name, filename, contentType string, file *vendor.JobFile) {
	f.parts = append(f.parts, formPart{name: name, filename: filename, ct: contentType, file: file, isFile: true})
}

// Reader is the form's body and its content type. A goroutine writes it
// as the request reads; an error (an upload that cannot be read) breaks
// the request's body, and a request that ends early closes the reader,
// which ends the goroutine.
func (f *Form) Reader(ctx context.Context) (io.Reader, string) {
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	go func() { pw.CloseWithError(f.write(ctx, w)) }()
	return pr, w.FormDataContentType()
}

func (f *Form) write(ctx context.Context, w *multipart.Writer) error {
	for i := range f.parts {
		p := &f.parts[i]
		if !p.isFile {
			if err := w.WriteField(p.name, p.value); err != nil {
				return err
			}
			continue
		}
		h := make(textproto.MIMEHeader, 2)
		h.Set("Content-Disposition", `form-data; name="`+quoteEscaper.Replace(p.name)+`"; filename="`+quoteEscaper.Replace(p.filename)+`"`)
		if p.ct != "" {
			h.Set("Content-Type", p.ct)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		if p.fromBytes || p.file == nil {
			if _, err := pw.Write(p.data); err != nil {
				return err
			}
			continue
		}
		rc, err := vendor.OpenFile(ctx, p.file)
		if err != nil {
			return err
		}
		_, err = io.Copy(pw, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return w.Close()
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "", "\n", "")
