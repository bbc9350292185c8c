package integration

import (
	"strings"
	"testing"
	"time"
)

// The subtitle limits in seconds against the real binary (a model's
// shorter limits stand in for the spec's): an asynchronous recognition
// still running at its maximum runtime (25 minutes; 3 s here) fails and
// is not charged; a recognition's asr_id is usable for its retention (24
// hours; 2 s here), then its task is expired and a compose naming it is
// 400.
func TestSubtitleExpiry(t *testing.T) {
	e := startDH(t, func(cfg string) string {
		return strings.Replace(cfg, `  max_runtime  = "3s"`, `  max_runtime  = "3s"
  retention    = "2s"`, 1)
	})
	link := "https://media.example/talk.mp4"
	started := time.Now()
	slow := e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"https://media.example/slow.mp4?m=[sim:latency=30s]","async":true}`)
	sid := str(slow.json(t)["id"])
	if slow.Status != 202 {
		t.Fatalf("%d %s", slow.Status, slow.Body)
	}
	sub := e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`)
	asr := str(sub.json(t)["asr_id"])
	recognised := time.Now()
	c := e.post(t, "/v1/videos/generations", `{"model":"clip-compose","video_url":"`+link+`","asr_id":"`+asr+`"}`)
	if c.Status != 200 {
		t.Fatalf("a compose within the retention: %d %s", c.Status, c.Body)
	}
	e.poll(t, "/v1/videos/generations/"+str(c.json(t)["id"]), "queued", "running")

	failed := e.pollSubtitle(t, sid)
	if took := time.Since(started); failed["status"] != "failed" || !strings.Contains(str(failed["error"]), "did not finish within 3s") || took > 12*time.Second {
		t.Fatalf("after %v: %v", took, failed)
	}
	if row := e.rowOf(t, sid); str(row["cost"]) != "0" || row["error_code"] != "upstream_timeout" {
		t.Fatalf("the timed-out recognition's row %v", row)
	}

	// Past the retention: the recognition is expired, and its asr_id no
	// longer composes.
	time.Sleep(time.Until(recognised.Add(2 * time.Second)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := e.get(t, "/v1/videos/clip-subtitles/"+asr)
		if p.Status == 200 && p.json(t)["status"] == "expired" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recognition did not expire: %d %s", p.Status, p.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	spent := dhCost(t, "clip-subtitle", 1) + dhCost(t, "clip-compose", 1)
	e.wantRefused(t, e.post(t, "/v1/videos/generations", `{"model":"clip-compose","video_url":"`+link+`","asr_id":"`+asr+`"}`),
		400, "invalid_request", "asr_id: '"+asr+"' has expired", spent)
}
