package vendorsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// OpenAI's images API, as the openai plugin meets it: POST
// /v1/images/generations (JSON) and POST /v1/images/edits
// (multipart/form-data with image or image[] files and a mask), the
// models' differences (GPT image models answer base64 only, refuse
// response_format, and take 1024x1024, 1536x1024, 1024x1536 or auto;
// DALL·E 2 and 3 answer url by default, with their own sizes), OpenAI's
// error bodies with param and code, and the sim's job markers in the
// prompt. A url answer links to GET /sim-files/{W}x{H}/{seed}.png here.

// maxImagesBody bounds an images request (an edit's uploads).
const maxImagesBody = 100 << 20

// imageModel is what the simulator knows of an image model.
type imageModel struct {
	gpt     bool     // a GPT image model
	sizes   []string // accepted sizes
	edits   bool     // takes edits
	oneN    bool     // n must be 1 (dall-e-3)
	revised bool     // items carry revised_prompt (dall-e-3)
}

func imageModelOf(id string) (imageModel, bool) {
	switch {
	case strings.HasPrefix(id, "gpt-image") || strings.HasPrefix(id, "chatgpt-image"):
		return imageModel{gpt: true, sizes: []string{"1024x1024", "1024x1536", "1536x1024", "auto"}, edits: true}, true
	case id == "dall-e-3":
		return imageModel{sizes: []string{"1024x1024", "1792x1024", "1024x1792"}, oneN: true, revised: true}, true
	case id == "dall-e-2":
		return imageModel{sizes: []string{"256x256", "512x512", "1024x1024"}, edits: true}, true
	}
	return imageModel{}, false
}

// imagesError writes OpenAI's error body with its param and code.
func imagesError(w http.ResponseWriter, status int, msg, param, code string) {
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	e.Error.Message, e.Error.Type = msg, "invalid_request_error"
	if status >= 500 {
		e.Error.Type = "server_error"
	}
	if param != "" {
		e.Error.Param = &param
	}
	if code != "" {
		e.Error.Code = &code
	}
	b, _ := json.Marshal(e) // plain fields always marshal
	for k, v := range sim.ErrorHeaders(status) {
		w.Header()[http.CanonicalHeaderKey(k)] = []string{v}
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// imagesRequest is an images call's parameters, from JSON or a form.
type imagesRequest struct {
	fields map[string]string // form values, or JSON members as text
	has    map[string]bool
	images int // uploaded image files
	badCT  string
}

func (s *Server) serveImages(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/sim-files/") {
		serveSimFile(w, r)
		return
	}
	edits := r.URL.Path == "/v1/images/edits"
	if !edits && r.URL.Path != "/v1/images/generations" {
		writeError(w, protocol.OpenAIChat, http.StatusNotFound, "", "Invalid URL ("+r.Method+" "+r.URL.Path+")")
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, protocol.OpenAIChat, http.StatusMethodNotAllowed, "", "Method "+r.Method+" is not allowed on "+r.URL.Path+".")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxImagesBody+1))
	if err != nil {
		return // the client went away mid-body
	}
	if s.opts.Record != nil {
		s.opts.Record(Request{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: bytes.Clone(body)})
	}
	if !s.authorized(w, r, protocol.OpenAIChat) {
		return
	}
	if len(body) > maxImagesBody {
		imagesError(w, http.StatusRequestEntityTooLarge, "The request body is too large.", "", "")
		return
	}
	ct := r.Header.Get("Content-Type")
	mt, params, _ := mime.ParseMediaType(ct)
	want := "application/json"
	if edits {
		want = "multipart/form-data"
	}
	if mt != want {
		imagesError(w, http.StatusBadRequest, "Unsupported content type: '"+ct+"'. This API method only accepts '"+want+
			"' requests, but you specified the header 'Content-Type: "+ct+"'. Please try again with a supported content type.",
			"", "unsupported_content_type")
		return
	}
	var req imagesRequest
	if edits {
		req, err = readForm(body, params["boundary"], imageFiles)
	} else {
		req, err = readJSON(body)
	}
	if err != nil {
		imagesError(w, http.StatusBadRequest, err.Error(), "", "")
		return
	}
	s.images(w, r, edits, &req)
}

