package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// imageConfig serves the sim image models of every images rule, with
// per-image prices that make each cost exact to check.
const imageConfig = `
server {
  allow_private_urls = true
}
store "badger" {
  dir = "@DATA@"
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat", "image"]
  protocols = ["openai_chat"]
  models    = ["sim-chat", "sim-image", "sim-image-grid", "sim-image-area", "sim-image-nosize", "sim-image-min", "sim-image-slow"]
}
model "sim-chat" {
  owned_by = "sim"
  price {
    input  = "1"
    output = "2"
  }
}
model "sim-image" {
  owned_by = "sim"
  family   = "image"
  price {
    per_image = "0.04"
  }
}
model "sim-image-grid" {
  owned_by = "sim"
  family   = "image"
  grid     = 4
  price {
    per_image = "0.03"
  }
}
model "sim-image-area" {
  owned_by = "sim"
  family   = "image"
  price {
    per_image         = "0.05"
    per_image_hd      = "0.12"
    area_threshold_mp = "2.61"
  }
}
model "sim-image-nosize" {
  owned_by    = "sim"
  family      = "image"
  ignore_size = true
  price {
    per_image = "0.02"
  }
}
model "sim-image-min" {
  owned_by = "sim"
  family   = "image"
  settings = { min_size = "960x960" }
  price {
    per_image = "0.02"
  }
}
model "sim-image-slow" {
  owned_by        = "sim"
  family          = "image"
  keepalive_after = "300ms"
  price {
    per_image = "0.04"
  }
}
`

type imageEnv struct {
	g    *testgw.Gateway
	acct string
	key  string
}

func startImages(t *testing.T, credit string) *imageEnv {
	t.Helper()
	g := testgw.Start(t, testgw.Options{Config: imageConfig})
	acct := g.Account(credit)
	_, key := g.Key(acct, nil)
	return &imageEnv{g: g, acct: acct, key: key}
}

func (e *imageEnv) client() openai.Client {
	return openai.NewClient(option.WithBaseURL(e.g.URL+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0))
}

func (e *imageEnv) post(t *testing.T, path, body string, headers map[string]string) call {
	t.Helper()
	h := bearer(e.key)
	for k, v := range headers {
		h[k] = v
	}
	return do(t, "POST", e.g.URL+path, h, body)
}

func (e *imageEnv) get(t *testing.T, path string) call {
	t.Helper()
	return do(t, "GET", e.g.URL+path, bearer(e.key), "")
}

// spent is what the account was charged so far: the sign-up credit less
// its balance.
func (e *imageEnv) spent(t *testing.T, credit string) money.Nano {
	t.Helper()
	bal, held := e.g.Balance(e.acct)
	if held != "0" {
		t.Fatalf("held %s, want 0", held)
	}
	return money.MustParse(credit) - money.MustParse(bal)
}

// row finds the log row of a request id (or task id).
func (e *imageEnv) row(t *testing.T, ref string) map[string]any {
	t.Helper()
	c := e.get(t, "/v1/logs?period=all&ref="+ref)
	if c.Status != 200 {
		t.Fatalf("logs: %d %s", c.Status, c.Body)
	}
	var p logsPage
	if err := json.Unmarshal(c.Body, &p); err != nil || len(p.Data) != 1 {
		t.Fatalf("rows for %s: %s", ref, c.Body)
	}
	return p.Data[0]
}

func costOf(r map[string]any) money.Nano { return money.MustParse(r["cost"].(string)) }

// download fetches a hosted link and checks it is a PNG.
func download(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("download %s: %d %q %q", url, resp.StatusCode, resp.Header.Get("Content-Type"), b[:min(len(b), 16)])
	}
	return b
}

