package vendorsim

import (
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// OpenAI's speech and videos APIs, as the openai plugin meets them.
//
// POST /v1/audio/speech takes JSON {model, input, voice, response_format,
// speed, instructions} and answers the audio's bytes under the format's
// content type; the markers are read from input.
//
// The videos API (Sora): POST /v1/videos (multipart/form-data, or JSON,
// with prompt, model, seconds, size and an input_reference image) answers
// a video object, queued; GET /v1/videos/{id} the object as it stands
// (queued, in_progress with progress, completed with the seconds it lasts,
// or failed with error {code, message}); GET /v1/videos/{id}/content the
// MP4 once completed; DELETE /v1/videos/{id} deletes it. The markers are
// read from prompt. The simulator takes any whole number of seconds from 1
// to 20 (which values a model takes is model policy the real API changes
// over time); seconds=N makes the finished video report N seconds.

var (
	ttsVoices  = []string{"alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse", "marin", "cedar"}
	ttsFormats = map[string]string{"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac",
		"wav": "audio/wav", "pcm": "audio/pcm"}
	soraModels = []string{"sora-2", "sora-2-pro", "sora-2-2025-10-06", "sora-2-pro-2025-10-06", "sora-2-2025-12-08"}
	soraSizes  = []string{"720x1280", "1280x720", "1024x1792", "1792x1024"}
)

func (s *Server) openaiSpeech(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, protocol.OpenAIChat, http.StatusMethodNotAllowed, "", "Method "+r.Method+" is not allowed on "+r.URL.Path+".")
		return
	}
	body, ok := s.readMedia(w, r, func() { imagesError(w, http.StatusRequestEntityTooLarge, "The request body is too large.", "", "") })
	if !ok || !s.authorized(w, r, protocol.OpenAIChat) {
		return
	}
	req, err := readJSON(body)
	if err != nil {
		imagesError(w, http.StatusBadRequest, err.Error(), "", "")
		return
	}
	for k := range req.has {
		if !slices.Contains([]string{"model", "input", "voice", "response_format", "speed", "instructions", "stream_format"}, k) {
			imagesError(w, http.StatusBadRequest, "Unrecognized request argument supplied: "+k, "", "")
			return
		}
	}
	model, input := req.fields["model"], req.fields["input"]
	switch {
	case model == "":
		imagesError(w, http.StatusBadRequest, "Missing required parameter: 'model'.", "model", "missing_required_parameter")
		return
	case !strings.HasPrefix(model, "tts-1") && !strings.HasPrefix(model, "gpt-4o-mini-tts"):
		imagesError(w, http.StatusNotFound, "The model `"+model+"` does not exist or you do not have access to it.", "", "model_not_found")
		return
	case !req.has["input"]:
		imagesError(w, http.StatusBadRequest, "Missing required parameter: 'input'.", "input", "missing_required_parameter")
		return
	case utf8.RuneCountInString(input) > 4096:
		imagesError(w, http.StatusBadRequest, "Invalid 'input': string too long. Expected a string with maximum length 4096, but got a string with length "+
			strconv.Itoa(utf8.RuneCountInString(input))+" instead.", "input", "string_above_max_length")
		return
	case !req.has["voice"]:
		imagesError(w, http.StatusBadRequest, "Missing required parameter: 'voice'.", "voice", "missing_required_parameter")
		return
	}
	voice := req.fields["voice"]
	if id := gjson.Get(voice, "id"); id.Exists() {
		voice = id.Str // a custom voice {"id": "voice_..."}
	} else if !slices.Contains(ttsVoices, voice) {
		imagesError(w, http.StatusBadRequest, "Invalid value: '"+voice+"'. Supported values are: "+quoteList(ttsVoices)+".", "voice", "invalid_value")
		return
	}
	format := "mp3"
	if req.has["response_format"] {
		format = req.fields["response_format"]
		if _, ok := ttsFormats[format]; !ok {
			imagesError(w, http.StatusBadRequest, "Invalid value: '"+format+"'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav', and 'pcm'.", "response_format", "invalid_value")
			return
		}
	}
	if req.has["speed"] {
		if f, err := strconv.ParseFloat(req.fields["speed"], 64); err != nil || f < 0.25 || f > 4 {
			imagesError(w, http.StatusBadRequest, "Invalid 'speed': expected a number from 0.25 to 4.0, but got "+req.fields["speed"]+" instead.", "speed", "invalid_value")
			return
		}
	}
	if !answerSync(w, r, s.jobKnobs(input), func(status int, msg string) { imagesError(w, status, msg, "", "") }) {
		return
	}
	chars := utf8.RuneCountInString(input)
	var audio []byte
	switch format {
	case "wav":
		audio = sim.AudioWAV(60 * chars)
	case "pcm":
		audio = make([]byte, 24*2*60*chars) // 24 kHz 16-bit mono silence
	default:
		audio = sim.AudioMP3(64*chars, fnv(model+"\x00"+voice+"\x00"+input))
	}
	w.Header().Set("Content-Type", ttsFormats[format])
	w.Header().Set("Content-Length", strconv.Itoa(len(audio)))
	_, _ = w.Write(audio)
}

