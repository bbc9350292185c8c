package files

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkPutServe stores a 1 MB image and downloads it through the
// handler over 127.0.0.1, as a client of an image call would.
func BenchmarkPutServe(b *testing.B) {
	for _, bc := range []struct {
		name string
		o    func() Options
	}{
		{"dir", func() Options { return Options{Dir: b.TempDir()} }},
		{"mem", func() Options { return Options{URL: "mem://"} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b, bc.o(), nil)
			srv := serve(b, s)
			data := make([]byte, 1<<20)
			_, _ = rand.Read(data)
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := s.Put(ctx, File{Data: data, ContentType: "image/png", Name: "bench.png", Retention: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				u, _, err := s.Link(srv.URL, f.ID, 0)
				if err != nil {
					b.Fatal(err)
				}
				res, err := http.Get(u)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || n != int64(len(data)) || res.StatusCode != 200 {
					b.Fatalf("GET %d, %d bytes, %v", res.StatusCode, n, err)
				}
			}
		})
	}
}
