package sim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/family/avatar"
	"github.com/tollgate-gw/tollgate/plugins/family/clip"
	"github.com/tollgate-gw/tollgate/plugins/family/images"
	"github.com/tollgate-gw/tollgate/plugins/family/lipsync"
	"github.com/tollgate-gw/tollgate/plugins/family/motion"
	"github.com/tollgate-gw/tollgate/plugins/family/music"
	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/search"
	"github.com/tollgate-gw/tollgate/plugins/family/speech"
	"github.com/tollgate-gw/tollgate/plugins/family/subtitle"
	"github.com/tollgate-gw/tollgate/plugins/family/transcript"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/family/voice"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The sim serves every endpoint family through vendor.Jobs: each family
// in a file of its own (imagejobs.go, video.go, music.go, speech.go,
// voices.go, transcripts.go, search.go), all of them under the job
// markers of one parser (jobknobs.go). Video and music run as upstream
// jobs (Submit, then Poll), as their real APIs do; the other families
// answer at once (Run), speech with async: true included, so that a
// task with no upstream reference is exercised too. A job's reference
// carries what Poll needs (the request comes with every Poll), so a
// plugin restart loses nothing.

// simFamily is one family as the sim serves it.
type simFamily interface {
	// plan is the family's rules: the hold, or a refusal.
	plan(req *vendor.JobRequest) *vendor.JobPlan
	// upstreamJob reports whether the family runs as Submit and Poll.
	upstreamJob() bool
	// finish is the job's answer once its latency passed (a failure
	// marker aside).
	finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome
}

// upstreamJobs marks a family the sim runs as upstream jobs.
type upstreamJobs struct{}

func (upstreamJobs) upstreamJob() bool { return true }

// checkedJobs is an upstream-job family whose rules check the links a
// client hands over, under the private-address policy's switch open.
type checkedJobs struct {
	upstreamJobs
	open  *atomic.Bool
	rules func(req *vendor.JobRequest, allowPrivate bool) *vendor.JobPlan
}

func (f checkedJobs) plan(req *vendor.JobRequest) *vendor.JobPlan { return f.rules(req, f.open.Load()) }

// checked is the checkedJobs of a rules package's Plan.
func checked[R any](open *atomic.Bool, plan func(*vendor.JobRequest, bool) (R, *vendor.JobPlan)) checkedJobs {
	return checkedJobs{open: open, rules: func(req *vendor.JobRequest, allowPrivate bool) *vendor.JobPlan {
		_, p := plan(req, allowPrivate)
		return p
	}}
}

// newFamilies are the families the sim serves besides images; open is
// the private-address policy's switch (Config.AllowPrivateURLs) for the
// families that check the links a client hands over.
func newFamilies(open *atomic.Bool) map[string]simFamily {
	return map[string]simFamily{
		video.Family: simVideo{}, music.Family: simMusic{}, speech.Family: simSpeech{},
		voice.Family: simVoice{}, transcript.Family: simTranscript{checked(open, transcript.Plan)}, search.Family: simSearch{},
		avatar.Family: simAvatar{checkedJobs{open: open, rules: avatar.Plan}}, lipsync.Family: simLipsync{checked(open, lipsync.Plan)},
		motion.Family: simMotion{checked(open, motion.Plan)}, clip.Family: simClip{checked(open, clip.Plan)},
		subtitle.Family: simSubtitle{checked(open, subtitle.Plan)},
	}
}

// Specs are the specs of every family the sim serves.
func Specs() []vendor.FamilySpec {
	return []vendor.FamilySpec{images.Spec(), video.Spec(), music.Spec(), speech.Spec(), voice.Spec(), transcript.Spec(), search.Spec(),
		avatar.Spec(), lipsync.Spec(), motion.Spec(), clip.Spec(), subtitle.Spec()}
}

func (v *Vendor) channelOK(name string) error {
	v.mu.RLock()
	_, ok := v.channels[name]
	v.mu.RUnlock()
	if !ok {
		return &vendor.Failure{Kind: vendor.FailureConfig, Message: "sim: channel " + name + " is not configured"}
	}
	return nil
}

func (v *Vendor) knobsOf(req *vendor.JobRequest) JobKnobs {
	v.mu.RLock()
	ch := v.channels[req.Channel]
	v.mu.RUnlock()
	k := jobKnobs(ch.knobs)
	ScanJobMarkers(&k, unsafeString(req.Body))
	for _, f := range req.Files {
		ScanJobMarkers(&k, f.Filename)
	}
	return k
}

// Validate checks a request by its family's rules and says how the sim
// runs it.
func (v *Vendor) Validate(_ context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	if req.Family == images.Family || req.Family == "" {
		return v.validateImage(req)
	}
	f := v.families[req.Family]
	if f == nil {
		return nil, vendor.ErrNoJobs
	}
	plan := f.plan(req)
	if plan.Error == nil {
		plan.UpstreamJob = f.upstreamJob()
	}
	return plan, nil
}

