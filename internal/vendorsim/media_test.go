package vendorsim

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

func mediaServer(t *testing.T) (*httptest.Server, openai.Client) {
	srv := httptest.NewServer(New(Options{APIKey: testKey}).Handler())
	t.Cleanup(srv.Close)
	return srv, openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
}

// The official openai-go SDK reads the simulator's speech answer, and
// its refusals as the API's errors.
func TestOpenAISpeechWithTheSDK(t *testing.T) {
	_, c := mediaServer(t)
	resp, err := c.Audio.Speech.New(t.Context(), openai.AudioSpeechNewParams{Model: "gpt-4o-mini-tts", Input: "Hello there",
		Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("coral")}, ResponseFormat: "wav"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "audio/wav" || string(b[:4]) != "RIFF" {
		t.Fatalf("%q %q", resp.Header.Get("Content-Type"), b[:4])
	}
	_, err = c.Audio.Speech.New(t.Context(), openai.AudioSpeechNewParams{Model: "tts-1", Input: "Hi",
		Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("nobody")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "voice" || apiErr.Code != "invalid_value" {
		t.Fatalf("%v", err)
	}
}

// The SDK creates a video (multipart, as it always sends), reads it as it
// runs and ends, and downloads its content.
func TestOpenAIVideosWithTheSDK(t *testing.T) {
	_, c := mediaServer(t)
	v, err := c.Videos.New(t.Context(), openai.VideoNewParams{Prompt: "a harbour [sim:latency=100ms]", Model: "sora-2-pro",
		Seconds: "8", Size: "1792x1024",
		InputReference: openai.VideoNewParamsInputReferenceUnion{OfFile: openai.File(bytes.NewReader([]byte("\x89PNG\r\n\x1a\n")), "ref.png", "image/png")}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != "queued" || !strings.HasPrefix(v.ID, "video_") || v.Seconds != "8" || v.Size != "1792x1024" || v.Model != "sora-2-pro" || v.Object != "video" {
		t.Fatalf("%s", v.RawJSON())
	}
	for v.Status == "queued" || v.Status == "in_progress" {
		time.Sleep(20 * time.Millisecond)
		if v, err = c.Videos.Get(t.Context(), v.ID); err != nil {
			t.Fatal(err)
		}
	}
	if v.Status != "completed" || v.Progress != 100 || v.CompletedAt == 0 || v.ExpiresAt == 0 {
		t.Fatalf("%s", v.RawJSON())
	}
	resp, err := c.Videos.DownloadContent(t.Context(), v.ID, openai.VideoDownloadContentParams{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "video/mp4" || string(b[4:8]) != "ftyp" {
		t.Fatalf("%q", resp.Header.Get("Content-Type"))
	}
	if _, err := c.Videos.Delete(t.Context(), v.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Videos.Get(t.Context(), v.ID)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("%v", err)
	}

	// A failed video carries error {code, message}.
	f, err := c.Videos.New(t.Context(), openai.VideoNewParams{Prompt: "nope [sim:fail=400]"})
	if err != nil {
		t.Fatal(err)
	}
	f, _ = c.Videos.Get(t.Context(), f.ID)
	if f.Status != "failed" || f.Error.Code != "moderation_blocked" || f.Error.Message == "" || f.Seconds != "4" || f.Size != "720x1280" {
		t.Fatalf("%s", f.RawJSON())
	}
	_, err = c.Videos.New(t.Context(), openai.VideoNewParams{Prompt: "p", Size: "640x480"})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "size" {
		t.Fatalf("%v", err)
	}
}

func call(t *testing.T, method, url, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The Suno-style API: errors under HTTP 200 with the code in the body, a
// task that goes PENDING, TEXT_SUCCESS, FIRST_SUCCESS, SUCCESS with two
// songs whose audio is served here.
func TestSunoWire(t *testing.T) {
	srv, _ := mediaServer(t)
	auth := []string{"Authorization", "Bearer " + testKey, "Content-Type", "application/json"}
	st, body := call(t, "POST", srv.URL+"/api/v1/generate", `{"customMode":false,"instrumental":false,"model":"V4_5ALL","prompt":"p"}`, auth...)
	if st != 200 || gjson.Get(body, "code").Int() != 400 || gjson.Get(body, "msg").Str != "Please enter callBackUrl." {
		t.Fatalf("%d %s", st, body)
	}
	st, body = call(t, "POST", srv.URL+"/api/v1/generate", `{}`, "Authorization", "Bearer wrong")
	if st != 200 || gjson.Get(body, "code").Int() != 401 {
		t.Fatalf("%d %s", st, body)
	}
	st, body = call(t, "POST", srv.URL+"/api/v1/generate",
		`{"customMode":true,"instrumental":true,"model":"V5","callBackUrl":"https://cb.example/","style":"folk","title":"Road","prompt":"[sim:latency=300ms,seconds=61.5]"}`, auth...)
	id := gjson.Get(body, "data.taskId").Str
	if st != 200 || gjson.Get(body, "code").Int() != 200 || id == "" {
		t.Fatalf("%d %s", st, body)
	}
	seen := map[string]bool{}
	var rec string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, rec = call(t, "GET", srv.URL+"/api/v1/generate/record-info?taskId="+id, "", auth...)
		seen[gjson.Get(rec, "data.status").Str] = true
		if gjson.Get(rec, "data.status").Str == "SUCCESS" {
			break
		}
	}
	songs := gjson.Get(rec, "data.response.sunoData").Array()
	if !seen["PENDING"] || !seen["TEXT_SUCCESS"] || !seen["FIRST_SUCCESS"] || !seen["SUCCESS"] || len(songs) != 2 ||
		songs[0].Get("duration").Num != 61.5 || songs[0].Get("title").Str != "Road" || gjson.Get(rec, "data.param").Type != gjson.String {
		t.Fatalf("%v %s", seen, rec)
	}
	st, audio := call(t, "GET", songs[1].Get("audioUrl").Str, "")
	if st != 200 || !strings.HasPrefix(audio, "ID3") {
		t.Fatalf("%d", st)
	}
	_, rec = call(t, "GET", srv.URL+"/api/v1/generate/record-info?taskId=nope", "", auth...)
	if gjson.Get(rec, "code").Int() != 404 {
		t.Fatalf("%s", rec)
	}
}

// ElevenLabs: xi-api-key, FastAPI's 422 for a request without its fields,
// clones that speak, the premade voices listed with the clones.
func TestElevenLabsWire(t *testing.T) {
	srv, _ := mediaServer(t)
	st, body := call(t, "GET", srv.URL+"/v1/voices", "")
	if st != 401 || gjson.Get(body, "detail.status").Str != "needs_authorization" {
		t.Fatalf("%d %s", st, body)
	}
	st, body = call(t, "POST", srv.URL+"/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM", `{}`, "Xi-Api-Key", testKey)
	if st != 422 || gjson.Get(body, "detail.0.loc.1").Str != "text" {
		t.Fatalf("%d %s", st, body)
	}
	st, body = call(t, "POST", srv.URL+"/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM?output_format=pcm_16000", `{"text":"hi"}`, "Xi-Api-Key", testKey)
	if st != 200 || len(body) != 16*2*60*2 {
		t.Fatalf("%d %d", st, len(body))
	}
	st, body = call(t, "POST", srv.URL+"/v1/text-to-speech/nobody", `{"text":"hi"}`, "Xi-Api-Key", testKey)
	if st != 404 || gjson.Get(body, "detail.status").Str != "voice_not_found" {
		t.Fatalf("%d %s", st, body)
	}
}

// Tavily: the key as Bearer or api_key, detail.error on a refusal,
// max_results results.
func TestTavilyWire(t *testing.T) {
	srv, _ := mediaServer(t)
	st, body := call(t, "POST", srv.URL+"/search", `{"query":"q","max_results":3,"api_key":"`+testKey+`"}`)
	if st != 200 || len(gjson.Get(body, "results").Array()) != 3 || gjson.Get(body, "results.0.score").Num == 0 {
		t.Fatalf("%d %s", st, body)
	}
	st, body = call(t, "POST", srv.URL+"/search", `{"query":"q"}`, "Authorization", "Bearer nope")
	if st != 401 || gjson.Get(body, "detail.error").Str == "" {
		t.Fatalf("%d %s", st, body)
	}
	st, body = call(t, "POST", srv.URL+"/search", `{"query":"q","max_results":21}`, "Authorization", "Bearer "+testKey)
	if st != 400 || !strings.Contains(gjson.Get(body, "detail.error").Str, "max_results") {
		t.Fatalf("%d %s", st, body)
	}
}
