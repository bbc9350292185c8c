package integration

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
)

// Lip sync through the syncso plugin process against an in-test server
// speaking sync.so's wire: the gateway submits (x-api-key, the upstream's
// model), polls, re-hosts the output video (its link never reaches the
// client) and settles outputDuration rounded up, never above the hold; a
// generation the upstream fails is refunded in full. Both transports: the
// plugin's process, and the vendor built into the gateway (in-process).
func TestLipsyncThroughSyncso(t *testing.T) {
	for _, transport := range []string{"out-of-process", "in-process"} {
		t.Run(transport, func(t *testing.T) { lipsyncThroughSyncso(t, transport) })
	}
}

func lipsyncThroughSyncso(t *testing.T, transport string) {
	var sent vendorsim.Recorder
	upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "sync-key", Record: sent.Record})
	e := startMedia(t, testgw.Options{Config: `
server {
  allow_private_urls = true
}
store "badger" {
  dir = "@DATA@"
}
channel "sync" {
  vendor    = "syncso"
  transport = "` + transport + `"
  base_url = "` + upURL + `"
  api_key  = "sync-key"
  families = ["lipsync"]
  models   = ["dh-lipsync=lipsync-2", "dh-lipsync-pro=lipsync-2-pro"]
  settings = { poll_after = "50ms", sync_mode = "cut_off" }
}
model "dh-lipsync" {
  family = "lipsync"
  price {
    per_second = "0.11"
  }
}
model "dh-lipsync-pro" {
  family = "lipsync"
  price {
    per_second = "0.23"
  }
}
`})
	c := e.post(t, "/v1/videos/generations", `{"model":"dh-lipsync-pro","source_video_url":"https://media.example/v.mp4?m=[sim:seconds=4.4,latency=300ms]","audio_url":"https://media.example/a.wav","duration":8}`)
	id := str(c.json(t)["id"])
	if c.Status != 200 || !strings.HasPrefix(id, "vid_") {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	if h := e.held(t); h != money.Times(8, money.MustParse("0.23")) {
		t.Fatalf("held %s", h)
	}
	rec := e.poll(t, "/v1/videos/generations/"+id, "queued", "running").json(t)
	link := str(rec["video_url"])
	if rec["status"] != "succeeded" || rec["duration"] != float64(5) || !strings.HasPrefix(link, e.g.URL+"/files/") || strings.Contains(mustJSON(rec), upURL) {
		t.Fatalf("record %v", rec)
	}
	v := do(t, "GET", link, nil, "")
	if v.Status != 200 || !bytes.Contains(v.Body[:16], []byte("ftyp")) {
		t.Fatalf("the re-hosted video: %d %q", v.Status, v.Body[:min(16, len(v.Body))])
	}
	wantRow(t, e.rowOf(t, id), "success", "video", 5, money.Times(5, money.MustParse("0.23")))
	var first string
	for _, r := range sent.Requests() {
		if r.Method == "POST" && first == "" {
			first = string(r.Body)
		}
	}
	if !strings.Contains(first, `"model":"lipsync-2-pro"`) || !strings.Contains(first, `"sync_mode":"cut_off"`) {
		t.Fatalf("the create sent %s", first)
	}
	// A generation the upstream fails: refunded, the record says why.
	f := e.post(t, "/v1/videos/generations", `{"model":"dh-lipsync","source_video_url":"https://media.example/v.mp4?m=[sim:fail=500]","audio_url":"https://media.example/a.wav","duration":3}`)
	failed := e.poll(t, "/v1/videos/generations/"+str(f.json(t)["id"]), "queued", "running").json(t)
	if failed["status"] != "failed" || !strings.Contains(mustJSON(failed["error"]), "Simulated upstream error 500") {
		t.Fatalf("failed generation %v", failed)
	}
	// A create the upstream refuses is the client's answer, nothing charged.
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"dh-lipsync","source_video_url":"https://media.example/v.mp4?m=[sim:error=429]","audio_url":"https://media.example/a.wav","duration":3}`),
		429, "rate_limit_exceeded", "Simulated upstream error 429")
	if got := e.settled(t); got != money.Times(5, money.MustParse("0.23")) {
		t.Fatalf("charged %s", got)
	}
}
