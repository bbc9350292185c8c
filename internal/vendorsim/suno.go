package vendorsim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// A Suno-style music task API, the sunoapi.org shape (kie.ai serves the
// same): POST /api/v1/generate {customMode, instrumental, model,
// callBackUrl, prompt, style, title, ...} answers {code, msg, data:
// {taskId}}; GET /api/v1/generate/record-info?taskId= answers the task
// with its status (PENDING, TEXT_SUCCESS, FIRST_SUCCESS, SUCCESS, or
// CREATE_TASK_FAILED, GENERATE_AUDIO_FAILED, SENSITIVE_WORD_ERROR) and,
// once it succeeded, two songs in response.sunoData, whose audioUrl this
// server serves. Auth is Authorization: Bearer. Errors are answered with
// HTTP 200 and the error's code in the body (400 bad parameters, 401 no
// access, 404 no such task, 413 a prompt too long, 429 credits run out,
// 430 calls too frequent, 455 maintenance, 500), as that API does. The
// markers are read from prompt, then style and title: error=429 is its 430
// and error=503 its 455; fail=400 ends the task SENSITIVE_WORD_ERROR,
// another fail=CODE GENERATE_AUDIO_FAILED (errorCode 501); seconds=N is
// each song's duration (default 120).

var sunoModels = []string{"V3_5", "V4", "V4_5", "V4_5PLUS", "V4_5ALL", "V5"}

// sunoReply writes the API's envelope {code, msg, data} under HTTP 200.
func sunoReply(w http.ResponseWriter, code int, msg string, data string) {
	m, _ := json.Marshal(msg)
	if data == "" {
		data = "null"
	}
	jsonReply(w, http.StatusOK, []byte(`{"code":`+strconv.Itoa(code)+`,"msg":`+string(m)+`,"data":`+data+`}`))
}

// sunoCode is the API's code for a status a marker asks.
func sunoCode(status int) int {
	switch status {
	case http.StatusTooManyRequests:
		return 430
	case http.StatusServiceUnavailable:
		return 455
	}
	return status
}

func (s *Server) suno(w http.ResponseWriter, r *http.Request) {
	var create bool
	switch {
	case r.URL.Path == "/api/v1/generate" && r.Method == http.MethodPost:
		create = true
	case r.URL.Path == "/api/v1/generate/record-info" && r.Method == http.MethodGet:
	default:
		http.NotFound(w, r)
		return
	}
	body, ok := s.readMedia(w, r, func() { sunoReply(w, 413, "The request body is too large.", "") })
	if !ok {
		return
	}
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || key == "" || !s.keyOK(key) {
		sunoReply(w, 401, "You do not have access permissions", "")
		return
	}
	if !create {
		s.sunoRecord(w, r)
		return
	}
	b := gjson.ParseBytes(body)
	if !b.IsObject() {
		sunoReply(w, 400, "Invalid request body: a JSON object is required.", "")
		return
	}
	custom, instrumental := b.Get("customMode"), b.Get("instrumental")
	model, cb := b.Get("model").Str, b.Get("callBackUrl").Str
	j := &simJob{id: newID("", 16), model: model, prompt: b.Get("prompt").Str, style: b.Get("style").Str,
		title: b.Get("title").Str, seconds: 120, param: body, host: r.Host}
	limit, styleLimit, titleLimit := 3000, 200, 80
	if model != "V3_5" && model != "V4" {
		limit, styleLimit = 5000, 1000
	}
	if model == "V4_5" || model == "V4_5PLUS" || model == "V5" {
		titleLimit = 100
	}
	switch {
	case !custom.IsBool():
		sunoReply(w, 400, "customMode is required and must be a boolean.", "")
		return
	case !instrumental.IsBool():
		sunoReply(w, 400, "instrumental is required and must be a boolean.", "")
		return
	case !slices.Contains(sunoModels, model):
		sunoReply(w, 400, "model must be one of "+strings.Join(sunoModels, ", ")+".", "")
		return
	case cb == "":
		sunoReply(w, 400, "Please enter callBackUrl.", "")
		return
	case custom.Bool() && (j.style == "" || j.title == "" || !instrumental.Bool() && j.prompt == ""):
		sunoReply(w, 400, "In custom mode style and title are required, and prompt unless instrumental.", "")
		return
	case custom.Bool() && (utf8.RuneCountInString(j.prompt) > limit || utf8.RuneCountInString(j.style) > styleLimit ||
		utf8.RuneCountInString(j.title) > titleLimit):
		sunoReply(w, 413, "Theme or prompt too long", "")
		return
	case !custom.Bool() && j.prompt == "":
		sunoReply(w, 400, "Please enter prompt.", "")
		return
	case !custom.Bool() && utf8.RuneCountInString(j.prompt) > 500:
		sunoReply(w, 413, "Theme or prompt too long", "")
		return
	}
	j.k = s.jobKnobs(j.prompt, j.style, j.title)
	switch k := j.k; {
	case k.Hang:
		<-r.Context().Done()
		return
	case k.Cut:
		panic(http.ErrAbortHandler)
	case k.Error != 0:
		sunoReply(w, sunoCode(k.Error), sim.SimulatedError(k.Error, "error"), "")
		return
	}
	if j.k.Seconds >= 0 {
		j.seconds = j.k.Seconds
	}
	j.started = time.Now()
	s.jobs.add(j)
	sunoReply(w, 200, "success", `{"taskId":`+strconv.Quote(j.id)+`}`)
}

