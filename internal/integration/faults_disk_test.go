package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testdisk"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// The data directory's disk fills at each moment of a call's and a task's
// life in turn (issue 28, the fault suite), not only mid-load, each moment
// reached on purpose: before a hold, between a hold and its settlement
// (the upstream still working when the disk fills), during a task's
// terminal step (its end found while the disk is full), and during the
// sweep of expired results. The gateway never dies, recovers by itself
// within seconds of the space returning, and loses nothing: every call
// and task has its one row at its real cost, no hold stays open, and the
// books balance to the last unit.
func TestDiskFullAtEachMoment(t *testing.T) {
	dir := testdisk.Mount(t, "24m")
	cfg := strings.Replace(mediaConfig, `dir = "@DATA@"`, `dir = "@DATA@"
  reserve_mb = 4`, 1)
	g := testgw.Start(t, testgw.Options{Config: cfg, DataDir: dir})
	pid := g.Cmd.Process.Pid
	const credit = "50"
	e := newMediaAccount(t, g, credit)
	fill := func(what string) (free func()) {
		t.Helper()
		free = testdisk.Fill(t, dir)
		for deadline := time.Now().Add(4 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if st, _ := readyz(t, g); st == 503 {
				return free
			}
			if time.Now().After(deadline) {
				free()
				t.Fatalf("%s: readyz still ready with the disk full", what)
			}
		}
	}
	began := time.Now()
	recovered := func(what string, free func()) {
		t.Helper()
		free()
		defer func() { t.Logf("%s: recovered at %s", what, time.Since(began).Round(time.Millisecond)) }()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if st, _ := readyz(t, g); st == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not ready 5 s after the space returned:\n%s", what, tail(g.Output(), 30))
			}
		}
		if !g.Alive() || g.Cmd.Process.Pid != pid {
			t.Fatalf("%s: the gateway died:\n%s", what, tail(g.Output(), 60))
		}
	}
	var refused []string // request ids refused with the disk full

	// Before a hold: the call finds the disk full and is refused in its
	// protocol's shape, a chat call and a media submit alike.
	free := fill("before a hold")
	for _, c := range []call{
		e.post(t, "/v1/chat/completions", chatBody("sim-chat", "before the hold", "")),
		e.post(t, "/v1/images/generations", `{"model":"img","prompt":"before the hold"}`),
		e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"before the hold","duration":1}`),
	} {
		if c.Status != 500 || !errorInShape(string(c.Body)) || !strings.Contains(string(c.Body), "store is failing") {
			t.Errorf("before a hold, with the disk full: %d %s", c.Status, c.Body)
		}
		refused = append(refused, c.Header.Get("x-gateway-trace"))
	}
	recovered("before a hold", free)

	// Between a hold and its settlement: the upstream answers after the
	// disk has filled. The answers are served (their charges are known);
	// the settlements wait, and are written once the space returns.
	type answered struct {
		c    call
		body string
	}
	results := make(chan answered, 2)
	for _, body := range []string{
		chatBody("sim-chat", "mid-call [sim:latency=6000ms]", ""),
		chatBody("sim-chat", "mid-stream [sim:slow=600ms] [sim:words=10]", `"stream":true,"stream_options":{"include_usage":true}`),
	} {
		go func() {
			c, err := tryDo("POST", g.URL+"/v1/chat/completions", bearer(e.key), body)
			if err != nil {
				t.Error(err)
			}
			results <- answered{c, body}
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); e.held(t) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("between a hold and its settlement: no hold placed")
		}
	}
	free = fill("between a hold and its settlement")
	var midCalls []string
	for range 2 {
		a := <-results
		if a.c.Status != 200 || strings.Contains(a.body, `"stream":true`) && !strings.Contains(string(a.c.Body), "[DONE]") {
			t.Errorf("a call whose settlement met the full disk: %d %s", a.c.Status, a.c.Body)
		}
		midCalls = append(midCalls, a.c.Header.Get("x-gateway-trace"))
	}
	for _, id := range midCalls {
		// The gateway's output reaches the test through a pipe: under load
		// its line may come a moment after the answer.
		line := "waits in memory, its hold kept, and is written when it can: request_id=" + id
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(g.Output(), line); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("the settlement of %s did not meet the full disk (it was written before the fill)", id)
				break
			}
		}
	}
	if st, p := readyz(t, g); st != 503 || !strings.Contains(strings.Join(p, " "), "settlement") {
		t.Errorf("readyz with settlements waiting: %d %q", st, p)
	}
	recovered("between a hold and its settlement", free)
	for _, id := range midCalls {
		row := e.rowOf(t, id)
		// mediaConfig's sim-chat costs 1 per million input tokens and 2
		// per million output tokens.
		want := money.Times(int64(num(row["input_tokens"]))+2*int64(num(row["output_tokens"])), money.MustParse("0.000001"))
		if row["status"] != "success" || num(row["output_tokens"]) == 0 || money.MustParse(str(row["cost"])) != want {
			t.Errorf("served call %s: row %v, want cost %s", id, row, want)
		}
	}

	// During a task's terminal step: the video's end is found with the
	// disk full; ending it fails and is retried until the space returns.
	// It ends once, charged once.
	vid := e.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"terminal [sim:latency=1500ms]","duration":2}`)
	vidID, _ := vid.json(t)["id"].(string)
	if vid.Status != 200 || vidID == "" {
		t.Fatalf("submit: %d %s", vid.Status, vid.Body)
	}
	free = fill("during a task's terminal step")
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(g.Output(), "ending a task failed; it is retried: task_id="+vidID); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			free()
			t.Fatalf("the task's terminal step never met the full disk:\n%s", tail(g.Output(), 30))
		}
	}
	recovered("during a task's terminal step", free)
	if rec := e.poll(t, "/v1/videos/generations/"+vidID, "queued", "running").json(t); rec["status"] != "succeeded" {
		t.Errorf("the video after its terminal step met the full disk: %v", rec)
	}
	wantRow(t, e.rowOf(t, vidID), "success", "video", 2, priced(t, "vid", 2))

	// During a sweep: a result past its retention (vid-short keeps 2 s,
	// the sweep runs every 500 ms) is due while the disk is full; it
	// expires once the space returns, with no money moved.
	short := e.post(t, "/v1/videos/generations", `{"model":"vid-short","prompt":"swept","duration":1}`)
	shortID, _ := short.json(t)["id"].(string)
	if rec := e.poll(t, "/v1/videos/generations/"+shortID, "queued", "running").json(t); rec["status"] != "succeeded" {
		t.Fatalf("the short video: %v", rec)
	}
	free = fill("during a sweep")
	time.Sleep(3 * time.Second) // past the retention: sweeps run on the full disk
	recovered("during a sweep", free)
	if rec := e.poll(t, "/v1/videos/generations/"+shortID, "succeeded").json(t); rec["status"] != "expired" {
		t.Errorf("the swept video: %v", rec)
	}
	wantRow(t, e.rowOf(t, shortID), "success", "video", 1, priced(t, "vid-short", 1))

	// The books: every refusal has its row at cost 0, nothing held, the
	// balance plus the rows' costs is the credit.
	for _, id := range refused {
		if row := e.rowOf(t, id); money.MustParse(str(row["cost"])) != 0 || row["status"] != "error" {
			t.Errorf("refused call %s: row %v", id, row)
		}
	}
	e.settled(t)
	checkBooks(t, g, e.acct, credit)
}