func readJSON(body []byte) (imagesRequest, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return imagesRequest{}, errors.New("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.")
	}
	req := imagesRequest{fields: map[string]string{}, has: map[string]bool{}}
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		req.has[k.Str] = true
		if v.Type == gjson.String {
			req.fields[k.Str] = v.Str
		} else {
			req.fields[k.Str] = v.Raw
		}
		return true
	})
	return req, nil
}

// readForm reads a multipart form: its text fields, and its files, each
// of which file sees (its field and content type) and counts or refuses.
func readForm(body []byte, boundary string, file func(req *imagesRequest, name, ct string)) (imagesRequest, error) {
	req := imagesRequest{fields: map[string]string{}, has: map[string]bool{}}
	if boundary == "" {
		return req, errors.New("Could not parse multipart form: no boundary.")
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return req, nil
		}
		if err != nil {
			return req, errors.New("Could not parse multipart form.")
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return req, errors.New("Could not parse multipart form.")
		}
		name := p.FormName()
		if p.FileName() == "" {
			req.has[name], req.fields[name] = true, string(data)
			continue
		}
		file(&req, name, p.Header.Get("Content-Type"))
	}
}

// imageFiles counts an edit's images (image, image[]) and its mask, and
// refuses other types than PNG, JPEG and WebP; other files are ignored.
func imageFiles(req *imagesRequest, name, ct string) {
	switch name {
	case "image", "image[]":
		req.images++
		req.has["image"] = true
	case "mask":
		req.has["mask"] = true
	default:
		return
	}
	badType(req, name, ct)
}

// badType notes the first file that is no PNG, JPEG or WebP image.
func badType(req *imagesRequest, name, ct string) {
	if ct != "image/png" && ct != "image/jpeg" && ct != "image/webp" && req.badCT == "" {
		req.badCT = "Invalid file '" + name + "': unsupported mimetype ('" + ct +
			"'). Supported file formats are 'image/jpeg', 'image/png', and 'image/webp'."
	}
}

