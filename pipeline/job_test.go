package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// memFiles is a FileHost in memory.
type memFiles struct {
	mu      sync.Mutex
	uploads map[string][]byte
}

func (m *memFiles) Host(context.Context, string, vendor.ResultFile, time.Duration, string) (string, time.Time, error) {
	return "https://gw/files/x", time.Now().Add(time.Hour), nil
}

func (m *memFiles) Fetch(context.Context, vendor.ResultFile, int64) ([]byte, string, error) {
	return []byte("x"), "image/png", nil
}

func (m *memFiles) Upload(_ context.Context, _ string, u Upload) (vendor.JobFile, error) {
	b, err := io.ReadAll(u.Body)
	if err != nil {
		return vendor.JobFile{}, err
	}
	sum := sha256.Sum256(b)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.uploads == nil {
		m.uploads = map[string][]byte{}
	}
	url := "http://127.0.0.1/files/" + u.Filename
	m.uploads[url] = b
	ct := u.ContentType
	if ct == "" || ct == "application/octet-stream" {
		ct = http.DetectContentType(b)
	}
	return vendor.JobFile{Field: u.Field, Filename: u.Filename, ContentType: ct, URL: url, Size: int64(len(b)),
		SHA256: hex.EncodeToString(sum[:])}, nil
}

func (m *memFiles) Discard(context.Context, []vendor.JobFile) {}

func jobCall(t testing.TB, contentType string, body []byte, multipartOK bool) *Call {
	r, err := http.NewRequest(http.MethodPost, "/v1/images/edits", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", contentType)
	return &Call{Request: r, Body: body, Account: &store.Account{ID: "acct"}, Job: &Job{
		Routes: []JobRoute{{Spec: &vendor.FamilySpec{Name: "image"},
			Route: vendor.FamilyRoute{Multipart: multipartOK, Async: vendor.AsyncField}}},
	}}
}

func readJobBody(c *Call) error {
	return (&allowlistStage{files: &memFiles{}}).readJobBody(context.Background(), c)
}

func TestReadJobBodyMultipart(t *testing.T) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("model", "m")
	_ = w.WriteField("prompt", "blue")
	_ = w.WriteField("tags[]", "a")
	_ = w.WriteField("tags[]", "b")
	for _, name := range []string{"one.png", "two.png"} {
		f, _ := w.CreateFormFile("image[]", name)
		_, _ = f.Write([]byte("\x89PNG\r\n\x1a\n" + name))
	}
	_ = w.Close()
	c := jobCall(t, w.FormDataContentType(), b.Bytes(), true)
	if err := readJobBody(c); err != nil {
		t.Fatal(err)
	}
	j := c.Job
	if got := gjson.GetBytes(j.Body, "prompt").Str; got != "blue" {
		t.Fatalf("fields %s", j.Body)
	}
	if got := gjson.GetBytes(j.Body, "tags").Raw; got != `["a","b"]` {
		t.Fatalf("repeated field %s", got)
	}
	if len(j.Files) != 2 || j.Files[1].Filename != "two.png" || j.Files[0].Field != "image[]" || j.Files[0].ContentType != "image/png" {
		t.Fatalf("files %+v", j.Files)
	}

	// The same form with a new boundary is the same request.
	var b2 bytes.Buffer
	w2 := multipart.NewWriter(&b2)
	_ = w2.SetBoundary("another-boundary-entirely")
	_ = w2.WriteField("model", "m")
	_ = w2.WriteField("prompt", "blue")
	_ = w2.WriteField("tags[]", "a")
	_ = w2.WriteField("tags[]", "b")
	for _, name := range []string{"one.png", "two.png"} {
		f, _ := w2.CreateFormFile("image[]", name)
		_, _ = f.Write([]byte("\x89PNG\r\n\x1a\n" + name))
	}
	_ = w2.Close()
	c2 := jobCall(t, w2.FormDataContentType(), b2.Bytes(), true)
	if err := readJobBody(c2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fingerprint(c), fingerprint(c2)) {
		t.Fatal("a new boundary changed the fingerprint")
	}
}

