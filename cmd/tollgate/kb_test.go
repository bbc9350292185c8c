package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeKBAdmin answers the admin routes kb import calls: the base is
// missing, then created; pages are counted as created.
func fakeKBAdmin(t *testing.T) (global []string, pages *atomic.Int64) {
	pages = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.Method + " " + r.URL.Path {
		case "GET /admin/v1/kbs/docs":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"knowledge base \"docs\" does not exist","type":"invalid_request_error","code":"not_found"}}`)
		case "PUT /admin/v1/kbs/docs":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":"docs"}`)
		case "POST /admin/v1/kbs/docs/pages":
			var body struct{ Pages []json.RawMessage }
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			pages.Add(int64(len(body.Pages)))
			fmt.Fprintf(w, `{"created":%d,"updated":0,"unchanged":0}`, len(body.Pages))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return []string{"--url", srv.URL, "--token", "tok"}, pages
}

// A large folder says how far its import got as each batch is written,
// and the summary names each link that points at no page of the folder
// (the first 20; --json lists them all). Flags may follow the folder.
func TestKBImportProgressAndLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 1201
	for i := range n {
		body := fmt.Sprintf("# Page %d\n\nSee [[page-%04d]].\n", i, (i+1)%n)
		if i < 22 {
			body += fmt.Sprintf("And [[Lost %02d]].\n", i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("page-%04d.md", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	global, pages := fakeKBAdmin(t)
	args := append([]string{"kb", "import", dir, "--kb", "docs", "--readers", "*"}, global...)
	out, errOut, code := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if pages.Load() != n {
		t.Fatalf("%d pages written, want %d", pages.Load(), n)
	}
	for _, want := range []string{
		"kb import: read 1201 pages and 0 source files from " + dir + "\n",
		"kb import: wrote 500 of 1201 pages\n",
		"kb import: wrote 1000 of 1201 pages\n",
		"kb import: wrote 1201 of 1201 pages\n",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, want := range []string{
		"imported 1201 pages into docs: 1201 created, 0 updated, 0 unchanged; 0 source files uploaded\n",
		"22 links name no page of this folder (kept, and unresolved until the base has such a page):\n",
		"  page-0000 -> Lost 00\n",
		"  page-0019 -> Lost 19\n",
		"  and 2 more (--json lists them all)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Lost 20") {
		t.Errorf("more than 20 links listed:\n%s", out)
	}

	// --json names every one; a small folder prints no progress.
	small := t.TempDir()
	_ = os.WriteFile(filepath.Join(small, "one.md"), []byte("# One\n\n[[Two]]\n"), 0o644)
	out, errOut, code = runCLI(append([]string{"kb", "import", "--kb", "docs", small, "--json"}, global...)...)
	if code != 0 || errOut != "" {
		t.Fatalf("small import: exit %d, stderr %q", code, errOut)
	}
	var sum struct {
		Unresolved []struct{ Page, Target string } `json:"unresolved_links"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Unresolved) != 1 || sum.Unresolved[0].Page != "one" || sum.Unresolved[0].Target != "Two" {
		t.Fatalf("--json unresolved links: %v %+v\n%s", err, sum, out)
	}
}
