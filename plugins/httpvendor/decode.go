package httpvendor

import (
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// decode undoes a Content-Encoding the upstream used though the request
// asked for none (Accept-Encoding: identity): gzip and deflate are read
// through their decoder, so the body caps of answer and the SSE reader
// apply to the decoded bytes; any other encoding fails the call. A
// compressed body is never taken for the answer itself.
func decode(resp *http.Response) *vendor.Failure {
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	var rd io.ReadCloser
	switch enc {
	case "", "identity":
		return nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return &vendor.Failure{Kind: vendor.FailureBroken, Message: "the upstream's gzip answer could not be decoded: " + err.Error()}
		}
		rd = zr
	case "deflate":
		zr, err := zlib.NewReader(resp.Body)
		if err != nil {
			return &vendor.Failure{Kind: vendor.FailureBroken, Message: "the upstream's deflate answer could not be decoded: " + err.Error()}
		}
		rd = zr
	default:
		return &vendor.Failure{Kind: vendor.FailureBroken,
			Message: "the upstream compressed its answer with " + enc + ", which the gateway did not ask for and does not decode"}
	}
	resp.Body = decoded{ReadCloser: rd, raw: resp.Body}
	resp.ContentLength = -1 // the length sent was the compressed one
	resp.Header.Del("Content-Encoding")
	return nil
}

// decoded closes the decoder and the body under it.
type decoded struct {
	io.ReadCloser
	raw io.Closer
}

func (d decoded) Close() error {
	_ = d.ReadCloser.Close()
	return d.raw.Close()
}
