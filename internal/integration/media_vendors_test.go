package integration

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// The real media vendors behind the real binary, each against an in-test
// server speaking its exact wire (internal/vendorsim): OpenAI's speech and
// videos through the openai plugin, a Suno-style music API, ElevenLabs'
// voice cloning and speech, Tavily's search. Prices are the test's own
// (mediaPrices); every gateway's books are audited when its test ends.

// mediaVendorsConfig serves each family through its real vendor on up.
func mediaVendorsConfig(up string) string {
	return `
server {
  allow_private_urls = true
}
store "badger" {
  dir = "@DATA@"
}
channel "openai-media" {
  vendor   = "openai"
  base_url = "` + up + `"
  api_key  = "` + upstreamKey + `"
  families = ["speech", "video"]
  models   = ["oai-tts=gpt-4o-mini-tts", "sora=sora-2"]
  settings = { poll_interval = "50ms" }
}
channel "suno" {
  vendor   = "suno"
  base_url = "` + up + `"
  api_key  = "` + upstreamKey + `"
  families = ["music"]
  models   = ["suno-music=V4_5ALL"]
  settings = { poll_interval = "50ms" }
}
channel "elevenlabs" {
  vendor   = "elevenlabs"
  base_url = "` + up + `"
  api_key  = "` + upstreamKey + `"
  families = ["voice", "speech"]
  models   = ["eleven-clone=ivc", "eleven-tts=eleven_multilingual_v2"]
}
channel "tavily" {
  vendor   = "tavily"
  base_url = "` + up + `"
  api_key  = "` + upstreamKey + `"
  families = ["search"]
  models   = ["tavily-search=advanced"]
}
model "oai-tts" {
  family = "speech"
  price {
    per_character = "` + mediaPrices["oai-tts"] + `"
  }
}
model "sora" {
  family       = "video"
  max_duration = 12
  price {
    per_second = "` + mediaPrices["sora"] + `"
  }
}
model "suno-music" {
  family = "music"
  price {
    per_generation = "` + mediaPrices["suno-music"] + `"
  }
}
model "eleven-clone" {
  family = "voice"
  price {
    per_call = "` + mediaPrices["eleven-clone"] + `"
  }
}
model "eleven-tts" {
  family = "speech"
  price {
    per_character = "` + mediaPrices["eleven-tts"] + `"
  }
}
model "tavily-search" {
  family = "search"
  price {
    per_call = "` + mediaPrices["tavily-search"] + `"
  }
}
`
}

// startVendors starts the upstream and a gateway on mediaVendorsConfig whose
// books are audited at the end, with an account holding credit.
func startVendors(t *testing.T) (*mediaEnv, *upstream) {
	t.Helper()
	up := startUpstream(t, sim.Knobs{})
	g := startGateway(t, testgw.Options{Config: mediaVendorsConfig(up.URL)})
	return newMediaAccount(t, g, "20"), up
}

// lastUnder is the last request the upstream got on a path under prefix.
func lastUnder(t *testing.T, up *upstream, prefix string) vendorsim.Request {
	t.Helper()
	rs := up.requests()
	for i := len(rs) - 1; i >= 0; i-- {
		if strings.HasPrefix(rs[i].Path, prefix) {
			return rs[i]
		}
	}
	t.Fatalf("the upstream got nothing on %s", prefix)
	return vendorsim.Request{}
}