func TestReadJobBodyRefusals(t *testing.T) {
	for _, tc := range []struct {
		desc, ct, body string
		multipart      bool
		want           string
	}{
		{"not JSON", "application/json", `{"model":`, false, "JSON object"},
		{"JSON array", "application/json", `[1,2]`, false, "JSON object"},
		{"multipart where JSON only", "multipart/form-data; boundary=x", "--x--", false, "JSON body"},
		{"multipart without boundary", "multipart/form-data", "", true, "boundary"},
		{"broken multipart", "multipart/form-data; boundary=x", "--x\r\nnot a part", true, "could not be read"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := readJobBody(jobCall(t, tc.ct, []byte(tc.body), tc.multipart))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCanonicalFingerprint(t *testing.T) {
	a := canonicalJSON([]byte(`{"b": 1, "a": [1, 2.50, "x"]}`))
	b := canonicalJSON([]byte(`{"a":[1,2.50,"x"],"b":1}`))
	if !bytes.Equal(a, b) {
		t.Fatalf("%s != %s", a, b)
	}
	if bytes.Equal(canonicalJSON([]byte(`{"a":2.5}`)), canonicalJSON([]byte(`{"a":2.50}`))) {
		t.Fatal("numbers are compared as written")
	}
	if got := canonicalJSON([]byte(`not json`)); string(got) != "not json" {
		t.Fatalf("non-JSON %s", got)
	}
}

func TestUnitsCost(t *testing.T) {
	m := &config.Model{ID: "m", Price: config.Price{PerImage: money.MustParse("0.04"), PerImageHD: money.MustParse("0.1")}}
	got, err := unitsCost(m, m.Price, "per_image", []vendor.Units{{Count: 3}, {Tier: "hd", Count: 2}})
	if err != nil || got != money.MustParse("0.32") {
		t.Fatalf("cost %s, %v; want 0.32 (3x0.04 + 2x0.1)", got, err)
	}
	// Fail closed: a tier the model does not price is refused, never
	// billed at the base price.
	if _, err := unitsCost(m, m.Price, "per_image", []vendor.Units{{Tier: "unknown", Count: 1}}); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("an unknown tier: %v", err)
	}
	tiered := &config.Model{ID: "motion", Price: config.Price{PerSecondByResolution: map[string]money.Nano{"fast": money.MustParse("4.04")}}}
	if _, err := unitsCost(tiered, tiered.Price, "per_second", []vendor.Units{{Count: 5}}); err == nil {
		t.Fatal("a model priced by tier only was billed at a base price of 0")
	}
	if got, err := unitsCost(tiered, tiered.Price, "per_second", []vendor.Units{{Tier: "fast", Count: 5}}); err != nil || got != money.MustParse("20.2") {
		t.Fatalf("tier: %s %v", got, err)
	}
	flat := &config.Model{ID: "flat", Price: config.Price{PerSecond: money.MustParse("0.5")}}
	if got, err := unitsCost(flat, flat.Price, "per_second", []vendor.Units{{Tier: "max", Count: 2}}); err != nil || got != money.MustParse("1") {
		t.Fatalf("a flat price bills every tier: %s %v", got, err)
	}
	if _, err := unitsCost(m, m.Price, "per_image", []vendor.Units{{Count: -1}}); err == nil {
		t.Fatal("a negative count was priced")
	}
	huge := &config.Model{Price: config.Price{PerImage: money.Max}}
	if _, err := unitsCost(huge, huge.Price, "per_image", []vendor.Units{{Count: 2}}); err == nil {
		t.Fatal("a cost out of range was priced")
	}
}

// The job body reader never panics, whatever the client sends.
func FuzzReadJobBody(f *testing.F) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("prompt", "x")
	fw, _ := w.CreateFormFile("image", "a.png")
	_, _ = fw.Write([]byte("png"))
	_ = w.Close()
	f.Add(w.FormDataContentType(), b.Bytes())
	f.Add("application/json", []byte(`{"model":"m","prompt":"p","n":2,"async":true}`))
	f.Add("multipart/form-data; boundary=zz", []byte("--zz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--zz--"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		c := jobCall(t, ct, body, true)
		if err := readJobBody(c); err == nil && !gjson.ValidBytes(c.Job.Body) {
			t.Fatalf("accepted body is not JSON: %q", c.Job.Body)
		}
		_ = fingerprint(c)
	})
}
