package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// SIGKILLs with avatar registrations, recognitions, composes and
// digital-human videos in flight at each kill lose nothing and charge
// nothing twice: jobs the upstream had accepted (a reference) resume
// after the restart and settle once; a registration whose submit had no
// answer yet, and a synchronous recognition under way, end failed,
// refunded in full, their rows interrupted. The books balance to the
// last unit.
func TestSIGKILLWithDigitalHumanJobsInFlight(t *testing.T) {
	cfg := strings.Replace(dhConfig, `call_timeout = "2s"`, `call_timeout = "30s"`, 1)
	dir := t.TempDir()
	g := testgw.Start(t, testgw.Options{Config: cfg, DataDir: dir})
	e := newMediaAccount(t, g, "200")
	link := "https://media.example/talk.mp4"
	asr := str(e.post(t, "/v1/videos/clip-subtitles", `{"video_url":"`+link+`"}`).json(t)["asr_id"])
	want := dhCost(t, "clip-subtitle", 1)
	rows := 1

	type job struct{ kind, id string }
	var jobs []job
	submit := func(kind, path, body string, status int) {
		t.Helper()
		c := e.post(t, path, body)
		id := str(c.json(t)["id"])
		if c.Status != status || id == "" {
			t.Fatalf("%s: %d %s", kind, c.Status, c.Body)
		}
		jobs = append(jobs, job{kind, id})
	}
	// cut are the calls whose answer the kill cuts off: a registration
	// whose submit never answers, a synchronous recognition under way.
	var cut []string
	const rounds = 3
	for round := range rounds {
		r := "r" + itoa(round)
		slow := "[sim:latency=1500ms]"
		for i := range 2 {
			n := r + "n" + itoa(i)
			submit("avatar", "/v1/videos/avatars", `{"name":"`+n+`","source_url":"https://media.example/`+n+`.jpg?m=`+slow+`"}`, 200)
			submit("subtitle", "/v1/videos/clip-subtitles", `{"video_url":"https://media.example/`+n+`.mp4?m=`+slow+`","async":true}`, 202)
			submit("compose", "/v1/videos/generations", `{"model":"clip-compose","video_url":"`+link+`","asr_id":"`+asr+`","title":"`+n+`","music_url":"https://media.example/m.mp3?m=`+slow+`"}`, 200)
			submit("dh-avatar", "/v1/videos/generations", `{"model":"dh-avatar","avatar":"anna","audio_url":"https://media.example/`+n+`.wav?m=`+slow+`[sim:seconds=2]","duration":3}`, 200)
		}
		// The two whose answers the kill cuts: wait until their tasks are
		// written (the hold is the evidence), then kill.
		before := e.held(t)
		go func() {
			_, _ = tryDo("POST", g.URL+"/v1/videos/avatars", bearer(e.key), `{"name":"`+r+`hang","source_url":"https://media.example/h.jpg?m=[sim:hang]"}`)
		}()
		go func() {
			_, _ = tryDo("POST", g.URL+"/v1/videos/clip-subtitles", bearer(e.key), `{"video_url":"https://media.example/`+r+`sync.mp4?m=[sim:latency=20s]"}`)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for e.held(t) < before+dhCost(t, "dh-avatar-create", 1)+dhCost(t, "clip-subtitle", 1) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the cut calls never held", round)
			}
			time.Sleep(20 * time.Millisecond)
		}
		pending := len(e.get(t, "/v1/videos/avatars?status=pending").json(t)["data"].([]any))
		videos := len(e.get(t, "/v1/videos/generations?status=queued,running").json(t)["data"].([]any))
		subs := 0
		for _, j := range jobs {
			if j.kind == "subtitle" && e.get(t, "/v1/videos/clip-subtitles/"+j.id).Status == 202 {
				subs++
			}
		}
		if pending < 2 || videos < 2 || subs < 1 {
			t.Fatalf("round %d: in flight at the kill: %d avatars, %d videos, %d recognitions", round, pending, videos, subs)
		}
		t.Logf("round %d: %d avatars, %d videos, %d recognitions in flight, %s held at the SIGKILL", round, pending, videos, subs, e.held(t))
		for _, a := range e.get(t, "/v1/videos/avatars?status=pending").json(t)["data"].([]any) {
			if a := a.(map[string]any); a["name"] == r+"hang" {
				cut = append(cut, str(a["id"]))
			}
		}
		g.Kill()
		g = testgw.Start(t, testgw.Options{Config: cfg, DataDir: dir})
		e.g = g
	}
	if len(cut) != rounds {
		t.Fatalf("found %d hung registrations, want %d", len(cut), rounds)
	}
	// What each kind of job ends as: its record's status, its row's unit
	// type and units, and the price they bill at.
	ends := map[string]struct {
		status, unit, price string
		units               int64
	}{
		"avatar":    {"ready", "avatar", "dh-avatar-create", 1},
		"subtitle":  {"succeeded", "transcript", "clip-subtitle", 1},
		"compose":   {"succeeded", "video", "clip-compose", 1},
		"dh-avatar": {"succeeded", "video", "dh-avatar", 2},
	}
	for _, j := range jobs {
		var rec map[string]any
		switch j.kind {
		case "avatar":
			rec = e.poll(t, "/v1/videos/avatars/"+j.id, "pending").json(t)
		case "subtitle":
			rec = e.pollSubtitle(t, j.id)
		default:
			rec = e.poll(t, "/v1/videos/generations/"+j.id, "queued", "running").json(t)
		}
		end := ends[j.kind]
		if rec["status"] != end.status {
			t.Fatalf("%s %s did not resume: %v", j.kind, j.id, rec)
		}
		cost := dhCost(t, end.price, end.units)
		wantRow(t, e.rowOf(t, j.id), "success", end.unit, end.units, cost)
		want += cost
		rows++
	}
	// The registrations without a reference: failed, refunded, their rows
	// interrupted (the avatar never says interrupted).
	for _, id := range cut {
		rec := e.poll(t, "/v1/videos/avatars/"+id, "pending").json(t)
		row := e.rowOf(t, id)
		if rec["status"] != "failed" || !strings.Contains(str(rec["error"]), "restart") || row["status"] != "interrupted" ||
			row["error_code"] != nil || str(row["cost"]) != "0" {
			t.Fatalf("registration %s without a reference: %v, row %v", id, rec, row)
		}
		rows++
	}
	if got := e.settled(t); got != want {
		t.Fatalf("charged %s, want %s (each job once)", got, want)
	}
	// One row per task (the cut recognitions' rows are interrupted, cost 0).
	var p logsPage
	if err := json.Unmarshal(e.get(t, "/v1/logs?period=all&limit=200").Body, &p); err != nil {
		t.Fatal(err)
	}
	var interrupted int
	var cost money.Nano
	for _, r := range p.Data {
		cost += money.MustParse(str(r["cost"]))
		if r["status"] == "interrupted" {
			interrupted++
		}
	}
	if len(p.Data) != rows+rounds || interrupted != 2*rounds || cost != want {
		t.Fatalf("%d rows (%d interrupted) costing %s; want %d rows, %d interrupted, %s", len(p.Data), interrupted, cost, rows+rounds, 2*rounds, want)
	}
}
