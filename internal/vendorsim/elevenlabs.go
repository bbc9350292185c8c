package vendorsim

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// ElevenLabs' voices and text to speech, as the elevenlabs plugin meets
// them, with the key in xi-api-key:
//
//   - POST /v1/voices/add (multipart: name, one or more files, description,
//     labels, remove_background_noise) clones a voice: {voice_id,
//     requires_verification}; the markers are read from name;
//   - GET /v1/voices lists the premade voices and the account's clones;
//   - POST /v1/text-to-speech/{voice_id}?output_format=mp3_44100_128
//     {text, model_id, voice_settings...} answers the audio; the markers
//     are read from text.
//
// Errors are FastAPI's: {"detail": {"status", "message"}}, and a 422 with
// {"detail": [{type, loc, msg, input}]} for a request that fails
// validation.

// elevenPremade are the simulator's premade voices (ElevenLabs' own ids).
var elevenPremade = [][2]string{
	{"21m00Tcm4TlvDq8ikWAM", "Rachel"}, {"pNInz6obpgDQGcFmaJgB", "Adam"}, {"ErXwobaYiN019PkySvjV", "Antoni"},
	{"AZnzlk1XvdvUeBnXmlld", "Domi"}, {"MF3mGyEYCl7XYWbV9V6O", "Elli"}, {"TxGEqnHWrfWFTfGW9XjX", "Josh"},
}

// elevenFormats are the output formats and their content types.
var elevenFormats = func() map[string]string {
	m := map[string]string{"ulaw_8000": "audio/basic", "alaw_8000": "audio/basic"}
	for _, f := range []string{"mp3_22050_32", "mp3_44100_32", "mp3_44100_64", "mp3_44100_96", "mp3_44100_128", "mp3_44100_192"} {
		m[f] = "audio/mpeg"
	}
	for _, f := range []string{"pcm_8000", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_44100", "pcm_48000"} {
		m[f] = "audio/pcm"
	}
	for _, f := range []string{"opus_48000_32", "opus_48000_64", "opus_48000_96", "opus_48000_128", "opus_48000_192"} {
		m[f] = "audio/opus"
	}
	return m
}()

// voiceTable holds the voices cloned on a server: voice_id → name.
type voiceTable struct {
	mu     sync.Mutex
	voices map[string]string
	order  []string
}

func (t *voiceTable) add(id, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.voices == nil {
		t.voices = map[string]string{}
	}
	t.voices[id] = name
	t.order = append(t.order, id)
}

func (t *voiceTable) has(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.voices[id]
	return ok
}

// elevenError writes {"detail": {"status", "message"}}.
func elevenError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"detail": map[string]string{"status": code, "message": msg}})
	jsonReply(w, status, b)
}

// elevenInvalid writes a 422 validation error of one field.
func elevenInvalid(w http.ResponseWriter, typ, where, field, msg string) {
	b, _ := json.Marshal(map[string]any{"detail": []map[string]any{{"type": typ, "loc": []string{where, field}, "msg": msg, "input": nil}}})
	jsonReply(w, http.StatusUnprocessableEntity, b)
}

// elevenStatus is the detail status of a marker's error status.
func elevenStatus(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "too_many_concurrent_requests"
	case status == http.StatusUnauthorized:
		return "invalid_api_key"
	case status >= 500:
		return "internal_server_error"
	}
	return "invalid_request"
}

func (s *Server) elevenLabs(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/v1/voices/add" && r.Method == http.MethodPost, p == "/v1/voices" && r.Method == http.MethodGet,
		strings.HasPrefix(p, "/v1/text-to-speech/") && r.Method == http.MethodPost:
	default:
		elevenError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed")
		return
	}
	body, ok := s.readMedia(w, r, func() {
		elevenError(w, http.StatusRequestEntityTooLarge, "payload_too_large", "The request body is too large.")
	})
	if !ok {
		return
	}
	switch key := r.Header.Get("Xi-Api-Key"); {
	case key == "":
		elevenError(w, http.StatusUnauthorized, "needs_authorization", "Neither authorization header nor xi-api-key received, please provide one.")
		return
	case !s.keyOK(key):
		elevenError(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	}
	switch {
	case p == "/v1/voices":
		s.elevenVoices(w)
	case p == "/v1/voices/add":
		s.elevenClone(w, r, body)
	default:
		s.elevenSpeak(w, r, body, strings.TrimPrefix(p, "/v1/text-to-speech/"))
	}
}

