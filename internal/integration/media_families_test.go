package integration

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Music: a generation is a task (processing), one unit and two songs; the
// poll adds songs with hosted audio; a failed one is refunded.
func TestMusicGeneration(t *testing.T) {
	e := startMedia(t, testgwOptions())
	c := e.post(t, "/v1/music/generations", `{"model":"mus","prompt":"a sea shanty about toll roads [sim:latency=200ms,seconds=95]","title":"Toll Road"}`)
	sub := c.json(t)
	id, _ := sub["id"].(string)
	if c.Status != 200 || !strings.HasPrefix(id, "mus_") || sub["status"] != "processing" || len(sub) != 4 {
		t.Fatalf("submit %d %s", c.Status, c.Body)
	}
	if e.held(t) != priced(t, "mus", 1) {
		t.Fatalf("held %s", e.held(t))
	}
	rec := e.poll(t, "/v1/music/generations/"+id, "processing").json(t)
	songs, _ := rec["songs"].([]any)
	if rec["status"] != "succeeded" || len(songs) != 2 || num(rec["expires_at"]) <= 0 {
		t.Fatalf("record %v", rec)
	}
	for _, s := range songs {
		song := s.(map[string]any)
		if song["id"] == "" || num(song["duration"]) != 95 || !strings.Contains(song["title"].(string), "Toll Road") {
			t.Fatalf("song %v", song)
		}
		resp, err := http.Get(song["audio_url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/mpeg" || !bytes.HasPrefix(b, []byte("ID3")) {
			t.Fatalf("song file %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	fid := e.post(t, "/v1/music/generations", `{"model":"mus","prompt":"nope [sim:fail=503]"}`).json(t)["id"].(string)
	if f := e.poll(t, "/v1/music/generations/"+fid, "processing").json(t); f["status"] != "failed" || f["error"] == nil {
		t.Fatalf("failed %v", f)
	}
	if got := e.settled(t); got != priced(t, "mus", 1) {
		t.Fatalf("charged %s", got)
	}
	wantRow(t, e.rowOf(t, id), "success", "music", 1, priced(t, "mus", 1))
	wantRow(t, e.rowOf(t, fid), "error", "music", 0, 0)
	if l := e.get(t, "/v1/music/generations?status=processing").json(t)["data"].([]any); len(l) != 0 {
		t.Fatalf("processing %v", l)
	}
	if l := e.get(t, "/v1/music/generations?status=succeeded,failed").json(t)["data"].([]any); len(l) != 2 {
		t.Fatalf("all %v", l)
	}
	wantError(t, e.get(t, "/v1/music/generations?status=running"), 400, "invalid_request", "running")
	wantError(t, e.post(t, "/v1/music/generations", `{"model":"mus"}`), 400, "invalid_request", "prompt")
	first := e.post(t, "/v1/music/generations", `{"model":"mus","prompt":"one"}`, "Idempotency-Key", "m1")
	again := e.post(t, "/v1/music/generations", `{"model":"mus","prompt":"one"}`, "Idempotency-Key", "m1")
	if !bytes.Equal(first.Body, again.Body) || again.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay %s / %s", first.Body, again.Body)
	}
	e.poll(t, "/v1/music/generations/"+first.json(t)["id"].(string), "processing")
	if got := e.settled(t); got != priced(t, "mus", 2) {
		t.Fatalf("charged %s", got)
	}
}

// Speech: synchronous audio with the vendor's content type, per code
// point of input; with async: true a task (pending, succeeded) whose poll
// adds audio_url.
func TestSpeechSyncAndAsync(t *testing.T) {
	e := startMedia(t, testgwOptions())
	input := "Wéllcome to the töll road 日本"
	c := e.post(t, "/v1/audio/speech", `{"model":"tts","input":"`+input+`","voice":"alloy"}`)
	if c.Status != 200 || c.Header.Get("Content-Type") != "audio/mpeg" || !bytes.HasPrefix(c.Body, []byte("ID3")) {
		t.Fatalf("speech %d %q %q", c.Status, c.Header.Get("Content-Type"), c.Body[:min(len(c.Body), 8)])
	}
	chars := int64(len([]rune(input)))
	wantRow(t, e.rowOf(t, c.Header.Get("x-gateway-trace")), "success", "audio", chars, priced(t, "tts", chars))
	w := e.post(t, "/v1/audio/speech", `{"model":"tts","input":"hi","voice":"alloy","response_format":"wav"}`)
	if w.Header.Get("Content-Type") != "audio/wav" || string(w.Body[:4]) != "RIFF" {
		t.Fatalf("wav %q", w.Header.Get("Content-Type"))
	}
	a := e.post(t, "/v1/audio/speech", `{"model":"tts","input":"later, please [sim:latency=200ms]","voice":"alloy","async":true}`)
	sub := a.json(t)
	id, _ := sub["id"].(string)
	if a.Status != 200 || !strings.HasPrefix(id, "tts_") || sub["status"] != "pending" {
		t.Fatalf("async submit %d %s", a.Status, a.Body)
	}
	rec := e.poll(t, "/v1/audio/speech/"+id, "pending").json(t)
	if rec["status"] != "succeeded" || rec["audio_url"] == "" || num(rec["expires_at"]) <= 0 {
		t.Fatalf("record %v", rec)
	}
	resp, err := http.Get(rec["audio_url"].(string))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("audio %v %v", resp, err)
	}
	resp.Body.Close()
	asyncChars := int64(len([]rune("later, please [sim:latency=200ms]")))
	wantRow(t, e.rowOf(t, id), "success", "audio", asyncChars, priced(t, "tts", asyncChars))
	if l := e.get(t, "/v1/audio/speech?status=pending").json(t)["data"].([]any); len(l) != 0 {
		t.Fatalf("pending %v", l)
	}
	if l := e.get(t, "/v1/audio/speech").json(t)["data"].([]any); len(l) != 1 {
		t.Fatalf("the list holds tasks only: %v", l)
	}
	for _, tc := range []struct{ body, msg string }{
		{`{"model":"tts","voice":"alloy"}`, "input"},
		{`{"model":"tts","input":"hi"}`, "voice"},
		{`{"model":"tts","input":"hi","voice":"alloy","response_format":"ogg"}`, "response_format"},
		{`{"model":"tts","input":"hi","voice":"alloy","speed":5}`, "speed"},
		{`{"model":"tts","input":"` + strings.Repeat("a", 4097) + `","voice":"alloy"}`, "4096"},
	} {
		wantError(t, e.post(t, "/v1/audio/speech", tc.body), 400, "invalid_request", tc.msg)
	}
	// An unknown preset is the upstream's 400, not charged.
	wantError(t, e.post(t, "/v1/audio/speech", `{"model":"tts","input":"hi","voice":"nobody"}`), 400, "invalid_request", "nobody")
	want := priced(t, "tts", chars) + priced(t, "tts", 2) + priced(t, "tts", asyncChars)
	if got := e.settled(t); got != want {
		t.Fatalf("charged %s, want %s", got, want)
	}
}

// Voices: a clone (JSON or multipart) is per call, kept for the account,
// listed with the presets, and resolved by the gateway in speech: another
// account's voice, a deleted one and a missing one are 400 naming voice,
// and the speech runs on the channel that holds the voice.
func TestVoicesCloneReferenceDelete(t *testing.T) {
	e := startMedia(t, testgwOptions())
	c := e.post(t, "/v1/audio/voices", `{"name":"Ada","audio_url":"https://samples.example/ada.wav"}`)
	v := c.json(t)
	id, _ := v["id"].(string)
	if c.Status != 200 || !strings.HasPrefix(id, "voc_") || v["name"] != "Ada" || v["status"] != "ready" {
		t.Fatalf("clone %d %s", c.Status, c.Body)
	}
	wantRow(t, e.rowOf(t, c.Header.Get("x-gateway-trace")), "success", "voice", 1, priced(t, "voice", 1))
	// Multipart: the sample as a file.
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("name", "Bo")
	fw, _ := w.CreateFormFile("file", "bo.wav")
	_, _ = fw.Write([]byte("RIFF....WAVEfmt sample"))
	_ = w.Close()
	m := do(t, "POST", e.g.URL+"/v1/audio/voices", map[string]string{"Authorization": "Bearer " + e.key, "Content-Type": w.FormDataContentType()}, b.String())
	if m.Status != 200 || m.json(t)["name"] != "Bo" {
		t.Fatalf("multipart clone %d %s", m.Status, m.Body)
	}
	bo := m.json(t)["id"].(string)
	// A failed clone is an error, not kept, not charged.
	wantError(t, e.post(t, "/v1/audio/voices", `{"name":"Cy [sim:error=400]","audio_url":"https://samples.example/cy.wav"}`), 400, "invalid_request", "400")
	list := e.get(t, "/v1/audio/voices").json(t)
	data, _ := list["data"].([]any)
	presets, _ := list["presets"].([]any)
	if list["object"] != "list" || len(data) != 2 || data[0].(map[string]any)["id"] != bo || len(presets) == 0 ||
		presets[0].(map[string]any)["id"] == "" || list["has_more"] != false {
		t.Fatalf("voices list %v", list)
	}
	// A preset voice tries the failing channel first; the cloned voice
	// speaks on the channel that cloned it, and never tries another.
	p := e.post(t, "/v1/audio/speech", `{"model":"tts","input":"hi","voice":"alloy"}`)
	if p.Status != 200 || num(e.rowOf(t, p.Header.Get("x-gateway-trace"))["attempts_count"]) != 2 {
		t.Fatalf("a preset voice: %d, row %v", p.Status, e.rowOf(t, p.Header.Get("x-gateway-trace")))
	}
	for range 3 {
		s := e.post(t, "/v1/audio/speech", `{"model":"tts","input":"hello","voice":"`+id+`"}`)
		if s.Status != 200 {
			t.Fatalf("speech with a cloned voice: %d %s", s.Status, s.Body)
		}
		if row := e.rowOf(t, s.Header.Get("x-gateway-trace")); num(row["attempts_count"]) != 1 {
			t.Fatalf("a pinned call tried another channel: %v", row)
		}
	}
	// Another account's id is 400 naming the field, as is a missing one.
	other := newMediaAccount(t, e.g, "5")
	wantError(t, other.post(t, "/v1/audio/speech", `{"model":"tts","input":"hello","voice":"`+id+`"}`), 400, "invalid_request", "voice")
	wantError(t, e.post(t, "/v1/audio/speech", `{"model":"tts","input":"hello","voice":"voc_missing"}`), 400, "invalid_request", "voice")
	wantError(t, other.get(t, "/v1/audio/voices/"+id), 405, "invalid_request", "GET")
	if st := do(t, "DELETE", e.g.URL+"/v1/audio/voices/"+id, bearer(other.key), ""); st.Status != 404 {
		t.Fatalf("another account deletes: %d %s", st.Status, st.Body)
	}
	del := do(t, "DELETE", e.g.URL+"/v1/audio/voices/"+id, bearer(e.key), "")
	if del.Status != 200 || del.json(t)["deleted"] != true {
		t.Fatalf("delete %d %s", del.Status, del.Body)
	}
	wantError(t, e.post(t, "/v1/audio/speech", `{"model":"tts","input":"hello","voice":"`+id+`"}`), 400, "invalid_request", "voice")
	if again := do(t, "DELETE", e.g.URL+"/v1/audio/voices/"+id, bearer(e.key), ""); again.Status != 404 {
		t.Fatalf("delete again %d", again.Status)
	}
	if l := e.get(t, "/v1/audio/voices").json(t)["data"].([]any); len(l) != 1 {
		t.Fatalf("after delete %v", l)
	}
	want := priced(t, "voice", 2) + priced(t, "tts", 2) + priced(t, "tts", 15)
	if got := e.settled(t); got != want {
		t.Fatalf("charged %s, want %s", got, want)
	}
	if got := other.settled(t); got != 0 {
		t.Fatalf("the other account was charged %s", got)
	}
}

// Transcripts: a share text with a link inside; per call; no speech is a
// 400 and not charged.
func TestTranscripts(t *testing.T) {
	e := startMedia(t, testgwOptions())
	c := e.post(t, "/v1/transcripts/extract", `{"url":"Watch this! https://v.example/s/abc123 copy the link [sim:seconds=33]"}`)
	r := c.json(t)
	if c.Status != 200 || r["text"] == "" || r["language"] != "en" || num(r["duration"]) != 33 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	wantRow(t, e.rowOf(t, c.Header.Get("x-gateway-trace")), "success", "transcript", 1, priced(t, "trn", 1))
	q := e.post(t, "/v1/transcripts/extract", `{"url":"https://v.example/quiet?x=[sim:nospeech]"}`)
	wantError(t, q, 400, "invalid_request", "no speech")
	if row := e.rowOf(t, q.Header.Get("x-gateway-trace")); money.MustParse(str(row["cost"])) != 0 {
		t.Fatalf("no speech charged: %v", row)
	}
	wantError(t, e.post(t, "/v1/transcripts/extract", `{"url":"no link here"}`), 400, "invalid_request", "link")
	wantError(t, e.post(t, "/v1/transcripts/extract", `{"model":"srch","url":"https://v.example/a"}`), 503, "no_channel_available", "search")
	if got := e.settled(t); got != priced(t, "trn", 1) {
		t.Fatalf("charged %s", got)
	}
}

// Search: {query, max_results} to results; per call; the model optional.
func TestSearch(t *testing.T) {
	e := startMedia(t, testgwOptions())
	c := e.post(t, "/v1/search", `{"query":"toll roads of europe","max_results":3}`)
	r := c.json(t)
	res, _ := r["results"].([]any)
	if c.Status != 200 || r["object"] != "search.results" || r["query"] != "toll roads of europe" || len(res) != 3 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	first := res[0].(map[string]any)
	if first["title"] == "" || !strings.HasPrefix(first["url"].(string), "https://") || first["snippet"] == "" {
		t.Fatalf("%v", first)
	}
	if d := e.post(t, "/v1/search", `{"query":"q"}`).json(t)["results"].([]any); len(d) != 5 {
		t.Fatalf("default %d results", len(d))
	}
	row := e.rowOf(t, c.Header.Get("x-gateway-trace"))
	wantRow(t, row, "success", "search", 1, priced(t, "srch", 1))
	if row["model"] != "srch" {
		t.Fatalf("the first search model serves a call without one: %v", row["model"])
	}
	wantError(t, e.post(t, "/v1/search", `{"query":"q","max_results":21}`), 400, "invalid_request", "max_results")
	wantError(t, e.post(t, "/v1/search", `{}`), 400, "invalid_request", "query")
	a := e.post(t, "/v1/search", `{"query":"same"}`, "Idempotency-Key", "s-1")
	b := e.post(t, "/v1/search", `{"query":"same"}`, "Idempotency-Key", "s-1")
	if !bytes.Equal(a.Body, b.Body) || b.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatal("search replay")
	}
	if got := e.settled(t); got != priced(t, "srch", 3) {
		t.Fatalf("charged %s", got)
	}
}

// Idempotency-Key on the billed POSTs of speech (sync and async), voices
// and transcripts: a retry replays the answer with no second charge or
// task; another body is 409.
func TestMediaIdempotency(t *testing.T) {
	e := startMedia(t, testgwOptions())
	for i, tc := range []struct{ path, body, other string }{
		{"/v1/audio/speech", `{"model":"tts","input":"hello","voice":"alloy"}`, `{"model":"tts","input":"bye","voice":"alloy"}`},
		{"/v1/audio/speech", `{"model":"tts","input":"later","voice":"alloy","async":true}`, `{"model":"tts","input":"x","voice":"alloy","async":true}`},
		{"/v1/audio/voices", `{"name":"Ada","audio_url":"https://samples.example/a.wav"}`, `{"name":"Bo","audio_url":"https://samples.example/a.wav"}`},
		{"/v1/transcripts/extract", `{"url":"https://v.example/1"}`, `{"url":"https://v.example/2"}`},
	} {
		key := "idem-" + itoa(i)
		a := e.post(t, tc.path, tc.body, "Idempotency-Key", key)
		b := e.post(t, tc.path, tc.body, "Idempotency-Key", key)
		if a.Status != 200 || b.Status != 200 || !bytes.Equal(a.Body, b.Body) || b.Header.Get("Idempotency-Replayed") != "true" {
			t.Fatalf("%s: %d / %d replayed %q", tc.path, a.Status, b.Status, b.Header.Get("Idempotency-Replayed"))
		}
		wantError(t, e.post(t, tc.path, tc.other, "Idempotency-Key", key), 409, "idempotency_key_reuse", key)
	}
	if l := e.get(t, "/v1/audio/voices").json(t)["data"].([]any); len(l) != 1 {
		t.Fatalf("a replayed clone made %d voices", len(l))
	}
	if l := e.get(t, "/v1/audio/speech").json(t)["data"].([]any); len(l) != 1 {
		t.Fatalf("a replayed async speech made %d tasks", len(l))
	}
	want := priced(t, "tts", 5) + priced(t, "tts", 5) + priced(t, "voice", 1) + priced(t, "trn", 1)
	if got := e.settled(t); got != want {
		t.Fatalf("charged %s, want %s", got, want)
	}
}