// images answers a parsed call.
func (s *Server) images(w http.ResponseWriter, r *http.Request, edits bool, req *imagesRequest) {
	model := req.fields["model"]
	if model == "" {
		model = "dall-e-2" // OpenAI's default for both calls
	}
	im, ok := imageModelOf(model)
	if !ok || edits && !im.edits {
		imagesError(w, http.StatusBadRequest, "Invalid value: '"+model+"'. Value must be one of the image models of this endpoint.", "model", "invalid_value")
		return
	}
	prompt := req.fields["prompt"]
	if prompt == "" {
		imagesError(w, http.StatusBadRequest, "Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter")
		return
	}
	if edits && req.images == 0 {
		imagesError(w, http.StatusBadRequest, "Missing required parameter: 'image'.", "image", "missing_required_parameter")
		return
	}
	if req.badCT != "" {
		imagesError(w, http.StatusBadRequest, req.badCT, "image", "invalid_value")
		return
	}
	if edits && !im.gpt && req.images > 1 {
		imagesError(w, http.StatusBadRequest, "Invalid 'image': "+model+" takes one image.", "image", "invalid_value")
		return
	}
	n := 1
	if v, ok := req.fields["n"]; ok {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			imagesError(w, http.StatusBadRequest, "Invalid type for 'n': expected an integer, but got a string instead.", "n", "invalid_type")
			return
		}
		switch {
		case n < 1:
			imagesError(w, http.StatusBadRequest, "Invalid 'n': integer below minimum value. Expected a value >= 1, but got "+v+" instead.", "n", "integer_below_min_value")
			return
		case n > 10:
			imagesError(w, http.StatusBadRequest, "Invalid 'n': integer above maximum value. Expected a value <= 10, but got "+v+" instead.", "n", "integer_above_max_value")
			return
		case n > 1 && im.oneN:
			imagesError(w, http.StatusBadRequest, "You must provide n=1 for this model.", "n", "")
			return
		}
	}
	format := "url"
	if req.has["response_format"] {
		if im.gpt {
			imagesError(w, http.StatusBadRequest, "Unknown parameter: 'response_format'.", "response_format", "unknown_parameter")
			return
		}
		format = req.fields["response_format"]
		if format != "url" && format != "b64_json" {
			imagesError(w, http.StatusBadRequest, "Invalid value: '"+format+"'. Supported values are: 'url' and 'b64_json'.", "response_format", "invalid_value")
			return
		}
	}
	if im.gpt {
		format = "b64_json"
	}
	size := req.fields["size"]
	if size == "" {
		size = "1024x1024"
	}
	if !slices.Contains(im.sizes, size) {
		imagesError(w, http.StatusBadRequest, "Invalid value: '"+size+"'. Supported values are: "+quoteList(im.sizes)+".", "size", "invalid_value")
		return
	}
	if size == "auto" {
		size = "1024x1024"
	}

	k := sim.JobKnobs{Latency: s.opts.Knobs.Latency, Error: s.opts.Knobs.ErrorStatus, Images: -1, Hang: s.opts.Knobs.Hang, Cut: s.opts.Knobs.Cutting}
	sim.ScanJobMarkers(&k, prompt)
	if k.Hang {
		<-r.Context().Done()
		return
	}
	if k.Cut {
		panic(http.ErrAbortHandler)
	}
	if k.Error != 0 {
		imagesError(w, k.Error, sim.SimulatedError(k.Error, "error"), "", "")
		return
	}
	if k.Latency > 0 {
		t := time.NewTimer(k.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if k.Fail != 0 {
		imagesError(w, k.Fail, sim.SimulatedError(k.Fail, "fail"), "", "")
		return
	}
	if k.Images >= 0 {
		n = k.Images
	}
	s.imagesAnswer(w, r, model, im, prompt, size, format, n, req.fields["quality"])
}

func (s *Server) imagesAnswer(w http.ResponseWriter, r *http.Request, model string, im imageModel, prompt, size, format string, n int, quality string) {
	wd, ht := sizeOf(size)
	seed := fnv(model + "\x00" + prompt + "\x00" + size)
	var b bytes.Buffer
	b.WriteString(`{"created":`)
	b.WriteString(strconv.FormatInt(time.Now().Unix(), 10))
	if im.gpt {
		b.WriteString(`,"background":"opaque"`)
	}
	b.WriteString(`,"data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if format == "b64_json" {
			b.WriteString(`{"b64_json":"`)
			b.WriteString(base64.StdEncoding.EncodeToString(sim.ImagePNG(wd, ht, seed+uint64(i))))
			b.WriteByte('"')
		} else {
			b.WriteString(`{"url":"http://`)
			b.WriteString(r.Host)
			b.WriteString("/sim-files/" + size + "/" + strconv.FormatUint(seed+uint64(i), 10) + `.png"`)
		}
		if im.revised {
			p, _ := json.Marshal("A detailed rendering of: " + prompt)
			b.WriteString(`,"revised_prompt":`)
			b.Write(p)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	if im.gpt {
		if quality == "" || quality == "auto" {
			quality = "medium"
		}
		q, _ := json.Marshal(quality)
		text := int64(len(prompt)+3) / 4
		out := int64(n) * outputTokens(quality)
		b.WriteString(`,"output_format":"png","quality":`)
		b.Write(q)
		b.WriteString(`,"size":"` + size + `","usage":{"input_tokens":` + strconv.FormatInt(text, 10) +
			`,"input_tokens_details":{"image_tokens":0,"text_tokens":` + strconv.FormatInt(text, 10) +
			`},"output_tokens":` + strconv.FormatInt(out, 10) + `,"total_tokens":` + strconv.FormatInt(text+out, 10) + `}`)
	}
	b.WriteByte('}')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write(b.Bytes())
}

// outputTokens are a 1024x1024 GPT image's output tokens at a quality.
func outputTokens(quality string) int64 {
	switch quality {
	case "low":
		return 272
	case "high":
		return 4160
	}
	return 1056
}

// serveSimFile serves the picture a url answer links to.
func serveSimFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/sim-files/")
	size, file, ok := strings.Cut(rest, "/")
	wd, ht := sizeOf(size)
	seed, err := strconv.ParseUint(strings.TrimSuffix(file, ".png"), 10, 64)
	if !ok || wd <= 0 || wd > 4096 || ht <= 0 || ht > 4096 || err != nil || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(sim.ImagePNG(wd, ht, seed))
}

func sizeOf(size string) (int, int) {
	ws, hs, _ := strings.Cut(size, "x")
	w, _ := strconv.Atoi(ws)
	h, _ := strconv.Atoi(hs)
	return w, h
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + s + "'"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + ", and " + q[len(q)-1]
}

func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
