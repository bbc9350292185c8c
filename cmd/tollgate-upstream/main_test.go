package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// --help prints the usage and is not a failure.
func TestHelpExitsZero(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var log bytes.Buffer
		if code := exitCode(run([]string{arg}, &log), &log); code != 0 || !strings.Contains(log.String(), "-listen") {
			t.Errorf("%s: exit %d, output %q", arg, code, log.String())
		}
	}
	var log bytes.Buffer
	if code := exitCode(run([]string{"--nope"}, &log), &log); code != 1 || !strings.Contains(log.String(), "error: flag provided but not defined") {
		t.Errorf("bad flag: exit %d, output %q", code, log.String())
	}
	if exitCode(errors.New("x"), &log) != 1 {
		t.Error("an error is exit 1")
	}
}

// The reference proxy is httputil's, flushing every read, with an idle
// pool as large as the load, and relays requests and answers as they are.
func TestReferenceProxy(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s %s %s\n\n", r.Method, r.URL.Path, b)
	}))
	defer up.Close()
	p, err := referenceProxy(up.URL, 128)
	if err != nil {
		t.Fatal(err)
	}
	tr := p.Transport.(*http.Transport)
	if p.FlushInterval != -1 || tr.MaxIdleConnsPerHost != 128 || tr.MaxIdleConns < 128 {
		t.Fatalf("flush %v, idle per host %d, idle %d", p.FlushInterval, tr.MaxIdleConnsPerHost, tr.MaxIdleConns)
	}
	if p, _ := referenceProxy(up.URL, 1); p.Transport.(*http.Transport).MaxIdleConnsPerHost != 64 {
		t.Fatal("a pool under 64 connections")
	}
	front := httptest.NewServer(declaredBodies(p))
	defer front.Close()
	resp, err := http.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "data: POST /v1/chat/completions {\"x\":1}\n\n" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %q %v", resp.StatusCode, b, resp.Header)
	}
	// Streams one after another on kept-alive connections: none is cut
	// (the declared-length body of declaredBodies).
	c := &http.Client{}
	for i := range 300 {
		resp, err := c.Post(front.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.HasSuffix(string(b), "\n\n") {
			t.Fatalf("stream %d cut: %q %v", i, b, err)
		}
	}
	if _, err := referenceProxy("not a url", 64); err == nil {
		t.Fatal("a relative target accepted")
	}
}
