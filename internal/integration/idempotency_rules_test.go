package integration

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// The spec's Idempotency rules, each against the real binary on the media
// endpoints it names (and the chat endpoints PRODUCT §7 adds), where the
// per-family tests (TestMediaIdempotency, TestVideoIdempotency,
// TestImagesIdempotencyTable, TestChatIdempotencyKey...) leave a rule out.
func TestIdempotencyRules(t *testing.T) {
	t.Parallel()
	e := startMedia(t, testgwOptions())
	g := e.g

	t.Run("a malformed key is 400 invalid_idempotency_key in each protocol's shape", func(t *testing.T) {
		w := newMediaAccount(t, g, "5")
		bad := map[string]string{
			"empty":            "",
			"over 200":         strings.Repeat("k", 201),
			"inner space":      "two words",
			"only spaces":      "   ",
			"tab":              "a\tb",
			"non-ASCII":        "clé-1",
			"emoji":            "key-\U0001F511",
			"latin-1 non-text": "k\xa0y",
		}
		endpoints := []struct {
			path, body, auth string
			shape            func(t *testing.T, c call)
		}{
			{"/v1/images/generations", `{"model":"img","prompt":"p"}`, "Authorization", idemKeyCompletions},
			{"/v1/videos/generations", `{"model":"vid","prompt":"p","duration":1}`, "Authorization", idemKeyCompletions},
			{"/v1/music/generations", `{"model":"mus","prompt":"p"}`, "Authorization", idemKeyCompletions},
			{"/v1/audio/speech", `{"model":"tts","input":"p","voice":"alloy"}`, "Authorization", idemKeyCompletions},
			{"/v1/audio/voices", `{"name":"V","audio_url":"https://samples.example/a.wav"}`, "Authorization", idemKeyCompletions},
			{"/v1/transcripts/extract", `{"url":"https://v.example/1"}`, "Authorization", idemKeyCompletions},
			{"/v1/chat/completions", chatBody("sim-chat", "p", ""), "Authorization", idemKeyCompletions},
			{"/v1/responses", `{"model":"sim-chat","input":"p"}`, "Authorization", idemKeyCompletions},
			{"/v1/messages", `{"model":"sim-chat","max_tokens":5,"messages":[{"role":"user","content":"p"}]}`, "x-api-key", idemKeyMessages},
			{"/v1beta/models/sim-chat:generateContent", `{"contents":[{"role":"user","parts":[{"text":"p"}]}]}`, "x-goog-api-key", idemKeyGenerateContent},
		}
		for _, ep := range endpoints {
			for name, k := range bad {
				h := map[string]string{ep.auth: w.key, "Idempotency-Key": k, "anthropic-version": "2023-06-01"}
				if ep.auth == "Authorization" {
					h[ep.auth] = "Bearer " + w.key
				}
				c := do(t, "POST", g.URL+ep.path, h, ep.body)
				if c.Status != 400 {
					t.Fatalf("%s, %s key: %d %s", ep.path, name, c.Status, c.Body)
				}
				ep.shape(t, c)
				if c.Header.Get("x-gateway-trace") == "" {
					t.Fatalf("%s: no x-gateway-trace", ep.path)
				}
			}
		}
		// Two keys on one request are no single key.
		req, _ := http.NewRequest("POST", g.URL+"/v1/images/generations", strings.NewReader(`{"model":"img","prompt":"p"}`))
		req.Header.Set("Authorization", "Bearer "+w.key)
		req.Header.Add("Idempotency-Key", "one")
		req.Header.Add("Idempotency-Key", "two")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("two keys: %d", resp.StatusCode)
		}
		// Nothing was charged, and the limits are inclusive: 200 characters
		// of every printable ASCII character is a key.
		if got := w.settled(t); got != 0 {
			t.Fatalf("malformed keys charged %s", got)
		}
		var all strings.Builder
		for ch := byte('!'); ch <= '~'; ch++ {
			all.WriteByte(ch)
		}
		for _, k := range []string{"x", all.String(), strings.Repeat("k", 200)} {
			if c := w.post(t, "/v1/images/generations", `{"model":"img","prompt":"edge keys"}`, "Idempotency-Key", k); c.Status != 200 {
				t.Fatalf("key %q: %d %s", k, c.Status, c.Body)
			}
		}
		if got := w.settled(t); got != priced(t, "img", 3) {
			t.Fatalf("three valid keys charged %s", got)
		}
	})

	t.Run("a control character in the key is a 400, nothing run or charged", func(t *testing.T) {
		// Go's client refuses to send one; a raw request does. A control
		// character is malformed HTTP in any header: the HTTP server
		// refuses the request before the gateway sees it (docs/decisions.md).
		w := newMediaAccount(t, g, "5")
		for _, k := range []string{"a\x01b", "del\x7f"} {
			if status, body := rawPost(t, g.URL, "/v1/images/generations", w.key, k, `{"model":"img","prompt":"p"}`); status != 400 {
				t.Fatalf("key %q: %d %s", k, status, body)
			}
		}
		if status, body := rawPost(t, g.URL, "/v1/images/generations", w.key, "fine", `{"model":"img","prompt":"p"}`); status != 200 {
			t.Fatalf("the raw request itself: %d %s", status, body)
		}
		if got := w.settled(t); got != priced(t, "img", 1) {
			t.Fatalf("charged %s, want the one good call", got)
		}
	})

	t.Run("without a key there is no deduplication", func(t *testing.T) {
		w := newMediaAccount(t, g, "5")
		body := `{"model":"img","prompt":"twice, no key"}`
		a, b := w.post(t, "/v1/images/generations", body), w.post(t, "/v1/images/generations", body)
		if a.Status != 200 || b.Status != 200 || b.Header.Get("Idempotency-Replayed") != "" || bytes.Equal(a.Body, b.Body) {
			t.Fatalf("%d %d %q", a.Status, b.Status, b.Header.Get("Idempotency-Replayed"))
		}
		if got := w.settled(t); got != priced(t, "img", 2) {
			t.Fatalf("charged %s, want two images", got)
		}
	})

	t.Run("scoped to the account: its keys share it, another account does not", func(t *testing.T) {
		a := newMediaAccount(t, g, "5")
		_, other := g.Key(a.acct, nil)
		b := newMediaAccount(t, g, "5")
		body := `{"model":"img","prompt":"shared key"}`
		first := a.post(t, "/v1/images/generations", body, "Idempotency-Key", "scope-1")
		if first.Status != 200 {
			t.Fatalf("%d %s", first.Status, first.Body)
		}
		h := map[string]string{"Authorization": "Bearer " + other, "Idempotency-Key": "scope-1"}
		replay := do(t, "POST", g.URL+"/v1/images/generations", h, body)
		if replay.Status != 200 || replay.Header.Get("Idempotency-Replayed") != "true" || !bytes.Equal(replay.Body, first.Body) {
			t.Fatalf("another key of the account: %d %v", replay.Status, replay.Header)
		}
		if replay.Header.Get("x-gateway-trace") == first.Header.Get("x-gateway-trace") || replay.Header.Get("x-gateway-trace") == "" {
			t.Fatal("the replay has no trace of its own")
		}
		// Another account: its own call, with either body.
		own := b.post(t, "/v1/images/generations", body, "Idempotency-Key", "scope-1")
		if own.Status != 200 || own.Header.Get("Idempotency-Replayed") != "" || bytes.Equal(own.Body, first.Body) {
			t.Fatalf("another account: %d %v", own.Status, own.Header)
		}
		if c := b.post(t, "/v1/videos/generations", `{"model":"vid","prompt":"p","duration":1}`, "Idempotency-Key", "scope-2"); c.Status != 200 {
			t.Fatalf("%d %s", c.Status, c.Body)
		}
		if c := a.post(t, "/v1/music/generations", `{"model":"mus","prompt":"p"}`, "Idempotency-Key", "scope-2"); c.Status != 200 || c.Header.Get("Idempotency-Replayed") != "" {
			t.Fatalf("a key of another account counted: %d %s", c.Status, c.Body)
		}
		if got := a.settled(t); got != priced(t, "img", 1)+priced(t, "mus", 1) {
			t.Fatalf("account a charged %s", got)
		}
		if got := b.settled(t); got != priced(t, "img", 1)+priced(t, "vid", 1) {
			t.Fatalf("account b charged %s", got)
		}
		// The log: the replay is a row of its own, success at cost 0,
		// naming the call it replayed.
		// (A key reads its own rows.)
		second := &mediaEnv{g: g, acct: a.acct, key: other, credit: a.credit}
		row := second.rowOf(t, replay.Header.Get("x-gateway-trace"))
		if row["status"] != "success" || money.MustParse(str(row["cost"])) != 0 || row["unit_count"] != float64(0) {
			t.Fatalf("replay row %v", row)
		}
		view := second.get(t, "/v1/logs/"+strconv.FormatInt(int64(num(row["id"])), 10))
		if got := gjson.GetBytes(view.Body, `gateway.#(k=="idempotent_replay_of").v`).String(); got != first.Header.Get("x-gateway-trace") {
			t.Fatalf("replay row names %q: %s", got, view.Body)
		}
	})

	t.Run("same key, another body: 409 on every family, the first call untouched", func(t *testing.T) {
		w := newMediaAccount(t, g, "5")
		for i, tc := range []struct{ path, body, other string }{
			{"/v1/music/generations", `{"model":"mus","prompt":"a"}`, `{"model":"mus","prompt":"b"}`},
			{"/v1/images/generations", `{"model":"img","prompt":"a","async":true}`, `{"model":"img","prompt":"a","async":false}`},
			{"/v1/images/edits", `{"model":"img","prompt":"a","image":"data:image/png;base64,iVBORw0KGgo="}`, `{"model":"img","prompt":"b","image":"data:image/png;base64,iVBORw0KGgo="}`},
			{"/v1/audio/voices", `{"name":"Ann","audio_url":"https://samples.example/a.wav"}`, `{"audio_url":"https://samples.example/a.wav","name":"Bea"}`},
		} {
			key := "reuse-" + strconv.Itoa(i)
			first := w.post(t, tc.path, tc.body, "Idempotency-Key", key)
			if first.Status/100 != 2 {
				t.Fatalf("%s: %d %s", tc.path, first.Status, first.Body)
			}
			wantError(t, w.post(t, tc.path, tc.other, "Idempotency-Key", key), 409, "idempotency_key_reuse", key)
			// Key order and spacing are not the body.
			again := w.post(t, tc.path, " "+tc.body+"\n", "Idempotency-Key", key)
			if again.Header.Get("Idempotency-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) || again.Status != first.Status {
				t.Fatalf("%s replay: %d %s", tc.path, again.Status, again.Body)
			}
		}
	})

	t.Run("of simultaneous submits with one key exactly one runs", func(t *testing.T) {
		w := newMediaAccount(t, g, "5")
		body := `{"model":"vid","prompt":"one task [sim:latency=300ms]","duration":2}`
		const n = 8
		results := make([]call, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c, err := tryDo("POST", g.URL+"/v1/videos/generations", map[string]string{"Authorization": "Bearer " + w.key, "Idempotency-Key": "race-1"}, body)
				if err != nil {
					c = call{Status: -1, Body: []byte(err.Error())}
				}
				results[i] = c
			}()
		}
		close(start)
		wg.Wait()
		ran := 0
		var id string
		for _, c := range results {
			switch {
			case c.Status == 200 && c.Header.Get("Idempotency-Replayed") == "":
				ran++
				id = gjson.GetBytes(c.Body, "id").String()
			case c.Status == 200:
			case c.Status == 409:
				wantError(t, c, 409, "idempotency_in_flight", "race-1")
			default:
				t.Fatalf("%d %s", c.Status, c.Body)
			}
		}
		if ran != 1 {
			t.Fatalf("%d submits ran, want 1", ran)
		}
		w.poll(t, "/v1/videos/generations/"+id, "queued", "running")
		if l := w.get(t, "/v1/videos/generations").json(t)["data"].([]any); len(l) != 1 {
			t.Fatalf("%d tasks", len(l))
		}
		if got := w.settled(t); got != priced(t, "vid", 2) {
			t.Fatalf("charged %s", got)
		}
	})

	t.Run("a key held by a call the client cut off is free again, never charged twice", func(t *testing.T) {
		w := newMediaAccount(t, g, "5")
		body := `{"model":"img","prompt":"slow [sim:latency=2s]"}`
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/v1/images/generations", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+w.key)
		req.Header.Set("Idempotency-Key", "cut-1")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("the call was not cut: %d", resp.StatusCode)
		}
		cancel()
		// Until the gateway has seen the cut, the key is in flight; then
		// the retry runs (the cut call was not charged).
		deadline := time.Now().Add(10 * time.Second)
		var retry call
		for {
			retry = w.post(t, "/v1/images/generations", body, "Idempotency-Key", "cut-1")
			if retry.Status != 409 {
				break
			}
			wantError(t, retry, 409, "idempotency_in_flight", "cut-1")
			if time.Now().After(deadline) {
				t.Fatal("the key stayed held after the cut-off")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if retry.Status != 200 || retry.Header.Get("Idempotency-Replayed") != "" {
			t.Fatalf("retry %d %v %s", retry.Status, retry.Header, retry.Body)
		}
		if again := w.post(t, "/v1/images/generations", body, "Idempotency-Key", "cut-1"); again.Header.Get("Idempotency-Replayed") != "true" {
			t.Fatalf("the retry's answer was not kept: %d", again.Status)
		}
		if got := w.settled(t); got != priced(t, "img", 1) {
			t.Fatalf("charged %s, want one image", got)
		}
	})

	t.Run("a retry of the call that spent the last credits gets its answer, not 402", func(t *testing.T) {
		w := newMediaAccount(t, g, "0.04")
		body := `{"model":"img","prompt":"the last image"}`
		first := w.post(t, "/v1/images/generations", body, "Idempotency-Key", "last-1")
		if first.Status != 200 {
			t.Fatalf("%d %s", first.Status, first.Body)
		}
		if got := w.settled(t); got != priced(t, "img", 1) {
			t.Fatalf("charged %s", got)
		}
		again := w.post(t, "/v1/images/generations", body, "Idempotency-Key", "last-1")
		if again.Status != 200 || again.Header.Get("Idempotency-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("retry at zero balance: %d %s", again.Status, again.Body)
		}
		// Another body under that key is not a retry: the 402 comes first.
		wantError(t, w.post(t, "/v1/images/generations", `{"model":"img","prompt":"other"}`, "Idempotency-Key", "last-1"), 402, "quota_exceeded", "")
		wantError(t, w.post(t, "/v1/images/generations", body, "Idempotency-Key", "last-2"), 402, "quota_exceeded", "")
		wantError(t, w.post(t, "/v1/images/generations", body), 402, "quota_exceeded", "")
		// The refused key was not kept: with credit it runs.
		var out map[string]any
		if st := g.Admin("POST", "/accounts/"+w.acct+"/credits", map[string]any{"amount": "0.04", "note": "top-up"}, &out); st/100 != 2 {
			t.Fatalf("credit: %d %v", st, out)
		}
		if c := w.post(t, "/v1/images/generations", body, "Idempotency-Key", "last-2"); c.Status != 200 || c.Header.Get("Idempotency-Replayed") != "" {
			t.Fatalf("after the top-up: %d %s", c.Status, c.Body)
		}
		row := w.rowOf(t, again.Header.Get("x-gateway-trace"))
		if row["status"] != "success" || money.MustParse(str(row["cost"])) != 0 {
			t.Fatalf("replay row %v", row)
		}
	})
}

