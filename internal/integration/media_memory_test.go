package integration

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/family/images/imagestest"
)

// Uploads stream: four concurrent 90 MB image edits through the openai
// plugin to an upstream that reads every byte stay under 600 MB of peak
// resident memory across the gateway and its plugin processes (each
// process's own peak, summed: an upper bound of their peak together).
// The uploads go to the file store as they arrive and reach the plugin as
// links; the plugin streams them into its upstream request.
func TestConcurrentLargeEditsStayUnderTheMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 360 MB")
	}
	const (
		edits  = 4
		size   = 90 << 20
		budget = 600 << 20
	)
	png := imagestest.PNG(4, 4)
	var received atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1700000000,"data":[{"b64_json":%q}]}`, b64(png))
	}))
	defer up.Close()
	cfg := `
server {
  allow_private_urls = true
}
store "badger" {
  dir = "@DATA@"
}
channel "openai" {
  vendor   = "openai"
  base_url = "` + up.URL + `"
  api_key  = "k"
  families = ["image"]
  models   = ["img=gpt-image-1"]
}
model "img" {
  family = "image"
  price {
    per_image = "0.04"
  }
}
`
	g := testgw.Start(t, testgw.Options{Config: cfg})
	e := newMediaAccount(t, g, "5")
	pids := append([]int{g.Cmd.Process.Pid}, childrenOf(t, g.Cmd.Process.Pid)...)
	if len(pids) < 2 {
		t.Fatal("no plugin process")
	}
	var wg sync.WaitGroup
	errs := make(chan error, edits)
	for i := range edits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr, pw := io.Pipe()
			w := multipart.NewWriter(pw)
			go func() {
				_ = w.WriteField("model", "img")
				_ = w.WriteField("prompt", "make it blue "+strconv.Itoa(i))
				fw, _ := w.CreateFormFile("image", "big.png")
				_, _ = fw.Write(png[:16]) // a PNG's signature and header, then bulk
				_, _ = io.CopyN(fw, &noise{x: uint64(i + 1)}, size-16)
				pw.CloseWithError(w.Close())
			}()
			req, _ := http.NewRequest("POST", g.URL+"/v1/images/edits", pr)
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header.Set("Content-Type", w.FormDataContentType())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("edit %d: %d %s", i, resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := received.Load(); got < edits*size {
		t.Fatalf("the upstream received %d bytes, want at least %d", got, edits*size)
	}
	var peak int64
	var parts []string
	for _, pid := range pids {
		hwm := peakRSS(t, pid)
		peak += hwm
		parts = append(parts, fmt.Sprintf("pid %d: %d MB", pid, hwm>>20))
	}
	t.Logf("peak resident memory %d MB (%s)", peak>>20, strings.Join(parts, ", "))
	if peak > budget {
		t.Fatalf("peak resident memory %d MB across the gateway and its plugins, over the %d MB budget (%s)",
			peak>>20, budget>>20, strings.Join(parts, ", "))
	}
	if got := e.settled(t); got != priced(t, "img", edits) {
		t.Fatalf("charged %s", got)
	}

}

// noise is a fast pseudo-random byte stream (uploads that do not compress).
type noise struct{ x uint64 }

func (n *noise) Read(p []byte) (int, error) {
	for i := range p {
		n.x ^= n.x << 13
		n.x ^= n.x >> 7
		n.x ^= n.x << 17
		p[i] = byte(n.x)
	}
	return len(p), nil
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("no /proc for pid %d: %v", pid, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM for pid %d", pid)
	return 0
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
