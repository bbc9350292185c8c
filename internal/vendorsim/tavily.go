package vendorsim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Tavily's search API: POST /search {query, max_results (0 to 20, default
// 5), search_depth, topic, include_answer, ...} with the key in
// Authorization: Bearer or (the older form) api_key in the body, answered
// {query, answer, images, results: [{title, url, content, score,
// raw_content}], response_time}. Errors are {"detail": {"error": "..."}}:
// 400 a bad request, 401 no or a wrong key, 429 too many requests, 432 and
// 433 the plan's or the pay-as-you-go limit, 500. The markers are read from
// query.

func tavilyError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"detail": map[string]string{"error": msg}})
	jsonReply(w, status, b)
}

var tavilyFields = map[string]bool{"query": true, "api_key": true, "max_results": true, "search_depth": true, "topic": true,
	"include_answer": true, "include_raw_content": true, "include_images": true, "include_image_descriptions": true,
	"include_domains": true, "exclude_domains": true, "time_range": true, "days": true, "chunks_per_source": true,
	"country": true, "start_date": true, "end_date": true, "auto_parameters": true, "include_favicon": true}

func (s *Server) tavily(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		tavilyError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	body, ok := s.readMedia(w, r, func() { tavilyError(w, http.StatusRequestEntityTooLarge, "The request body is too large.") })
	if !ok {
		return
	}
	b := gjson.ParseBytes(body)
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if key == "" {
		key = b.Get("api_key").Str
	}
	if key == "" || !s.keyOK(key) {
		tavilyError(w, http.StatusUnauthorized, "Unauthorized: missing or invalid API key.")
		return
	}
	if !b.IsObject() {
		tavilyError(w, http.StatusBadRequest, "Invalid JSON body.")
		return
	}
	var bad string
	b.ForEach(func(k, _ gjson.Result) bool {
		if !tavilyFields[k.Str] {
			bad = k.Str
		}
		return bad == ""
	})
	q := b.Get("query")
	n := int64(5)
	if mr := b.Get("max_results"); mr.Exists() {
		n = mr.Int()
		if mr.Type != gjson.Number || n < 0 || n > 20 || float64(n) != mr.Num {
			tavilyError(w, http.StatusBadRequest, "max_results must be an integer from 0 to 20.")
			return
		}
	}
	switch {
	case bad != "":
		tavilyError(w, http.StatusBadRequest, "Unknown parameter: "+bad+".")
		return
	case q.Type != gjson.String || strings.TrimSpace(q.Str) == "":
		tavilyError(w, http.StatusBadRequest, "Query is missing.")
		return
	case len(q.Str) > 400:
		tavilyError(w, http.StatusBadRequest, "Query is too long. Max query length is 400 characters.")
		return
	}
	if d := b.Get("search_depth").Str; d != "" && d != "basic" && d != "advanced" {
		tavilyError(w, http.StatusBadRequest, "Invalid search depth. Must be 'basic' or 'advanced'.")
		return
	}
	if !answerSync(w, r, s.jobKnobs(q.Str), func(status int, msg string) { tavilyError(w, status, msg) }) {
		return
	}
	topic := strings.TrimSpace(stripMarkers(q.Str))
	results := make([]string, n)
	for i := range results {
		num := strconv.Itoa(i + 1)
		t, _ := json.Marshal(topic + " — page " + num)
		c, _ := json.Marshal("Simulated Tavily content " + num + " about \"" + topic + "\".")
		results[i] = `{"url":"https://example.com/tavily/` + url.PathEscape(topic) + "/" + num + `","title":` + string(t) +
			`,"content":` + string(c) + `,"score":` + strconv.FormatFloat(0.9-float64(i)*0.03, 'f', 2, 64) + `,"raw_content":null}`
	}
	qj, _ := json.Marshal(q.Str)
	jsonReply(w, http.StatusOK, []byte(`{"query":`+string(qj)+`,"follow_up_questions":null,"answer":null,"images":[],"results":[`+
		strings.Join(results, ",")+`],"response_time":0.42,"request_id":"`+newID("", 16)+`"}`))
}

// stripMarkers drops the sim's markers from a text.
func stripMarkers(s string) string {
	for {
		i := strings.Index(s, "[sim:")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], ']')
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+1:]
	}
}