// OpenAI speech through the official SDK (audio bytes, billed per
// character), async speech as a task the gateway runs on the synchronous
// upstream, OpenAI's refusals mapped as errors rule 4 says and never
// charged.
func TestOpenAISpeechVendor(t *testing.T) {
	e, up := startVendors(t)
	c := openai.NewClient(option.WithBaseURL(e.g.URL+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0))
	input := "Welcome to the töll road"
	resp, err := c.Audio.Speech.New(t.Context(), openai.AudioSpeechNewParams{Model: "oai-tts", Input: input,
		Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("coral")}, ResponseFormat: "wav"})
	if err != nil {
		t.Fatal(err)
	}
	audio, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "audio/wav" || string(audio[:4]) != "RIFF" {
		t.Fatalf("%q %q", resp.Header.Get("Content-Type"), audio[:4])
	}
	sent := lastTo(t, up, "/v1/audio/speech")
	if b := gjson.ParseBytes(sent.Body); b.Get("model").Str != "gpt-4o-mini-tts" || b.Get("voice").Str != "coral" ||
		sent.Header.Get("Authorization") != "Bearer "+upstreamKey {
		t.Fatalf("upstream got %v %s", sent.Header, sent.Body)
	}
	chars := int64(len([]rune(input)))
	wantRow(t, e.rowOf(t, resp.Header.Get("x-gateway-trace")), "success", "audio", chars, priced(t, "oai-tts", chars))

	a := e.post(t, "/v1/audio/speech", `{"model":"oai-tts","input":"later [sim:latency=100ms]","voice":"ash","async":true}`)
	id, _ := a.json(t)["id"].(string)
	if a.Status != 200 || !strings.HasPrefix(id, "tts_") || a.json(t)["status"] != "pending" {
		t.Fatalf("%d %s", a.Status, a.Body)
	}
	rec := e.poll(t, "/v1/audio/speech/"+id, "pending").json(t)
	if rec["status"] != "succeeded" || !strings.HasPrefix(str(rec["audio_url"]), e.g.URL) {
		t.Fatalf("%v", rec)
	}
	if r, err := http.Get(str(rec["audio_url"])); err != nil || r.StatusCode != 200 || r.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("%v %v", r, err)
	} else {
		r.Body.Close()
	}
	asyncChars := int64(len([]rune("later [sim:latency=100ms]")))
	wantRow(t, e.rowOf(t, id), "success", "audio", asyncChars, priced(t, "oai-tts", asyncChars))

	_, err = c.Audio.Speech.New(t.Context(), openai.AudioSpeechNewParams{Model: "oai-tts", Input: "Hi",
		Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("nobody")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_request" || !strings.Contains(apiErr.Message, "'nobody'") {
		t.Fatalf("%v", err)
	}
	wantError(t, e.post(t, "/v1/audio/speech", `{"model":"oai-tts","input":"Hi [sim:error=503]","voice":"ash"}`), 503, "upstream_error", "Simulated upstream error 503")
	if got := e.settled(t); got != priced(t, "oai-tts", chars+asyncChars) {
		t.Fatalf("charged %s", got)
	}
}