func TestImagesGenerateWithTheSDK(t *testing.T) {
	e := startImages(t, "")
	c := e.client()
	var raw *http.Response
	res, err := c.Images.Generate(t.Context(), openai.ImageGenerateParams{
		Model: "sim-image", Prompt: "a lighthouse at dusk", N: openai.Int(2), Size: "1024x1536",
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[0].URL == "" || res.Data[0].B64JSON != "" {
		t.Fatalf("data %+v", res.Data)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(res.RawJSON()), &body); err != nil {
		t.Fatal(err)
	}
	// The spec's answer: model, created, expires_at (hosted), data with
	// url and size, usage with generated_images; upstream fields pass.
	if body["model"] != "sim-image" || body["expires_at"] == nil || body["output_format"] != "png" {
		t.Fatalf("answer %s", res.RawJSON())
	}
	usage := body["usage"].(map[string]any)
	if usage["generated_images"].(float64) != 2 {
		t.Fatalf("usage %v", usage)
	}
	item := body["data"].([]any)[0].(map[string]any)
	if item["size"] != "1024x1536" {
		t.Fatalf("item %v", item)
	}
	for _, d := range res.Data {
		download(t, d.URL)
	}
	trace := raw.Header.Get("x-gateway-trace")
	if trace == "" {
		t.Fatal("no x-gateway-trace")
	}
	row := e.row(t, trace)
	if row["unit_type"] != "image" || row["unit_count"].(float64) != 2 || row["status"] != "success" {
		t.Fatalf("row %v", row)
	}
	if got, want := costOf(row), money.MustParse("0.08"); got != want {
		t.Fatalf("cost %s, want %s", got, want)
	}
	if urls := row["result_urls"].([]any); len(urls) != 2 || row["result_expires_at"] == nil {
		t.Fatalf("row results %v", row)
	}
	if got := e.spent(t, "121.32"); got != money.MustParse("0.08") {
		t.Fatalf("spent %s", got)
	}
}

func TestImagesBase64AndIdempotency(t *testing.T) {
	e := startImages(t, "")
	body := `{"model":"sim-image","prompt":"a red square","response_format":"b64_json"}`
	first := e.post(t, "/v1/images/generations", body, map[string]string{"Idempotency-Key": "b64-1"})
	if first.Status != 200 {
		t.Fatalf("%d %s", first.Status, first.Body)
	}
	var r struct {
		Data []struct {
			URL     string `json:"url"`
			B64JSON string `json:"b64_json"`
		}
		ExpiresAt *int64 `json:"expires_at"`
	}
	if err := json.Unmarshal(first.Body, &r); err != nil || len(r.Data) != 1 || r.ExpiresAt != nil {
		t.Fatalf("answer %s", first.Body)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data[0].B64JSON)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatal("b64_json is not a PNG")
	}
	// Too large to keep (spec: image call with b64_json): 409, no second charge.
	again := e.post(t, "/v1/images/generations", body, map[string]string{"Idempotency-Key": "b64-1"})
	wantErr(t, again, 409, "idempotency_response_not_cached", "invalid_request_error")
	if got := e.spent(t, "121.32"); got != money.MustParse("0.04") {
		t.Fatalf("spent %s", got)
	}
}

// The spec's idempotency table on the images endpoint.
func TestImagesIdempotencyTable(t *testing.T) {
	e := startImages(t, "")
	body := `{"model":"sim-image","prompt":"a blue circle [sim:latency=400ms]"}`
	key := map[string]string{"Idempotency-Key": "img-key-1"}

	// Simultaneous calls: exactly one executes; the others see it running.
	var wg sync.WaitGroup
	results := make([]call, 6)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := tryDo("POST", e.g.URL+"/v1/images/generations", map[string]string{
				"Authorization": "Bearer " + e.key, "Idempotency-Key": "img-key-1"}, body)
			if err != nil {
				r = call{Status: -1, Body: []byte(err.Error())}
			}
			results[i] = r
		}()
	}
	wg.Wait()
	ok, inFlight := 0, 0
	var served call
	for _, r := range results {
		switch r.Status {
		case 200:
			ok++
			served = r
		case 409:
			inFlight++
		default:
			t.Fatalf("concurrent call: %d %s", r.Status, r.Body)
		}
	}
	if ok != 1 || inFlight != 5 {
		t.Fatalf("%d served, %d in flight", ok, inFlight)
	}
	// Same key, same body: the original answer verbatim, replayed.
	replay := e.post(t, "/v1/images/generations", body, key)
	if replay.Status != 200 || replay.Header.Get("Idempotency-Replayed") != "true" || !bytes.Equal(replay.Body, served.Body) {
		t.Fatalf("replay %d %v %s", replay.Status, replay.Header, replay.Body)
	}
	// Same key, another body: 409 reuse. A malformed key: 400.
	wantErr(t, e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"other"}`, key), 409, "idempotency_key_reuse", "invalid_request_error")
	wantErr(t, e.post(t, "/v1/images/generations", body, map[string]string{"Idempotency-Key": "has space"}), 400, "invalid_idempotency_key", "invalid_request_error")
	// One charge for all of it.
	if got := e.spent(t, "121.32"); got != money.MustParse("0.04") {
		t.Fatalf("spent %s", got)
	}
	// A failed call does not consume its key.
	failKey := map[string]string{"Idempotency-Key": "img-key-fail"}
	wantStatus(t, e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"x [sim:error=503]"}`, failKey), 503)
	wantStatus(t, e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"x [sim:error=503]"}`, failKey), 503)
}

func wantStatus(t *testing.T, c call, status int) {
	t.Helper()
	if c.Status != status {
		t.Fatalf("status %d, want %d: %s", c.Status, status, c.Body)
	}
}

// Each numbered rule of the spec's images part, by name.
func TestImagesRules(t *testing.T) {
	e := startImages(t, "")
	gen := func(body string) call { return e.post(t, "/v1/images/generations", body, nil) }

	t.Run("n above 10 is 400", func(t *testing.T) {
		wantErr(t, gen(`{"model":"sim-image","prompt":"a","n":11}`), 400, "invalid_request", "invalid_request_error")
	})
	t.Run("rule 1: hold n, settle on the images returned", func(t *testing.T) {
		c := gen(`{"model":"sim-image","prompt":"two of three [sim:images=2]","n":3}`)
		wantStatus(t, c, 200)
		row := e.row(t, c.Header.Get("x-gateway-trace"))
		if costOf(row) != money.MustParse("0.08") || row["unit_count"].(float64) != 2 {
			t.Fatalf("row %v", row)
		}
	})
	t.Run("rule 2: fixed grid returns 4, holds max(n,4)", func(t *testing.T) {
		c := gen(`{"model":"sim-image-grid","prompt":"a grid","n":1}`)
		wantStatus(t, c, 200)
		var r struct{ Data []any }
		_ = json.Unmarshal(c.Body, &r)
		row := e.row(t, c.Header.Get("x-gateway-trace"))
		if len(r.Data) != 4 || costOf(row) != money.MustParse("0.12") {
			t.Fatalf("grid: %d images, cost %s", len(r.Data), costOf(row))
		}
	})
	t.Run("rule 3: grid size snaps to an aspect, prompt gets a tier flag", func(t *testing.T) {
		c := gen(`{"model":"sim-image-grid","prompt":"wide","size":"1920x1080"}`)
		wantStatus(t, c, 200)
		var r struct {
			Data []struct {
				Size          string `json:"size"`
				RevisedPrompt string `json:"revised_prompt"`
			}
		}
		_ = json.Unmarshal(c.Body, &r)
		if r.Data[0].Size != "1456x816" || !strings.Contains(r.Data[0].RevisedPrompt, "--") {
			t.Fatalf("grid answer %s", c.Body)
		}
	})
	t.Run("rule 4: minimum size refused by the upstream, passed through", func(t *testing.T) {
		c := gen(`{"model":"sim-image-min","prompt":"small","size":"512x512"}`)
		msg := wantErr(t, c, 400, "invalid_request", "invalid_request_error")
		if !strings.Contains(msg, "960x960") {
			t.Fatalf("message %q", msg)
		}
	})
	t.Run("rule 5: area pricing held high, settled downward", func(t *testing.T) {
		c := gen(`{"model":"sim-image-area","prompt":"no size given"}`)
		wantStatus(t, c, 200)
		row := e.row(t, c.Header.Get("x-gateway-trace"))
		if costOf(row) != money.MustParse("0.05") {
			t.Fatalf("area cost %s, want the lower tier 0.05", costOf(row))
		}
		big := gen(`{"model":"sim-image-area","prompt":"big","size":"2048x2048"}`)
		wantStatus(t, big, 200)
		if got := costOf(e.row(t, big.Header.Get("x-gateway-trace"))); got != money.MustParse("0.12") {
			t.Fatalf("hd cost %s", got)
		}
	})
	t.Run("rule 6: a size-ignoring model drops size", func(t *testing.T) {
		c := gen(`{"model":"sim-image-nosize","prompt":"square","size":"1792x1024"}`)
		wantStatus(t, c, 200)
		if !bytes.Contains(c.Body, []byte(`"1024x1024"`)) {
			t.Fatalf("size was not dropped: %s", c.Body)
		}
	})
	t.Run("rule 7: references are data URIs or URLs the upstream fetches", func(t *testing.T) {
		c := gen(`{"model":"sim-image","prompt":"like this","image":"data:image/png;base64,iVBORw0KGgo=","image_urls":["https://example.com/a.png"]}`)
		wantStatus(t, c, 200)
		wantErr(t, gen(`{"model":"sim-image","prompt":"bad","image":"ftp://x/y.png"}`), 400, "invalid_request", "invalid_request_error")
	})
	t.Run("unknown model 400, chat model 503, allowlist 400", func(t *testing.T) {
		wantErr(t, gen(`{"model":"nope","prompt":"a"}`), 400, "model_not_found", "invalid_request_error")
		wantErr(t, gen(`{"model":"sim-chat","prompt":"a"}`), 503, "no_channel_available", "server_error")
		_, restricted := e.g.Key(e.acct, map[string]any{"allowed_models": []string{"sim-chat"}})
		c := do(t, "POST", e.g.URL+"/v1/images/generations", bearer(restricted), `{"model":"sim-image","prompt":"a"}`)
		wantErr(t, c, 400, "model_not_allowed", "invalid_request_error")
		if c.Header.Get("x-gateway-trace") == "" {
			t.Fatal("a 4xx without x-gateway-trace")
		}
	})
	t.Run("upstream 5xx passes through with its status", func(t *testing.T) {
		c := gen(`{"model":"sim-image","prompt":"down [sim:error=500]"}`)
		wantErr(t, c, 500, "upstream_error", "api_error")
		if c.Header.Get("x-gateway-trace") == "" {
			t.Fatal("a 5xx without x-gateway-trace")
		}
		if row := e.row(t, c.Header.Get("x-gateway-trace")); row["status"] != "error" || costOf(row) != 0 {
			t.Fatalf("row %v", row)
		}
	})
}

func TestImagesEditsMultipart(t *testing.T) {
	e := startImages(t, "")
	c := e.client()
	png := download(t, mustImageURL(t, e))
	res, err := c.Images.Edit(t.Context(), openai.ImageEditParams{
		Model: "sim-image", Prompt: "make it blue", N: openai.Int(2),
		Image: openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{
			openai.File(bytes.NewReader(png), "a.png", "image/png"),
			openai.File(bytes.NewReader(png), "b.png", "image/png"),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[1].URL == "" {
		t.Fatalf("edit answer %s", res.RawJSON())
	}
	download(t, res.Data[1].URL)

	// Without a reference image: 400.
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.WriteField("model", "sim-image")
	_ = w.WriteField("prompt", "nothing to edit")
	_ = w.Close()
	resp := do(t, "POST", e.g.URL+"/v1/images/edits", map[string]string{
		"Authorization": "Bearer " + e.key, "Content-Type": w.FormDataContentType()}, b.String())
	wantErr(t, resp, 400, "invalid_request", "invalid_request_error")

	// Async as a form field; the same multipart again with a new boundary
	// is the same request for Idempotency-Key.
	form := func(boundary string) (string, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		_ = w.SetBoundary(boundary)
		_ = w.WriteField("model", "sim-image")
		_ = w.WriteField("prompt", "async edit")
		_ = w.WriteField("async", "true")
		f, _ := w.CreateFormFile("image", "a.png")
		_, _ = f.Write(png)
		_ = w.Close()
		return b.String(), w.FormDataContentType()
	}
	body1, ct1 := form("boundary-one")
	body2, ct2 := form("boundary-two")
	h := func(ct string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + e.key, "Content-Type": ct, "Idempotency-Key": "edit-1"}
	}
	sub := do(t, "POST", e.g.URL+"/v1/images/edits", h(ct1), body1)
	wantStatus(t, sub, 202)
	again := do(t, "POST", e.g.URL+"/v1/images/edits", h(ct2), body2)
	if again.Header.Get("Idempotency-Replayed") != "true" || !bytes.Equal(again.Body, sub.Body) {
		t.Fatalf("multipart replay: %d %s", again.Status, again.Body)
	}
	var task struct{ ID string }
	_ = json.Unmarshal(sub.Body, &task)
	final := e.pollDone(t, task.ID)
	if final.Status != 200 {
		t.Fatalf("edit task ended %d %s", final.Status, final.Body)
	}
	list := e.get(t, "/v1/images/generations?limit=5")
	if !bytes.Contains(list.Body, []byte(`"endpoint":"edits"`)) {
		t.Fatalf("list %s", list.Body)
	}
}

func mustImageURL(t *testing.T, e *imageEnv) string {
	t.Helper()
	c := e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"a reference"}`, nil)
	var r struct{ Data []struct{ URL string } }
	if err := json.Unmarshal(c.Body, &r); err != nil || c.Status != 200 {
		t.Fatalf("%d %s", c.Status, c.Body)
	}
	return r.Data[0].URL
}