// sunoRecord is GET /api/v1/generate/record-info.
func (s *Server) sunoRecord(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("taskId")
	if id == "" {
		sunoReply(w, 400, "Please enter taskId.", "")
		return
	}
	j, ok := s.jobs.get(id)
	if !ok || strings.HasPrefix(id, "video_") {
		sunoReply(w, 404, "No record found for taskId "+id+".", "")
		return
	}
	p, done := j.progress(time.Now())
	status, errCode, errMsg := "PENDING", "null", "null"
	var songs []string
	switch {
	case done && j.k.Fail == http.StatusBadRequest:
		status, errCode = "SENSITIVE_WORD_ERROR", "400"
	case done && j.k.Fail != 0:
		status, errCode = "GENERATE_AUDIO_FAILED", "501"
	case done:
		status = "SUCCESS"
		songs = j.songs(true)
	case p >= 66:
		status = "FIRST_SUCCESS"
		songs = j.songs(false)
	case p >= 33:
		status = "TEXT_SUCCESS"
	}
	if j.k.Fail != 0 && done {
		m, _ := json.Marshal(sim.SimulatedError(j.k.Fail, "fail"))
		errMsg = string(m)
	}
	param, _ := json.Marshal(string(j.param))
	data := `{"taskId":` + strconv.Quote(j.id) + `,"parentMusicId":"","param":` + string(param) +
		`,"response":{"taskId":` + strconv.Quote(j.id) + `,"sunoData":[` + strings.Join(songs, ",") + `]}` +
		`,"status":"` + status + `","type":"chirp-v4-5","operationType":"generate","errorCode":` + errCode +
		`,"errorMessage":` + errMsg + `}`
	sunoReply(w, 200, "success", data)
}

// songs are the task's two songs: downloadable once it is done, else
// only streaming.
func (j *simJob) songs(done bool) []string {
	title := j.title
	if title == "" {
		words := strings.Fields(j.prompt)
		title = strings.Join(words[:min(len(words), 4)], " ")
	}
	out := make([]string, 2)
	for i := range out {
		id := j.id + "-" + strconv.Itoa(i+1)
		audio := ""
		if done {
			audio = "http://" + j.host + "/sim-media/suno/" + id + ".mp3"
		}
		t, _ := json.Marshal(title)
		p, _ := json.Marshal(j.prompt)
		st, _ := json.Marshal(j.style)
		out[i] = `{"id":` + strconv.Quote(id) + `,"audioUrl":` + strconv.Quote(audio) +
			`,"sourceAudioUrl":` + strconv.Quote(audio) + `,"streamAudioUrl":"http://` + j.host + `/sim-media/suno/` + id + `.stream"` +
			`,"imageUrl":"","prompt":` + string(p) + `,"modelName":"chirp-v4-5","title":` + string(t) +
			`,"tags":` + string(st) + `,"createTime":` + strconv.FormatInt(j.started.UnixMilli(), 10) +
			`,"duration":` + strconv.FormatFloat(j.seconds, 'f', -1, 64) + `}`
	}
	return out
}

// serveMediaFile serves the files a task API links to: a Suno song.
func (s *Server) serveMediaFile(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/sim-media/suno/")
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	base, ext, _ := strings.Cut(name, ".")
	task, _, _ := strings.Cut(base, "-")
	if _, ok := s.jobs.get(task); !ok || ext != "mp3" && ext != "stream" {
		http.NotFound(w, r)
		return
	}
	audio := sim.AudioMP3(2048, fnv(base))
	w.Header().Set("Content-Type", "audio/mpeg")
	w.Header().Set("Content-Length", strconv.Itoa(len(audio)))
	_, _ = w.Write(audio)
}