// OpenAI videos (Sora): a task held at the asked duration, polled through
// the upstream's states (the client sees only the family's words), the
// MP4 fetched with the channel's key and hosted, the seconds the video
// reports settling (rounded up, the rest refunded); a failed video is a
// failed record refunded in full; a submit OpenAI refuses is the client's
// error, not charged.
func TestOpenAIVideoVendor(t *testing.T) {
	e, up := startVendors(t)
	c := e.post(t, "/v1/videos/generations", `{"model":"sora","prompt":"a harbour at dawn [sim:latency=300ms,seconds=6.4]","duration":8,"resolution":"720p","ratio":"16:9"}`)
	sub := c.json(t)
	id, _ := sub["id"].(string)
	if c.Status != 200 || !strings.HasPrefix(id, "vid_") || sub["status"] != "queued" || sub["model"] != "sora" {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	if e.held(t) != priced(t, "sora", 8) {
		t.Fatalf("held %s", e.held(t))
	}
	fields, _, err := lastTo(t, up, "/v1/videos").Form()
	if err != nil || fields["model"] != "sora-2" || fields["seconds"] != "8" || fields["size"] != "1280x720" {
		t.Fatalf("upstream got %v %v", fields, err)
	}
	seen := map[string]bool{}
	var rec map[string]any
	for i := 0; i < 400; i++ {
		rec = e.get(t, "/v1/videos/generations/"+id).json(t)
		seen[str(rec["status"])] = true
		if rec["status"] == "succeeded" {
			break
		}
		if i == 399 {
			t.Fatalf("still %v", rec)
		}
		time.Sleep(25 * time.Millisecond)
	}
	for st := range seen {
		if st != "queued" && st != "running" && st != "succeeded" {
			t.Fatalf("the client saw the status %q", st)
		}
	}
	if num(rec["duration"]) != 7 || !strings.HasPrefix(str(rec["video_url"]), e.g.URL) || num(rec["expires_at"]) <= 0 {
		t.Fatalf("%v", rec)
	}
	r, err := http.Get(str(rec["video_url"]))
	if err != nil {
		t.Fatal(err)
	}
	mp4, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "video/mp4" || string(mp4[4:8]) != "ftyp" {
		t.Fatalf("%d %q", r.StatusCode, r.Header.Get("Content-Type"))
	}
	content := lastUnder(t, up, "/v1/videos/video_")
	if !strings.HasSuffix(content.Path, "/content") || content.Header.Get("Authorization") != "Bearer "+upstreamKey {
		t.Fatalf("the content was fetched by %s with %v", content.Path, content.Header)
	}
	wantRow(t, e.rowOf(t, id), "success", "video", 7, priced(t, "sora", 7))

	fid := e.post(t, "/v1/videos/generations", `{"model":"sora","prompt":"nope [sim:fail=400]","duration":4}`).json(t)["id"].(string)
	f := e.poll(t, "/v1/videos/generations/"+fid, "queued", "running").json(t)
	ferr, _ := f["error"].(map[string]any)
	if f["status"] != "failed" || ferr["code"] != "invalid_request" || !strings.Contains(str(ferr["message"]), "Simulated") {
		t.Fatalf("%v", f)
	}
	wantRow(t, e.rowOf(t, fid), "error", "video", 0, 0)

	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"sora","prompt":"p","duration":4,"size":"640x480"}`), 400, "invalid_request", "640x480")
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"sora","prompt":"p [sim:error=500]","duration":4}`), 500, "upstream_error", "Simulated upstream error 500")
	wantError(t, e.post(t, "/v1/videos/generations", `{"model":"sora","prompt":"p","duration":4,"content":[{"type":"video_url","video_url":{"url":"https://v.example/a.mp4"}}]}`),
		400, "invalid_request", "video_url")
	if got := e.settled(t); got != priced(t, "sora", 7) {
		t.Fatalf("charged %s", got)
	}
}