func (s *Server) elevenVoices(w http.ResponseWriter) {
	var items []string
	voice := func(id, name, category string) string {
		n, _ := json.Marshal(name)
		return `{"voice_id":` + strconv.Quote(id) + `,"name":` + string(n) + `,"category":"` + category +
			`","labels":{},"description":null,"preview_url":null,"settings":null}`
	}
	for _, v := range elevenPremade {
		items = append(items, voice(v[0], v[1], "premade"))
	}
	s.voices.mu.Lock()
	for _, id := range s.voices.order {
		items = append(items, voice(id, s.voices.voices[id], "cloned"))
	}
	s.voices.mu.Unlock()
	jsonReply(w, http.StatusOK, []byte(`{"voices":[`+strings.Join(items, ",")+`],"has_more":false,"total_count":`+strconv.Itoa(len(items))+`}`))
}

// elevenClone is POST /v1/voices/add.
func (s *Server) elevenClone(w http.ResponseWriter, r *http.Request, body []byte) {
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" || params["boundary"] == "" {
		elevenInvalid(w, "missing", "body", "name", "Field required")
		return
	}
	fields := map[string]string{}
	var files int
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			elevenError(w, http.StatusBadRequest, "invalid_request", "The multipart body could not be parsed.")
			return
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return
		}
		switch {
		case part.FileName() != "" && part.FormName() == "files":
			if len(data) == 0 {
				elevenError(w, http.StatusBadRequest, "invalid_audio", "The file "+part.FileName()+" is empty.")
				return
			}
			files++
		case part.FileName() == "":
			fields[part.FormName()] = string(data)
		}
	}
	name := fields["name"]
	switch {
	case name == "":
		elevenInvalid(w, "missing", "body", "name", "Field required")
		return
	case files == 0:
		elevenInvalid(w, "missing", "body", "files", "Field required")
		return
	}
	k := s.jobKnobs(name)
	if !answerSync(w, r, k, func(status int, msg string) { elevenError(w, status, elevenStatus(status), msg) }) {
		return
	}
	id := newID("", 10)
	s.voices.add(id, name)
	jsonReply(w, http.StatusOK, []byte(`{"voice_id":`+strconv.Quote(id)+`,"requires_verification":false}`))
}

// elevenSpeak is POST /v1/text-to-speech/{voice_id}.
func (s *Server) elevenSpeak(w http.ResponseWriter, r *http.Request, body []byte, voiceID string) {
	voiceID, _ = url.PathUnescape(voiceID)
	format := r.URL.Query().Get("output_format")
	if format == "" {
		format = "mp3_44100_128"
	}
	ct, ok := elevenFormats[format]
	if !ok {
		elevenInvalid(w, "enum", "query", "output_format", "Input should be one of the supported output formats")
		return
	}
	b := gjson.ParseBytes(body)
	text := b.Get("text")
	switch {
	case !b.IsObject() || text.Type != gjson.String:
		elevenInvalid(w, "missing", "body", "text", "Field required")
		return
	case utf8.RuneCountInString(text.Str) > 10000:
		elevenError(w, http.StatusBadRequest, "max_character_limit_exceeded", "The text is longer than the model's limit.")
		return
	case !slices.ContainsFunc(elevenPremade, func(v [2]string) bool { return v[0] == voiceID }) && !s.voices.has(voiceID):
		elevenError(w, http.StatusNotFound, "voice_not_found", "A voice with the voice_id "+voiceID+" was not found.")
		return
	}
	if sp := b.Get("voice_settings.speed"); sp.Exists() && (sp.Num < 0.7 || sp.Num > 1.2) {
		elevenInvalid(w, "less_than_equal", "body", "voice_settings", "voice_settings.speed must be from 0.7 to 1.2")
		return
	}
	if !answerSync(w, r, s.jobKnobs(text.Str), func(status int, msg string) { elevenError(w, status, elevenStatus(status), msg) }) {
		return
	}
	chars := utf8.RuneCountInString(text.Str)
	var audio []byte
	switch {
	case strings.HasPrefix(format, "pcm_"):
		rate, _ := strconv.Atoi(strings.TrimPrefix(format, "pcm_"))
		audio = make([]byte, rate/1000*2*60*chars) // 16-bit mono silence, 60 ms a character
	default:
		audio = sim.AudioMP3(64*chars, fnv(voiceID+"\x00"+text.Str))
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(audio)))
	_, _ = w.Write(audio)
}
