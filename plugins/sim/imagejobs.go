package sim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/family/images"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The sim serves the image family through vendor.Jobs. A synchronous
// request is one Run; an async one is an upstream job (Submit, then Poll)
// so that the job markers act as a real job's would. The job's reference
// carries everything Poll needs, so a plugin restart loses nothing.

// SettingMinSize is a sim model setting: the smallest size the model
// accepts ("960x960"); a smaller one is refused with 400 (rule 4).
const SettingMinSize = "min_size"

// Sizes the sim draws: each side within these bounds, else refused.
const (
	minSide = 64
	maxSide = 4096
)

// defaultFrame is the size of an image whose size was omitted or is not
// WxH, and of a fixed-grid model's default frame.
const defaultFrame = 1024

// gridFrames are the sizes a fixed-grid model draws for each aspect.
var gridFrames = map[string][2]int{
	"1:1": {1024, 1024}, "16:9": {1456, 816}, "9:16": {816, 1456}, "4:3": {1232, 928}, "3:4": {928, 1232},
}

// ImageFrame is the size the sim draws for a requested size (or a
// fixed-grid model's aspect), or the reason it refuses the size, as the
// upstream it stands in for would: not WxH nor auto, a side outside
// 64..4096, or below the model's min_size.
func ImageFrame(size, aspect, minSize string) (w, h int, refusal string) {
	w, h = images.ParseSize(size)
	switch {
	case aspect != "":
		f := gridFrames[aspect]
		w, h = f[0], f[1]
	case w == 0 && size != "" && size != "auto":
		return 0, 0, "Invalid value: '" + size + "'. Supported values are: 'auto' and 'WIDTHxHEIGHT' with each side from 64 to 4096 pixels, such as '1024x1024'."
	case w == 0:
		w, h = defaultFrame, defaultFrame
	case w < minSide || h < minSide || w > maxSide || h > maxSide:
		return 0, 0, "Invalid size '" + size + "'. Each side must be between 64 and 4096 pixels."
	}
	if mw, mh := images.ParseSize(minSize); mw > 0 {
		if size == "" && aspect == "" {
			w, h = max(w, mw), max(h, mh)
		}
		if w < mw || h < mh {
			return 0, 0, "Invalid size '" + size + "'. This model requires a size of at least " + minSize + "."
		}
	}
	return w, h, ""
}

// imageJob is one image request as the sim runs it; it is also what a
// job's reference encodes.
type imageJob struct {
	Start   int64           `json:"t"`           // Unix ms of the submit
	Latency int64           `json:"l,omitempty"` // ms
	Fail    int             `json:"f,omitempty"`
	Count   int             `json:"c"` // images returned
	W       int             `json:"w"` // their size
	H       int             `json:"h"`
	Op      string          `json:"o"`
	N       int             `json:"n"`
	Size    string          `json:"s,omitempty"`
	Format  string          `json:"r,omitempty"`
	Model   vendor.JobModel `json:"m"`
	Seed    uint64          `json:"x"`
	Prompt  string          `json:"p,omitempty"` // revised_prompt, cut short
}

const refPrefix = "simimg1_"

// open reads a request: the channel, the rules' checks, the knobs and
// what the upstream is asked after shaping. A refusal is an outcome.
func (v *Vendor) openImage(req *vendor.JobRequest) (*imageJob, JobKnobs, *vendor.JobOutcome, error) {
	v.mu.RLock()
	ch, ok := v.channels[req.Channel]
	v.mu.RUnlock()
	if !ok {
		return nil, JobKnobs{}, nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "sim: channel " + req.Channel + " is not configured"}
	}
	r, m, plan := images.Plan(req)
	if plan.Error != nil {
		return nil, JobKnobs{}, images.Refused(plan.Error), nil
	}
	k := jobKnobs(ch.knobs)
	texts := []string{r.Prompt}
	for _, ref := range r.References {
		if !ref.IsData() {
			texts = append(texts, ref.URL)
		}
	}
	ScanJobMarkers(&k, texts...)
	sh := m.Shape(r)
	w, h, refusal := ImageFrame(sh.Size, sh.Aspect, req.Model.Settings[SettingMinSize])
	if refusal == "" && m.Grid == 0 {
		refusal = imageValue(r, "quality", "auto", "low", "medium", "high", "standard", "hd")
	}
	if refusal == "" {
		refusal = imageValue(r, "output_format", "png", "jpeg", "webp")
	}
	if refusal != "" && k.Error == 0 {
		return nil, k, imageError(http.StatusBadRequest, refusal), nil
	}
	count := sh.N
	if m.Grid > 0 {
		count = m.Grid // a fixed-grid model ignores n
	}
	if k.Images >= 0 {
		count = k.Images
	}
	seed := fnv64(fnv64(fnv64(fnvOffset, req.Model.Upstream), req.Operation), unsafeString(req.Body))
	for _, f := range req.Files {
		seed = fnv64(seed, f.Filename)
	}
	prompt := strings.TrimSpace(stripMarkers(sh.Prompt))
	if len(prompt) > 200 {
		prompt = strings.ToValidUTF8(prompt[:200], "")
	}
	return &imageJob{
		Latency: k.Latency.Milliseconds(), Fail: k.Fail, Count: count, W: w, H: h,
		Op: r.Operation, N: r.N, Size: r.Size, Format: r.ResponseFormat, Model: req.Model, Seed: seed, Prompt: prompt,
	}, k, nil, nil
}

