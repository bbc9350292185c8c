package vendorsim

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// A sync.so-style lip-sync API (https://api.sync.so): POST /v2/generate
// with x-api-key and {model, input: [{type: video, url}, {type: audio,
// url}], options} creates a generation (201); GET /v2/generate/{id} reads
// it: PENDING, PROCESSING, then COMPLETED with outputUrl (a link to
// /sync-files/{id}.mp4 on this server) and outputDuration, or FAILED with
// error and error_code. Errors are NestJS bodies, {statusCode, message,
// error}. The job markers act in the input links: error=CODE refuses the
// create, fail=CODE fails the generation, latency=DUR is how long it
// runs, seconds=N its output's length (default 5), hang never answers
// the create, cut drops it.

// SyncModels are the upstream's model names.
var SyncModels = []string{"lipsync-2", "lipsync-2-pro", "lipsync-1.9.0-beta", "sync-3", "react-1"}

type syncJob struct {
	ID        string
	Created   time.Time
	Model     string
	Input     json.RawMessage
	Options   json.RawMessage
	Latency   time.Duration
	Fail      int
	Seconds   float64
	Requested int // polls so far
}

type syncJobs struct {
	mu   sync.Mutex
	jobs map[string]*syncJob
}

func syncError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	text := http.StatusText(status)
	b, _ := json.Marshal(map[string]any{"statusCode": status, "message": msg, "error": text})
	_, _ = w.Write(b)
}

func (s *Server) serveSync(w http.ResponseWriter, r *http.Request) {
	if id, ok := strings.CutPrefix(r.URL.Path, "/sync-files/"); ok {
		s.syncFile(w, r, strings.TrimSuffix(id, ".mp4"))
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if s.opts.Record != nil {
		s.opts.Record(Request{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: bytes.Clone(body)})
	}
	key := r.Header.Get("X-Api-Key")
	if key == "" || !s.keyOK(key) {
		syncError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	switch id, ok := strings.CutPrefix(r.URL.Path, "/v2/generate/"); {
	case r.URL.Path == "/v2/generate" && r.Method == http.MethodPost:
		s.syncCreate(w, r, body)
	case ok && id != "" && r.Method == http.MethodGet:
		s.syncGet(w, r, id)
	default:
		syncError(w, http.StatusNotFound, "Cannot "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) syncCreate(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Model string `json:"model"`
		Input []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"input"`
		Options json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		syncError(w, http.StatusBadRequest, "Invalid JSON body")
		return
	}
	if !slices.Contains(SyncModels, req.Model) {
		syncError(w, http.StatusBadRequest, "model must be one of the following values: "+strings.Join(SyncModels, ", "))
		return
	}
	var video, audio string
	for _, in := range req.Input {
		switch in.Type {
		case "video":
			video = in.URL
		case "audio":
			audio = in.URL
		}
	}
	if video == "" || audio == "" {
		syncError(w, http.StatusBadRequest, "input must include one video and one audio (or text) input with a url")
		return
	}
	k := sim.JobKnobs{Latency: s.opts.Knobs.Latency, Error: s.opts.Knobs.ErrorStatus, Images: -1, Seconds: -1, Hang: s.opts.Knobs.Hang}
	sim.ScanJobMarkers(&k, video, audio)
	switch {
	case k.Hang:
		<-r.Context().Done()
		return
	case k.Cut:
		panic(http.ErrAbortHandler)
	case k.Error != 0:
		syncError(w, k.Error, sim.SimulatedError(k.Error, "error"))
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	j := &syncJob{ID: h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], Created: time.Now().UTC(),
		Model: req.Model, Options: req.Options, Latency: k.Latency, Fail: k.Fail, Seconds: 5}
	if k.Seconds >= 0 {
		j.Seconds = k.Seconds
	}
	j.Input, _ = json.Marshal(req.Input)
	s.syncso.mu.Lock()
	if s.syncso.jobs == nil {
		s.syncso.jobs = map[string]*syncJob{}
	}
	s.syncso.jobs[j.ID] = j
	s.syncso.mu.Unlock()
	v := s.syncView(r, j)
	v["status"], v["outputUrl"], v["outputDuration"] = "PENDING", nil, nil // a create answers the job as queued
	delete(v, "outputMediaUrl")
	writeSync(w, http.StatusCreated, v)
}

func (s *Server) syncGet(w http.ResponseWriter, r *http.Request, id string) {
	s.syncso.mu.Lock()
	j, ok := s.syncso.jobs[id]
	if ok {
		j.Requested++
	}
	s.syncso.mu.Unlock()
	if !ok {
		syncError(w, http.StatusNotFound, "Generation not found")
		return
	}
	writeSync(w, http.StatusOK, s.syncView(r, j))
}

// syncView is the generation as the API shows it now.
func (s *Server) syncView(r *http.Request, j *syncJob) map[string]any {
	v := map[string]any{"id": j.ID, "createdAt": j.Created.Format(time.RFC3339), "status": "PENDING", "model": j.Model,
		"input": j.Input, "webhookUrl": nil, "options": j.Options, "outputUrl": nil, "outputDuration": nil, "error": nil}
	if len(j.Options) == 0 {
		v["options"] = map[string]any{}
	}
	switch elapsed := time.Since(j.Created); {
	case elapsed < j.Latency/2:
	case elapsed < j.Latency:
		v["status"] = "PROCESSING"
	case j.Fail != 0:
		v["status"], v["error"], v["error_code"] = "FAILED", sim.SimulatedError(j.Fail, "fail"), "generation_failed"
	default:
		link := "http://" + r.Host + "/sync-files/" + j.ID + ".mp4"
		v["status"], v["outputUrl"], v["outputMediaUrl"], v["outputDuration"] = "COMPLETED", link, link, j.Seconds
	}
	return v
}

func (s *Server) syncFile(w http.ResponseWriter, r *http.Request, id string) {
	s.syncso.mu.Lock()
	j, ok := s.syncso.jobs[id]
	s.syncso.mu.Unlock()
	if !ok || r.Method != http.MethodGet || time.Since(j.Created) < j.Latency || j.Fail != 0 {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	_, _ = w.Write(sim.VideoMP4(int64(math.Ceil(j.Seconds)), fnv(j.ID)))
}

func writeSync(w http.ResponseWriter, status int, v map[string]any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