// pollDone polls a task until it is no longer 202.
func (e *imageEnv) pollDone(t *testing.T, id string) call {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c := e.get(t, "/v1/images/generations/"+id)
		if c.Status != 202 {
			return c
		}
		var head map[string]any
		if err := json.Unmarshal(c.Body, &head); err != nil || head["id"] != id || head["model"] == nil || head["created_at"] == nil {
			t.Fatalf("poll while running: %s", c.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("task %s did not end", id)
	return call{}
}

func TestImagesAsync(t *testing.T) {
	e := startImages(t, "")
	direct := e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"a fox","n":2}`, nil)
	wantStatus(t, direct, 200)

	sub := e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"a fox [sim:latency=600ms]","n":2,"async":true}`, nil)
	wantStatus(t, sub, 202)
	var task map[string]any
	_ = json.Unmarshal(sub.Body, &task)
	id := task["id"].(string)
	if !strings.HasPrefix(id, "img_") || task["status"] != "queued" || task["model"] != "sim-image" {
		t.Fatalf("submit %s", sub.Body)
	}
	// While it runs it is in flight in the logs, with no row.
	inflight := e.get(t, "/v1/logs?period=all&include=in_flight")
	if !bytes.Contains(inflight.Body, []byte(id)) {
		t.Fatalf("in_flight %s", inflight.Body)
	}
	final := e.pollDone(t, id)
	wantStatus(t, final, 200)
	// The same answer as a synchronous call (links differ, shape does not).
	var a, b map[string]any
	_ = json.Unmarshal(final.Body, &a)
	_ = json.Unmarshal(direct.Body, &b)
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Fatalf("async answer lacks %q: %s", k, final.Body)
		}
	}
	for _, d := range a["data"].([]any) {
		download(t, d.(map[string]any)["url"].(string))
	}
	row := e.row(t, id)
	if row["task_id"] != id || costOf(row) != money.MustParse("0.08") || row["submitted_at"] == row["created_at"] {
		t.Fatalf("row %v", row)
	}

	// A failure at the job's end: the poll answers the upstream status,
	// and everything is refunded.
	fsub := e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"doomed [sim:latency=200ms] [sim:fail=502]","async":true}`, nil)
	wantStatus(t, fsub, 202)
	var ft struct{ ID string }
	_ = json.Unmarshal(fsub.Body, &ft)
	failed := e.pollDone(t, ft.ID)
	wantErr(t, failed, 502, "upstream_error", "api_error")
	if row := e.row(t, ft.ID); row["status"] != "error" || costOf(row) != 0 {
		t.Fatalf("failed row %v", row)
	}
	// A refusal at submit is a real 4xx at once, and no task is listed.
	rej := e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"blocked [sim:error=400]","async":true}`, nil)
	wantErr(t, rej, 400, "invalid_request", "invalid_request_error")
	if row := e.row(t, rej.Header.Get("x-gateway-trace")); row["status"] != "rejected" || costOf(row) != 0 {
		t.Fatalf("rejected row %v", row)
	}

	// The list: newest first, status filter, limit and cursor, date bounds.
	list := func(q string) (ids []string, next *string) {
		c := e.get(t, "/v1/images/generations?"+q)
		wantStatus(t, c, 200)
		var p struct {
			Object     string
			Data       []map[string]any
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(c.Body, &p); err != nil || p.Object != "list" {
			t.Fatalf("list %s", c.Body)
		}
		for _, d := range p.Data {
			ids = append(ids, d["id"].(string))
		}
		return ids, p.NextCursor
	}
	all, _ := list("")
	if len(all) != 2 || all[0] != ft.ID || all[1] != id {
		t.Fatalf("list %v, want [%s %s]", all, ft.ID, id)
	}
	if got, _ := list("status=failed"); len(got) != 1 || got[0] != ft.ID {
		t.Fatalf("status=failed: %v", got)
	}
	page, next := list("limit=1")
	if len(page) != 1 || next == nil {
		t.Fatalf("page %v next %v", page, next)
	}
	if rest, end := list("limit=1&cursor=" + *next); len(rest) != 1 || rest[0] != id || end != nil {
		t.Fatalf("second page %v %v", rest, end)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if got, _ := list("to=" + today); len(got) != 0 {
		t.Fatalf("to=today excludes today: %v", got)
	}
	if got, _ := list(fmt.Sprintf("from=%d", time.Now().Add(-time.Hour).Unix())); len(got) != 2 {
		t.Fatalf("from: %v", got)
	}
	wantErr(t, e.get(t, "/v1/images/generations?status=done"), 400, "invalid_request", "invalid_request_error")
	wantErr(t, e.get(t, "/v1/images/generations?limit=101"), 400, "invalid_request", "invalid_request_error")

	// Another account never sees the task.
	other := e.g.Account("")
	_, okey := e.g.Key(other, nil)
	wantErr(t, do(t, "GET", e.g.URL+"/v1/images/generations/"+id, bearer(okey), ""), 404, "not_found", "invalid_request_error")

	// Exact money: 0.08 sync + 0.08 async; the failure and refusal free.
	if got := e.spent(t, "121.32"); got != money.MustParse("0.16") {
		t.Fatalf("spent %s", got)
	}
}

// A base64 async result is delivered once.
func TestImagesAsyncBase64DeliveredOnce(t *testing.T) {
	e := startImages(t, "")
	sub := e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"once","response_format":"b64_json","async":true}`, nil)
	wantStatus(t, sub, 202)
	var task struct{ ID string }
	_ = json.Unmarshal(sub.Body, &task)
	first := e.pollDone(t, task.ID)
	if first.Status != 200 || !bytes.Contains(first.Body, []byte("b64_json")) {
		t.Fatalf("first poll %d %s", first.Status, first.Body)
	}
	gone := e.get(t, "/v1/images/generations/"+task.ID)
	if gone.Status != 410 {
		t.Fatalf("second poll %d %s", gone.Status, gone.Body)
	}
}

// A synchronous call slower than keepalive_after answers 200 with
// whitespace first (errors rule 6), then the body; a failure after that
// point is 200 with an error object as body.
func TestImagesKeepAlive(t *testing.T) {
	e := startImages(t, "")
	c := e.post(t, "/v1/images/generations", `{"model":"sim-image-slow","prompt":"slow [sim:latency=900ms]"}`, nil)
	if c.Status != 200 || !bytes.HasPrefix(c.Body, []byte(" ")) {
		t.Fatalf("kept alive: %d %q", c.Status, c.Body[:min(len(c.Body), 20)])
	}
	var ok struct{ Data []any }
	if err := json.Unmarshal(c.Body, &ok); err != nil || len(ok.Data) != 1 {
		t.Fatalf("body after whitespace: %s", c.Body)
	}
	f := e.post(t, "/v1/images/generations", `{"model":"sim-image-slow","prompt":"slow [sim:latency=900ms] [sim:fail=503]"}`, nil)
	if f.Status != 200 {
		t.Fatalf("failure after keep-alive: %d", f.Status)
	}
	var e1 struct{ Error struct{ Code, Type string } }
	if err := json.Unmarshal(f.Body, &e1); err != nil || e1.Error.Code != "upstream_error" {
		t.Fatalf("error body after keep-alive: %s", f.Body)
	}
	if got := e.spent(t, "121.32"); got != money.MustParse("0.04") {
		t.Fatalf("spent %s", got)
	}
}

// 402 at submit when the balance cannot cover the worst case, grid
// models holding max(n, 4).
func TestImagesInsufficientBalance(t *testing.T) {
	e := startImages(t, "0.1")
	wantErr(t, e.post(t, "/v1/images/generations", `{"model":"sim-image-grid","prompt":"grid","n":1}`, nil), 402, "quota_exceeded", "insufficient_quota")
	wantErr(t, e.post(t, "/v1/images/generations", `{"model":"sim-image-grid","prompt":"grid","n":1,"async":true}`, nil), 402, "quota_exceeded", "insufficient_quota")
	wantStatus(t, e.post(t, "/v1/images/generations", `{"model":"sim-image","prompt":"one","n":2}`, nil), 200)
	if got := e.spent(t, "0.1"); got != money.MustParse("0.08") {
		t.Fatalf("spent %s", got)
	}
}

// SIGKILL with async images in flight: after the restart every one is
// failed and refunded exactly once (the spec's interruption rule).
func TestImagesAsyncSurviveSIGKILL(t *testing.T) {
	g := testgw.Start(t, testgw.Options{Config: imageConfig})
	acct := g.Account("50")
	_, key := g.Key(acct, nil)
	e := &imageEnv{g: g, acct: acct, key: key}
	var ids []string
	for i := range 8 {
		c := e.post(t, "/v1/images/generations", fmt.Sprintf(`{"model":"sim-image","prompt":"long %d [sim:latency=60s]","n":2,"async":true}`, i), nil)
		wantStatus(t, c, 202)
		var task struct{ ID string }
		_ = json.Unmarshal(c.Body, &task)
		ids = append(ids, task.ID)
	}
	if _, held := g.Balance(acct); held != "0.64" {
		t.Fatalf("held %s before the kill", held)
	}
	g.Kill()
	g2 := testgw.Start(t, testgw.Options{Config: imageConfig, DataDir: g.DataDir})
	e.g = g2
	for _, id := range ids {
		c := e.pollDone(t, id)
		wantErr(t, c, 500, "internal_error", "server_error")
		row := e.row(t, id)
		if row["status"] != "interrupted" || costOf(row) != 0 || row["error_code"] != nil {
			t.Fatalf("row %v", row)
		}
	}
	bal, held := g2.Balance(acct)
	if bal != "50" || held != "0" {
		t.Fatalf("after restart: balance %s held %s", bal, held)
	}
	// A second restart changes nothing: refunded exactly once.
	g2.Stop()
	g3 := testgw.Start(t, testgw.Options{Config: imageConfig, DataDir: g.DataDir})
	if bal, held := g3.Balance(acct); bal != "50" || held != "0" {
		t.Fatalf("after a second restart: balance %s held %s", bal, held)
	}
	e.g = g3
	if rows := logsOf(t, g3, key); len(rows) != len(ids) {
		t.Fatalf("%d rows, want %d", len(rows), len(ids))
	}
}