func idemKeyCompletions(t *testing.T, c call) {
	t.Helper()
	if code, typ, msg := c.errorOf(t); code != "invalid_idempotency_key" || typ != "invalid_request_error" || msg == "" {
		t.Fatalf("shape %s", c.Body)
	}
}

func idemKeyMessages(t *testing.T, c call) {
	t.Helper()
	if gjson.GetBytes(c.Body, "type").String() != "error" || gjson.GetBytes(c.Body, "error.type").String() != "invalid_request_error" ||
		gjson.GetBytes(c.Body, "error.message").String() == "" {
		t.Fatalf("shape %s", c.Body)
	}
}

func idemKeyGenerateContent(t *testing.T, c call) {
	t.Helper()
	if gjson.GetBytes(c.Body, "error.code").Int() != 400 || gjson.GetBytes(c.Body, "error.status").String() != "INVALID_ARGUMENT" ||
		gjson.GetBytes(c.Body, "error.message").String() == "" {
		t.Fatalf("shape %s", c.Body)
	}
}

// rawPost sends a request as bytes, for header values Go's client will
// not send; it returns the status and body.
func rawPost(t *testing.T, base, path, key, idemKey, body string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + key + "\r\nIdempotency-Key: " + idemKey +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// A key whose call the gateway never finished (the process was killed
// under it) stays held across a restart, then frees itself: its record, as
// the binary wrote it, ends at most 10 minutes after the claim. The clock
// is the store's argument: nothing waits 10 minutes.
func TestIdempotencyKeyOfAKilledCallFreesItself(t *testing.T) {
	t.Parallel()
	g := testgw.Start(t, testgw.Options{Config: mediaConfig})
	w := newMediaAccount(t, g, "5")
	body := `{"model":"img","prompt":"never answered [sim:latency=60s]"}`
	go func() {
		_, _ = tryDo("POST", g.URL+"/v1/images/generations", map[string]string{"Authorization": "Bearer " + w.key, "Idempotency-Key": "killed-1"}, body)
	}()
	inFlight := func(g *testgw.Gateway) call {
		return do(t, "POST", g.URL+"/v1/images/generations", map[string]string{"Authorization": "Bearer " + w.key, "Idempotency-Key": "killed-1"}, body)
	}
	// It holds its price once it has the key.
	deadline := time.Now().Add(10 * time.Second)
	for w.held(t) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first call never started")
		}
		time.Sleep(25 * time.Millisecond)
	}
	wantError(t, inFlight(g), 409, "idempotency_in_flight", "killed-1")
	g.Kill()

	g2 := testgw.Start(t, testgw.Options{Config: mediaConfig, DataDir: g.DataDir})
	wantError(t, inFlight(g2), 409, "idempotency_in_flight", "killed-1")
	g2.Stop()

	st, err := badgerstore.Open(filepath.Join(g.DataDir, "badger"), badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	probe := func(at time.Time) store.IdemRecord {
		return store.IdemRecord{Owner: "probe", Fingerprint: []byte("probe"), State: store.IdemRunning, CreatedAt: at, ExpiresAt: at.Add(time.Minute)}
	}
	now := time.Now()
	held, won, err := st.ClaimIdempotencyKey(ctx, w.acct, "killed-1", probe(now), now)
	if err != nil || won || held.State != store.IdemRunning {
		t.Fatalf("the killed call's key: won=%v %+v %v", won, held, err)
	}
	if lease := held.ExpiresAt.Sub(held.CreatedAt); lease <= 0 || lease > 10*time.Minute {
		t.Fatalf("the key is held for %s", lease)
	}
	if _, won, _ := st.ClaimIdempotencyKey(ctx, w.acct, "killed-1", probe(now), held.ExpiresAt.Add(-time.Nanosecond)); won {
		t.Fatal("the key freed itself before its lease ended")
	}
	if _, won, _ := st.ClaimIdempotencyKey(ctx, w.acct, "killed-1", probe(held.CreatedAt.Add(10*time.Minute)), held.CreatedAt.Add(10*time.Minute)); !won {
		t.Fatal("the key is still held 10 minutes after the claim")
	}
}