func (s *Server) openaiVideos(w http.ResponseWriter, r *http.Request) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/v1/videos"), "/")
	id, sub, _ := strings.Cut(rest, "/")
	switch {
	case rest == "" && r.Method == http.MethodPost:
		s.createVideo(w, r)
		return
	case rest != "" && (sub == "" && (r.Method == http.MethodGet || r.Method == http.MethodDelete) || sub == "content" && r.Method == http.MethodGet):
	case rest == "" || sub == "" || sub == "content":
		writeError(w, protocol.OpenAIChat, http.StatusMethodNotAllowed, "", "Method "+r.Method+" is not allowed on "+r.URL.Path+".")
		return
	default:
		writeError(w, protocol.OpenAIChat, http.StatusNotFound, "", "Invalid URL ("+r.Method+" "+r.URL.Path+")")
		return
	}
	if _, ok := s.readMedia(w, r, func() {}); !ok || !s.authorized(w, r, protocol.OpenAIChat) {
		return
	}
	j, ok := s.jobs.get(id)
	if !ok || !strings.HasPrefix(id, "video_") {
		imagesError(w, http.StatusNotFound, "Video with id '"+id+"' not found.", "", "")
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		s.jobs.remove(id)
		jsonReply(w, http.StatusOK, []byte(`{"id":`+strconv.Quote(id)+`,"object":"video.deleted","deleted":true}`))
	case sub == "content":
		p, done := j.progress(time.Now())
		if !done || p < 100 || j.k.Fail != 0 {
			imagesError(w, http.StatusNotFound, "Video content is not available: the video is not completed.", "", "")
			return
		}
		if v := r.URL.Query().Get("variant"); v != "" && v != "video" {
			imagesError(w, http.StatusBadRequest, "Invalid value: '"+v+"'. The simulator serves the 'video' variant.", "variant", "invalid_value")
			return
		}
		mp4 := sim.VideoMP4(int64(j.seconds+0.999), fnv(j.id))
		w.Header().Set("Content-Type", "video/mp4")
		w.Header().Set("Content-Length", strconv.Itoa(len(mp4)))
		_, _ = w.Write(mp4)
	default:
		jsonReply(w, http.StatusOK, videoObject(j, time.Now()))
	}
}

