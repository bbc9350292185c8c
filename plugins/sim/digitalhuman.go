package sim

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/family/avatar"
	"github.com/tollgate-gw/tollgate/plugins/family/lipsync"
	"github.com/tollgate-gw/tollgate/plugins/family/motion"
	"github.com/tollgate-gw/tollgate/plugins/family/rules"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The digital-human families as the sim serves them, every call an
// upstream job (Submit, then Poll) whose reference carries the job:
// avatar registrations (the upstream's avatar id simavatar_ and a hash of
// the name and the source; [sim:fail=CODE] on the source_url fails it),
// dh-avatar videos (an avatar the account registered, or one of
// AvatarPresets; a voice it cloned, or one of VoicePresets), lip syncs and
// motion transfers. A video lasts [sim:seconds=N], else for dh-avatar's
// text ceil(characters / 3.3) seconds (the spec's estimate), else the
// duration asked; the seconds settle, never above the hold.

// AvatarPresets are the sim's platform avatars (docs/sim.md).
var AvatarPresets = []avatar.Preset{
	{ID: "anna", Name: "Anna"}, {ID: "ben", Name: "Ben"}, {ID: "chen", Name: "Chen"}, {ID: "dana", Name: "Dana"},
}

// avatarPrefix starts the ids of the avatars the sim registered.
const avatarPrefix = "simavatar_"

type simAvatar struct{ checkedJobs }

func (f simAvatar) plan(req *vendor.JobRequest) *vendor.JobPlan {
	plan := f.checkedJobs.plan(req)
	if plan.Error != nil || req.Operation == avatar.OpRegister {
		return plan
	}
	r, _ := avatar.ParseVideo(req, true) // the plan checked it
	switch {
	case !r.Registered && !slices.ContainsFunc(AvatarPresets, func(p avatar.Preset) bool { return p.ID == r.Avatar }):
		return &vendor.JobPlan{Error: rules.Invalid("avatar: '" + r.Avatar + "' does not exist: register one (POST /v1/videos/avatars) or use a preset (GET /v1/videos/avatars/presets).")}
	case r.Registered && !strings.HasPrefix(r.AvatarUpstream, avatarPrefix):
		return &vendor.JobPlan{Error: rules.Invalid("avatar: '" + r.Avatar + "' was not registered with this upstream.")}
	case r.Voice != "" && !r.Cloned && !slices.ContainsFunc(VoicePresets, func(p presetVoice) bool { return p.ID == r.Voice }):
		return &vendor.JobPlan{Error: rules.Invalid("voice: '" + r.Voice + "' does not exist: clone one (POST /v1/audio/voices) or use a preset (GET /v1/audio/voices).")}
	}
	return plan
}

func (simAvatar) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	if req.Operation == avatar.OpRegister {
		r, _ := avatar.ParseRegistration(req, true)
		id := avatarPrefix + strconv.FormatUint(fnv64(fnv64(fnvOffset, r.Name), r.SourceURL), 16)
		return avatar.Registered(req, r, id)
	}
	r, _ := avatar.ParseVideo(req, true)
	secs := float64(r.Duration)
	if r.Text != "" {
		secs = math.Ceil(float64(rules.Chars(r.Text)) / 3.3)
	}
	return avatar.Made(req, r, simVideoResult(req, k, secs))
}

type simLipsync struct{ checkedJobs }

func (simLipsync) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	r, _ := lipsync.Parse(req, true)
	return lipsync.Made(req, r, simVideoResult(req, k, float64(r.Duration)))
}

type simMotion struct{ checkedJobs }

func (simMotion) finish(req *vendor.JobRequest, k JobKnobs) *vendor.JobOutcome {
	r, _ := motion.Parse(req, true)
	return motion.Made(req, r, simVideoResult(req, k, float64(r.Duration)))
}

// simVideoResult is a finished video of secs seconds, or of the seconds
// [sim:seconds=N] reports.
func simVideoResult(req *vendor.JobRequest, k JobKnobs, secs float64) video.Result {
	if k.Seconds >= 0 {
		secs = k.Seconds
	}
	seed := fnv64(fnv64(fnvOffset, req.Model.Upstream), unsafeString(req.Body))
	return video.Result{Data: VideoMP4(int64(secs+0.999), seed), ContentType: "video/mp4", Seconds: secs}
}