// imageValue refuses a field the request sent with a value outside
// allowed, as the upstream answers it; "" when it is absent or allowed.
// (A fixed-grid model takes its quality as a tier flag: the upstream never
// sees it.)
func imageValue(r *images.Request, field string, allowed ...string) string {
	for _, f := range r.Extra {
		if f.Name != field {
			continue
		}
		v := gjson.Parse(f.Raw)
		if v.Type == gjson.Null || v.Type == gjson.String && slices.Contains(allowed, v.Str) {
			return ""
		}
		return "Invalid value for '" + field + "': " + f.Raw + ". Supported values are: '" + strings.Join(allowed, "', '") + "'."
	}
	return ""
}

// imageError is an upstream refusal as the sim answers it: OpenAI's error
// body, reduced to its status and message.
func imageError(status int, msg string) *vendor.JobOutcome {
	return images.Failed(status, ErrorBody("openai_chat", status, openaiErrorCode(status), msg))
}

// started runs what every call does before its job (a hang, a cut, a
// refusal) and, with wait, the job's latency: a non-nil outcome or error
// is the call's answer.
func started(ctx context.Context, timeout time.Duration, k JobKnobs, wait bool) (*vendor.JobOutcome, error) {
	clk := newClock(ctx, timeout, 0)
	defer clk.stop()
	if out, err := startImage(clk, k); out != nil || err != nil {
		return out, err
	}
	if wait {
		return nil, clk.wait(k.Latency, false)
	}
	return nil, nil
}

// startImage runs what every call does before the job: a hang, a cut, a
// refusal.
func startImage(clk *clock, k JobKnobs) (*vendor.JobOutcome, error) {
	if k.Hang {
		return nil, clk.wait(0, true)
	}
	if k.Cut {
		return nil, &vendor.Failure{Kind: vendor.FailureBroken, Message: "sim: [sim:cut] broke the answer before it was complete"}
	}
	if k.Error != 0 {
		return imageError(k.Error, SimulatedError(k.Error, "error")), nil
	}
	return nil, nil
}

// finish is the job's end at the time done: its failure, or its images
// rendered, made then.
func (j *imageJob) finish(done time.Time) *vendor.JobOutcome {
	if j.Fail != 0 {
		return imageError(j.Fail, SimulatedError(j.Fail, "fail"))
	}
	m, err := images.ModelOf(j.Model)
	if err != nil {
		return imageError(http.StatusInternalServerError, err.Error())
	}
	r := &images.Request{Operation: j.Op, N: j.N, Size: j.Size, ResponseFormat: j.Format}
	r.Width, r.Height = images.ParseSize(j.Size)
	size := itoa(j.W) + "x" + itoa(j.H)
	res := images.Result{Created: done.Unix(),
		Fields: []images.Field{{Name: "output_format", Raw: `"png"`}}}
	var rp []byte
	if j.Prompt != "" {
		rp = appendStr(nil, j.Prompt)
	}
	for i := range j.Count {
		im := images.Image{Data: ImagePNG(j.W, j.H, j.Seed+uint64(i)), ContentType: "image/png", Size: size}
		if rp != nil {
			im.Fields = []images.Field{{Name: "revised_prompt", Raw: string(rp)}}
		}
		res.Images = append(res.Images, im)
	}
	in := int64(len(j.Prompt)+3) / 4
	out := int64(j.Count) * 256
	res.Usage = `{"input_tokens":` + itoa(int(in)) + `,"output_tokens":` + itoa(int(out)) + `,"total_tokens":` + itoa(int(in+out)) + `}`
	return images.Render(m, r, res)
}

func (j *imageJob) ref() string {
	b, _ := json.Marshal(j) // plain fields always marshal
	return refPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func jobOfRef(ref string) (*imageJob, bool) {
	s, ok := strings.CutPrefix(ref, refPrefix)
	if !ok {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	var j imageJob
	if json.Unmarshal(b, &j) != nil || j.Start <= 0 || j.W <= 0 || j.H <= 0 || j.Count < 0 || j.Count > MaxSimImages {
		return nil, false
	}
	return &j, true
}

// pollAfter is when to ask again about a job with remaining time left.
func pollAfter(remaining time.Duration) time.Duration {
	return min(max(remaining, 10*time.Millisecond), 5*time.Second)
}

// validateImage checks an image request by the family's rules; an async
// one runs as an upstream job.
func (v *Vendor) validateImage(req *vendor.JobRequest) (*vendor.JobPlan, error) {
	r, _, plan := images.Plan(req)
	if plan.Error == nil {
		plan.UpstreamJob = req.Async || r.Async
	}
	return plan, nil
}

// runImage answers a request synchronously: after the job's latency, its
// images or its failure.
func (v *Vendor) runImage(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	j, k, out, err := v.openImage(req)
	if out != nil || err != nil {
		return out, err
	}
	if out, err := started(ctx, req.Timeout, k, true); out != nil || err != nil {
		return out, err
	}
	return j.finish(v.now()), nil
}

// submitImage starts a job: refused at once by an error marker, else
// running, with a reference that holds the whole job.
func (v *Vendor) submitImage(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	j, k, out, err := v.openImage(req)
	if out != nil || err != nil {
		return out, err
	}
	if out, err := started(ctx, req.Timeout, k, false); out != nil || err != nil {
		return out, err
	}
	j.Start = v.now().UnixMilli()
	return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: j.ref(), PollAfter: pollAfter(k.Latency)}, nil
}

// pollImage reports a job: running until its latency has passed, then
// its answer.
func (v *Vendor) pollImage(req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	j, ok := jobOfRef(req.UpstreamRef)
	if !ok {
		return imageError(http.StatusNotFound, "No image job found with that id."), nil
	}
	end := time.UnixMilli(j.Start).Add(time.Duration(j.Latency) * time.Millisecond)
	if left := end.Sub(v.now()); left > 0 {
		return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: req.UpstreamRef, PollAfter: pollAfter(left)}, nil
	}
	return j.finish(end), nil
}