// open reads a request of a family other than images: the channel, the
// rules' checks and the knobs. A refusal is an outcome.
func (v *Vendor) open(req *vendor.JobRequest) (simFamily, JobKnobs, *vendor.JobOutcome, error) {
	f := v.families[req.Family]
	if f == nil {
		return nil, JobKnobs{}, nil, vendor.ErrNoJobs
	}
	if err := v.channelOK(req.Channel); err != nil {
		return nil, JobKnobs{}, nil, err
	}
	if plan := f.plan(req); plan.Error != nil {
		return nil, JobKnobs{}, rules.Refused(plan.Error), nil
	}
	return f, v.knobsOf(req), nil, nil
}

// Run answers a request synchronously: after the job's latency, its
// answer or its failure.
func (v *Vendor) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.Family == images.Family || req.Family == "" {
		return v.runImage(ctx, req)
	}
	f, k, out, err := v.open(req)
	if out != nil || err != nil {
		return out, err
	}
	if out, err := started(ctx, req.Timeout, k, true); out != nil || err != nil {
		return out, err
	}
	if k.Fail != 0 {
		return imageError(k.Fail, SimulatedError(k.Fail, "fail")), nil
	}
	return f.finish(req, k), nil
}

// jobRef is a job of a family other than images as its reference holds
// it: the family, when it started and how long it runs.
type jobRef struct {
	Family  string `json:"f"`
	Start   int64  `json:"t"` // Unix ms
	Latency int64  `json:"l"` // ms
}

const jobRefPrefix = "simjob1_"

func (j jobRef) String() string {
	b, _ := json.Marshal(j) // plain fields always marshal
	return jobRefPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func parseJobRef(s string) (jobRef, bool) {
	var j jobRef
	rest, ok := strings.CutPrefix(s, jobRefPrefix)
	if !ok {
		return j, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || json.Unmarshal(b, &j) != nil || j.Start <= 0 || j.Latency < 0 {
		return j, false
	}
	return j, true
}

// Submit starts a job: refused at once by an error marker, else running.
func (v *Vendor) Submit(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if req.Family == images.Family || req.Family == "" {
		return v.submitImage(ctx, req)
	}
	f, k, out, err := v.open(req)
	if out != nil || err != nil {
		return out, err
	}
	if !f.upstreamJob() {
		return nil, &vendor.Failure{Kind: vendor.FailureConfig, Message: "sim: " + req.Family + " runs synchronously; there is no upstream job"}
	}
	if out, err := started(ctx, req.Timeout, k, false); out != nil || err != nil {
		return out, err
	}
	ref := jobRef{Family: req.Family, Start: v.now().UnixMilli(), Latency: k.Latency.Milliseconds()}
	return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: ref.String(), PollAfter: pollAfter(k.Latency)}, nil
}

// Poll reports a job: running until its latency has passed, then its
// answer (the request's markers decide it, as at its submit).
func (v *Vendor) Poll(_ context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if err := v.channelOK(req.Channel); err != nil {
		return nil, err
	}
	if strings.HasPrefix(req.UpstreamRef, refPrefix) {
		return v.pollImage(req)
	}
	j, ok := parseJobRef(req.UpstreamRef)
	f := v.families[j.Family]
	if !ok || f == nil || j.Family != req.Family {
		return imageError(http.StatusNotFound, "No job found with that id."), nil
	}
	end := time.UnixMilli(j.Start).Add(time.Duration(j.Latency) * time.Millisecond)
	if left := end.Sub(v.now()); left > 0 {
		return &vendor.JobOutcome{State: vendor.JobRunning, UpstreamRef: req.UpstreamRef, PollAfter: pollAfter(left)}, nil
	}
	if plan := f.plan(req); plan.Error != nil {
		return rules.Refused(plan.Error), nil
	}
	k := v.knobsOf(req)
	if k.Fail != 0 {
		return imageError(k.Fail, SimulatedError(k.Fail, "fail")), nil
	}
	return f.finish(req, k), nil
}

// Cancel has nothing to stop: a sim job is only its reference.
func (v *Vendor) Cancel(context.Context, *vendor.JobRequest) error { return nil }

// Read answers the families' free reads: the voice and avatar presets,
// and the clip templates (the model's template file, or the built-in set).
func (v *Vendor) Read(_ context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	if err := v.channelOK(req.Channel); err != nil {
		return nil, err
	}
	switch {
	case req.Family == voice.Family && req.Operation == voice.OpPresets:
		return voice.Presets(VoicePresets), nil
	case req.Family == avatar.Family && req.Operation == avatar.OpPresets:
		return avatar.Presets(AvatarPresets), nil
	case req.Family == clip.Family:
		return clip.Read(req), nil
	}
	return &vendor.JobOutcome{State: vendor.JobFailed, Status: http.StatusNotFound,
		Error: &vendor.JobError{Status: http.StatusNotFound, Message: "sim: no read " + req.Operation + " of the " + req.Family + " family"}}, nil
}

var (
	_ vendor.Jobs      = (*Vendor)(nil)
	_ vendor.JobReader = (*Vendor)(nil)
)
