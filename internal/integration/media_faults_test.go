package integration

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// A task settles at the prices in force when it was submitted: a SIGHUP
// that changes the price while it runs does not reprice it.
func TestTaskSettlesAtItsSubmitPrice(t *testing.T) {
	e := startMedia(t, testgwOptions())
	id := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"slow [sim:latency=3s]","duration":2}`).json(t)["id"].(string)
	rewrite(t, e.g, strings.ReplaceAll(strings.Replace(mediaConfig, `per_second = "0.07"`, `per_second = "0.50"`, 1), "@DATA@", e.g.DataDir), "config reloaded")
	e.poll(t, "/v1/videos/generations/"+id, "queued", "running")
	if got := e.settled(t); got != priced(t, "vid", 2) {
		t.Fatalf("charged %s, want 2 s at the submit's 0.07", got)
	}
	later := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"new price","duration":2}`).json(t)["id"].(string)
	e.poll(t, "/v1/videos/generations/"+later, "queued", "running")
	if got := e.settled(t); got != priced(t, "vid", 2)+money.MustParse("1") {
		t.Fatalf("charged %s after the new price", got)
	}
}

// A submit whose answer never came (the upstream cut it) may have made a
// job upstream: it is not retried on another channel, the task ends
// failed and refunded, and the log names the channel that may hold the
// orphan.
func TestSubmitWithoutAnswerIsNotRetried(t *testing.T) {
	cfg := strings.Replace(mediaConfig, `channel "sim-b" {`, `channel "vid-b" {
  vendor   = "sim"
  base_url = "sim://vid-b"
  families = ["video"]
  models   = ["vid"]
}
channel "sim-b" {`, 1)
	e := startMedia(t, testgw.Options{Config: cfg})
	c := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"cut [sim:cut]","duration":2}`)
	wantError(t, c, 502, "upstream_error", "broke off")
	row := e.rowOf(t, c.Header.Get("x-gateway-trace"))
	if num(row["attempts_count"]) != 1 || row["status"] != "error" || money.MustParse(str(row["cost"])) != 0 {
		t.Fatalf("row %v: want one attempt, no retry, no charge", row)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(e.g.Output(), "may hold an orphaned job") {
		if time.Now().After(deadline) {
			t.Fatalf("no orphan line in the log:\n%s", e.g.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := e.settled(t); got != 0 {
		t.Fatalf("charged %s", got)
	}
	// A refused connection or a 5xx answer did reach no job: those move on.
	ok := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"fine","duration":1}`)
	if ok.Status != 200 {
		t.Fatalf("%d %s", ok.Status, ok.Body)
	}
}

// SIGKILLs with video, music and async speech jobs in flight lose nothing:
// video and music (upstream jobs with a reference) resume after each
// restart and settle once; speech on a synchronous upstream has no
// reference and ends refunded in full, its row interrupted and its record
// failed. Each kill has jobs in flight; the books balance to the last unit.
func TestSIGKILLWithMediaJobsInFlight(t *testing.T) {
	dir := t.TempDir()
	g := testgw.Start(t, testgw.Options{Config: mediaConfig, DataDir: dir})
	acct := g.Account("200")
	_, key := g.Key(acct, nil)
	e := &mediaEnv{g: g, acct: acct, key: key, credit: "200"}
	type job struct{ path, id string }
	var jobs []job
	submit := func(path, body string) {
		c := e.post(t, path, body)
		id, _ := c.json(t)["id"].(string)
		if c.Status != 200 || id == "" {
			t.Fatalf("submit %s: %d %s", path, c.Status, c.Body)
		}
		jobs = append(jobs, job{path, id})
	}
	const rounds = 3
	for round := range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, s := range []struct{ path, body string }{
					{"/v1/videos/generations", `{"model":"vid","prompt":"r` + itoa(round) + `v` + itoa(i) + ` [sim:latency=1500ms,seconds=2]","duration":3}`},
					{"/v1/music/generations", `{"model":"mus","prompt":"r` + itoa(round) + `m` + itoa(i) + ` [sim:latency=1500ms]"}`},
					{"/v1/audio/speech", `{"model":"tts","voice":"alloy","async":true,"input":"r` + itoa(round) + `s` + itoa(i) + ` [sim:latency=20s]"}`},
				} {
					mu.Lock()
					submit(s.path, s.body)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		inFlight := 0
		for _, path := range []string{"/v1/videos/generations?status=queued,running", "/v1/music/generations?status=processing", "/v1/audio/speech?status=pending"} {
			inFlight += len(e.get(t, path).json(t)["data"].([]any))
		}
		if inFlight == 0 || e.held(t) == 0 {
			t.Fatalf("round %d: nothing in flight at the kill", round)
		}
		t.Logf("round %d: %d jobs in flight, %s held at the SIGKILL", round, inFlight, e.held(t))
		g.Kill()
		g = testgw.Start(t, testgw.Options{Config: mediaConfig, DataDir: dir})
		e.g = g
	}
	// Every job ends: videos and music resumed and succeeded, speech
	// interrupted (failed, refunded, row interrupted).
	var want money.Nano
	for _, j := range jobs {
		var running []string
		switch {
		case strings.HasPrefix(j.path, "/v1/videos"):
			running = []string{"queued", "running"}
		case strings.HasPrefix(j.path, "/v1/music"):
			running = []string{"processing"}
		default:
			running = []string{"pending"}
		}
		rec := e.poll(t, j.path+"/"+j.id, running...).json(t)
		row := e.rowOf(t, j.id)
		switch {
		case strings.HasPrefix(j.path, "/v1/audio"):
			if rec["status"] != "failed" || !strings.Contains(str(rec["error"].(map[string]any)["message"]), "restart") ||
				row["status"] != "interrupted" || row["error_code"] != nil || str(row["cost"]) != "0" {
				t.Fatalf("speech %s: record %v row %v", j.id, rec, row)
			}
		case strings.HasPrefix(j.path, "/v1/videos"):
			if rec["status"] != "succeeded" {
				t.Fatalf("video %s did not resume: %v", j.id, rec)
			}
			wantRow(t, row, "success", "video", 2, priced(t, "vid", 2))
			want += priced(t, "vid", 2)
		default:
			if rec["status"] != "succeeded" {
				t.Fatalf("music %s did not resume: %v", j.id, rec)
			}
			wantRow(t, row, "success", "music", 1, priced(t, "mus", 1))
			want += priced(t, "mus", 1)
		}
	}
	if got := e.settled(t); got != want {
		t.Fatalf("charged %s, want %s (each resumed job once)", got, want)
	}
	// One row per task, no more.
	c := e.get(t, "/v1/logs?period=all&limit=200")
	var p logsPage
	if err := json.Unmarshal(c.Body, &p); err != nil || len(p.Data) != len(jobs) {
		t.Fatalf("%d rows for %d tasks", len(p.Data), len(jobs))
	}
}