// The Suno-style music API: a generation is a task the client sees as
// processing, whatever the upstream's own states; its two songs are the
// upstream's links, fetched and hosted by the gateway; the content filter
// fails the task (refunded); the API's errors under HTTP 200 reach the
// client as their statuses.
func TestSunoMusicVendor(t *testing.T) {
	e, up := startVendors(t)
	c := e.post(t, "/v1/music/generations", `{"model":"suno-music","prompt":"a sea shanty [sim:latency=300ms,seconds=95]","title":"Toll Road"}`)
	id, _ := c.json(t)["id"].(string)
	if c.Status != 200 || !strings.HasPrefix(id, "mus_") || c.json(t)["status"] != "processing" || e.held(t) != priced(t, "suno-music", 1) {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	if b := gjson.ParseBytes(lastTo(t, up, "/api/v1/generate").Body); b.Get("customMode").Bool() || b.Get("model").Str != "V4_5ALL" ||
		!strings.HasPrefix(b.Get("callBackUrl").Str, "https://example.com/") {
		t.Fatalf("upstream got %s", b.Raw)
	}
	rec := e.poll(t, "/v1/music/generations/"+id, "processing").json(t)
	songs, _ := rec["songs"].([]any)
	if rec["status"] != "succeeded" || len(songs) != 2 {
		t.Fatalf("%v", rec)
	}
	for _, s := range songs {
		song := s.(map[string]any)
		u := str(song["audio_url"])
		if !strings.HasPrefix(u, e.g.URL) || strings.Contains(u, up.URL) || num(song["duration"]) != 95 || song["title"] != "Toll Road" {
			t.Fatalf("song %v", song)
		}
		r, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || !bytes.HasPrefix(b, []byte("ID3")) {
			t.Fatalf("%d", r.StatusCode)
		}
	}
	wantRow(t, e.rowOf(t, id), "success", "music", 1, priced(t, "suno-music", 1))

	fid := e.post(t, "/v1/music/generations", `{"model":"suno-music","prompt":"bad words [sim:fail=400]"}`).json(t)["id"].(string)
	if f := e.poll(t, "/v1/music/generations/"+fid, "processing").json(t); f["status"] != "failed" || f["error"] == nil {
		t.Fatalf("%v", f)
	}
	wantRow(t, e.rowOf(t, fid), "error", "music", 0, 0)
	wantError(t, e.post(t, "/v1/music/generations", `{"model":"suno-music","prompt":"p [sim:error=429]"}`), 429, "rate_limit_exceeded", "Simulated upstream error 429")
	wantError(t, e.post(t, "/v1/music/generations", `{"model":"suno-music","lyrics":"la la la"}`), 400, "invalid_request", "style")
	if got := e.settled(t); got != priced(t, "suno-music", 1) {
		t.Fatalf("charged %s", got)
	}
}

// ElevenLabs: a clone from a link (fetched by the plugin) and from an
// upload (streamed from the gateway), each billed per call and recorded
// for the account; the list holds the account's voices and the premade
// presets; a cloned voice speaks on the channel that holds it, by the
// upstream's own voice id; another account cannot name it; the vendor's
// refusals are not charged and not kept.
func TestElevenLabsVoiceVendor(t *testing.T) {
	e, up := startVendors(t)
	sample := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(sim.AudioWAV(300))
	}))
	t.Cleanup(sample.Close)
	c := e.post(t, "/v1/audio/voices", `{"model":"eleven-clone","name":"Ada","audio_url":"`+sample.URL+`/ada.wav"}`)
	ada := c.json(t)
	adaID, _ := ada["id"].(string)
	if c.Status != 200 || !strings.HasPrefix(adaID, "voc_") || ada["status"] != "ready" || ada["name"] != "Ada" {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	if _, files, err := lastTo(t, up, "/v1/voices/add").Form(); err != nil || files["files"][0] != "ada.wav" || !strings.HasPrefix(files["files"][1], "RIFF") {
		t.Fatalf("upstream got %v %v", files, err)
	}

	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("model", "eleven-clone")
	_ = mw.WriteField("name", "Bo")
	fw, _ := mw.CreateFormFile("file", "bo.wav")
	upload := append(sim.AudioWAV(100), "-bo"...)
	_, _ = fw.Write(upload)
	_ = mw.Close()
	c = e.post(t, "/v1/audio/voices", buf.String(), "Content-Type", mw.FormDataContentType())
	if c.Status != 200 || c.json(t)["status"] != "ready" {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	if _, files, err := lastTo(t, up, "/v1/voices/add").Form(); err != nil || files["files"] != [2]string{"bo.wav", string(upload)} {
		t.Fatalf("the upload did not reach the upstream whole: %v", err)
	}

	list := e.get(t, "/v1/audio/voices").json(t)
	data, _ := list["data"].([]any)
	presets, _ := list["presets"].([]any)
	if len(data) != 2 || len(presets) != 6 || presets[0].(map[string]any)["id"] != "21m00Tcm4TlvDq8ikWAM" {
		t.Fatalf("%v", list)
	}

	s := e.post(t, "/v1/audio/speech", `{"model":"eleven-tts","input":"Hello from Ada","voice":"`+adaID+`"}`)
	if s.Status != 200 || s.Header.Get("Content-Type") != "audio/mpeg" || !bytes.HasPrefix(s.Body, []byte("ID3")) {
		t.Fatalf("%d %q", s.Status, s.Header.Get("Content-Type"))
	}
	spoke := lastUnder(t, up, "/v1/text-to-speech/")
	if spoke.Path == "/v1/text-to-speech/"+adaID || spoke.Header.Get("Xi-Api-Key") != upstreamKey {
		t.Fatalf("the upstream got %s: the gateway's id, not its own voice id", spoke.Path)
	}
	w := e.post(t, "/v1/audio/speech", `{"model":"eleven-tts","input":"Hi","voice":"21m00Tcm4TlvDq8ikWAM","response_format":"wav"}`)
	if w.Status != 200 || w.Header.Get("Content-Type") != "audio/wav" || string(w.Body[:4]) != "RIFF" {
		t.Fatalf("%d %q", w.Status, w.Header.Get("Content-Type"))
	}

	other := newMediaAccount(t, e.g, "5")
	wantError(t, other.post(t, "/v1/audio/speech", `{"model":"eleven-tts","input":"Hi","voice":"`+adaID+`"}`), 400, "invalid_request", "voice")
	wantError(t, e.post(t, "/v1/audio/voices", `{"model":"eleven-clone","name":"Cy [sim:error=400]","audio_url":"`+sample.URL+`/cy.wav"}`),
		400, "invalid_request", "Simulated upstream error 400")
	wantError(t, e.post(t, "/v1/audio/voices", `{"model":"eleven-clone","name":"Cy [sim:fail=500]","audio_url":"`+sample.URL+`/cy.wav"}`),
		500, "upstream_error", "Simulated upstream error 500")
	wantError(t, e.post(t, "/v1/audio/speech", `{"model":"eleven-tts","input":"Hi","voice":"21m00Tcm4TlvDq8ikWAM","response_format":"flac"}`),
		400, "invalid_request", "flac")
	if data := e.get(t, "/v1/audio/voices").json(t)["data"].([]any); len(data) != 2 {
		t.Fatalf("a refused clone was kept: %v", data)
	}
	spoken := int64(len([]rune("Hello from Ada")) + len([]rune("Hi")))
	if got := e.settled(t); got != priced(t, "eleven-clone", 2)+priced(t, "eleven-tts", spoken) {
		t.Fatalf("charged %s", got)
	}
	if got := other.settled(t); got != 0 {
		t.Fatalf("the other account was charged %s", got)
	}
}

// Tavily: a search without a model runs on the search family's model,
// per call; the model's search depth goes upstream; Tavily's refusals pass
// through with their status and message.
func TestTavilySearchVendor(t *testing.T) {
	e, up := startVendors(t)
	c := e.post(t, "/v1/search", `{"query":"toll roads of europe","max_results":3}`)
	res := c.json(t)
	results, _ := res["results"].([]any)
	if c.Status != 200 || res["object"] != "search.results" || len(results) != 3 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	first := results[0].(map[string]any)
	if first["title"] == "" || !strings.HasPrefix(str(first["url"]), "https://example.com/tavily/") || !strings.Contains(str(first["snippet"]), "Simulated Tavily content") {
		t.Fatalf("%v", first)
	}
	sent := lastTo(t, up, "/search")
	if b := gjson.ParseBytes(sent.Body); b.Get("search_depth").Str != "advanced" || b.Get("max_results").Int() != 3 ||
		sent.Header.Get("Authorization") != "Bearer "+upstreamKey {
		t.Fatalf("upstream got %v %s", sent.Header, sent.Body)
	}
	wantRow(t, e.rowOf(t, c.Header.Get("x-gateway-trace")), "success", "search", 1, priced(t, "tavily-search", 1))
	wantError(t, e.post(t, "/v1/search", `{"query":"q","exotic":true}`), 400, "invalid_request", "Unknown parameter: exotic.")
	wantError(t, e.post(t, "/v1/search", `{"query":"q [sim:error=429]"}`), 429, "rate_limit_exceeded", "Simulated upstream error 429")
	wantError(t, e.post(t, "/v1/search", `{"query":"q [sim:error=502]"}`), 502, "upstream_error", "Simulated upstream error 502")
	if got := e.settled(t); got != priced(t, "tavily-search", 1) {
		t.Fatalf("charged %s", got)
	}
}