// createVideo is POST /v1/videos.
func (s *Server) createVideo(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readMedia(w, r, func() { imagesError(w, http.StatusRequestEntityTooLarge, "The request body is too large.", "", "") })
	if !ok || !s.authorized(w, r, protocol.OpenAIChat) {
		return
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var req imagesRequest
	var err error
	switch mt {
	case "multipart/form-data":
		req, err = readForm(body, params["boundary"], videoFiles)
	case "application/json":
		req, err = readJSON(body)
	default:
		ct := r.Header.Get("Content-Type")
		imagesError(w, http.StatusBadRequest, "Unsupported content type: '"+ct+"'. This API method only accepts 'multipart/form-data' or 'application/json' requests.", "", "unsupported_content_type")
		return
	}
	if err != nil {
		imagesError(w, http.StatusBadRequest, err.Error(), "", "")
		return
	}
	for k := range req.has {
		if !slices.Contains([]string{"prompt", "model", "seconds", "size", "input_reference"}, k) {
			imagesError(w, http.StatusBadRequest, "Unknown parameter: '"+k+"'.", k, "unknown_parameter")
			return
		}
	}
	j := &simJob{id: newID("video_", 20), model: "sora-2", size: "720x1280", prompt: req.fields["prompt"], seconds: 4, host: r.Host}
	if req.badCT != "" {
		imagesError(w, http.StatusBadRequest, req.badCT, "input_reference", "invalid_value")
		return
	}
	if j.prompt == "" {
		imagesError(w, http.StatusBadRequest, "Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter")
		return
	}
	if m, ok := req.fields["model"]; ok {
		if !slices.Contains(soraModels, m) {
			imagesError(w, http.StatusBadRequest, "Invalid value: '"+m+"'. Supported values are: "+quoteList(soraModels)+".", "model", "invalid_value")
			return
		}
		j.model = m
	}
	if v, ok := req.fields["seconds"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || mt == "application/json" && gjson.GetBytes(body, "seconds").Type != gjson.String {
			imagesError(w, http.StatusBadRequest, "Invalid type for 'seconds': expected one of '4', '8' or '12' as a string.", "seconds", "invalid_type")
			return
		}
		if n < 1 || n > 20 {
			imagesError(w, http.StatusBadRequest, "Invalid value: '"+v+"'. Supported values are: '4', '8', and '12'.", "seconds", "invalid_value")
			return
		}
		j.seconds = float64(n)
	}
	if v, ok := req.fields["size"]; ok {
		if !slices.Contains(soraSizes, v) {
			imagesError(w, http.StatusBadRequest, "Invalid value: '"+v+"'. Supported values are: "+quoteList(soraSizes)+".", "size", "invalid_value")
			return
		}
		j.size = v
	}
	j.k = s.jobKnobs(j.prompt)
	switch k := j.k; {
	case k.Hang:
		<-r.Context().Done()
		return
	case k.Cut:
		panic(http.ErrAbortHandler)
	case k.Error != 0:
		imagesError(w, k.Error, sim.SimulatedError(k.Error, "error"), "", "")
		return
	}
	if j.k.Seconds >= 0 {
		j.seconds = j.k.Seconds
	}
	j.started = time.Now()
	s.jobs.add(j)
	jsonReply(w, http.StatusOK, videoObject(j, j.started))
}

// videoFiles takes the videos API's one file, input_reference, an image.
func videoFiles(req *imagesRequest, name, ct string) {
	req.has[name] = true
	if name == "input_reference" {
		badType(req, name, ct)
	}
}

// videoObject is a video as the API shows it at now.
func videoObject(j *simJob, now time.Time) []byte {
	p, done := j.progress(now)
	status := "in_progress"
	switch {
	case now.Equal(j.started) || !done && p < 5:
		status, p = "queued", 0
	case done && j.k.Fail != 0:
		status = "failed"
	case done:
		status = "completed"
	}
	secs := strconv.FormatFloat(j.seconds, 'f', -1, 64)
	b := []byte(`{"id":` + strconv.Quote(j.id) + `,"object":"video","created_at":` + strconv.FormatInt(j.started.Unix(), 10) +
		`,"status":"` + status + `","model":` + strconv.Quote(j.model) + `,"progress":` + strconv.Itoa(p) +
		`,"seconds":` + strconv.Quote(secs) + `,"size":` + strconv.Quote(j.size))
	done = status == "completed" || status == "failed"
	if done {
		end := j.started.Add(j.k.Latency).Unix()
		b = append(b, `,"completed_at":`+strconv.FormatInt(end, 10)...)
		if status == "completed" {
			b = append(b, `,"expires_at":`+strconv.FormatInt(end+3600, 10)...)
		} else {
			b = append(b, `,"expires_at":null`...)
		}
	} else {
		b = append(b, `,"completed_at":null,"expires_at":null`...)
	}
	if status == "failed" {
		e, _ := json.Marshal(map[string]string{"code": soraErrorCode(j.k.Fail), "message": sim.SimulatedError(j.k.Fail, "fail")})
		b = append(b, `,"error":`...)
		b = append(b, e...)
	} else {
		b = append(b, `,"error":null`...)
	}
	p2, _ := json.Marshal(j.prompt)
	b = append(b, `,"prompt":`...)
	b = append(b, p2...)
	return append(b, `,"remixed_from_video_id":null}`...)
}

// soraErrorCode is the code a failed video carries for a fail=CODE
// marker: a refused prompt (400), a rate limit (429), else an internal
// error.
func soraErrorCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "moderation_blocked"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	}
	return "internal_error"
}
