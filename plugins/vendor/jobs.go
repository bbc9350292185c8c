package vendor

import (
	"context"
	"time"
)

// Jobs is the optional second service of a plugin: endpoint families
// beyond chat (images, video, music, speech...). A plugin serving families
// implements it beside Vendor and returns their FamilySpecs in Describe.
//
// A plugin answers in units, never money. The family's rules (validation,
// units to hold, units delivered) live in the family's rules package under
// plugins/family, which every plugin of the family links; the plugin only
// speaks its vendor's wire. Refusals and upstream failures are values in
// the replies (JobError, a *Failure as the error); any other error is a
// transport fault. A request is the caller's: read it, never change it
// (the task engine asks every poll with the one job it read).
type Jobs interface {
	// Validate checks a request and says how many units to hold, or
	// refuses it with JobPlan.Error.
	Validate(ctx context.Context, req *JobRequest) (*JobPlan, error)
	// Run makes one synchronous upstream call.
	Run(ctx context.Context, req *JobRequest) (*JobOutcome, error)
	// Submit starts an upstream job; the outcome is running with the
	// upstream's reference, or already terminal (a refusal).
	Submit(ctx context.Context, req *JobRequest) (*JobOutcome, error)
	// Poll asks about a submitted job (req.UpstreamRef).
	Poll(ctx context.Context, req *JobRequest) (*JobOutcome, error)
	// Cancel asks the upstream to stop a job; best effort.
	Cancel(ctx context.Context, req *JobRequest) error
}

// JobReader is the optional read service of a Jobs plugin: the free read
// routes of a family (presets, templates) and the fields a list route
// merges into its page (the voices list's presets). req.Operation is the
// route's operation and req.Body its query parameters as a JSON object of
// strings. The outcome's Status, Headers and Body are the answer (a list
// merge takes the members of a JSON object Body); no units are billed. A
// plugin without it answers codes.Unimplemented (ErrNoJobs on the host).
type JobReader interface {
	Read(ctx context.Context, req *JobRequest) (*JobOutcome, error)
}

// JobRequest is one call of the Jobs service.
type JobRequest struct {
	Family    string
	Operation string // the route's operation: generations, edits...
	Channel   string
	Model     JobModel
	// Body is the client's JSON body; for a multipart request, its text
	// fields as a JSON object (repeated fields as arrays) and its files
	// in Files.
	Body        []byte
	Files       []JobFile
	Async       bool
	UpstreamRef string // Poll and Cancel
	RequestID   string
	Timeout     time.Duration // the attempt; 0 = only the context
	// Headers are client headers to forward upstream, lower-case names:
	// the W3C trace context (traceparent) when tracing is on.
	Headers map[string]string

	// TaskID is the gateway's id of the task the call belongs to (an
	// async job, or a synchronous create its route records), and
	// Submitted when the client submitted it: a family whose tasks are
	// records renders them with these (FamilySpec.Record). Empty for a
	// call that is no task.
	TaskID    string
	Submitted time.Time
	// Refs are the body fields that named an earlier task of the caller's
	// account (FamilyRoute.Refs), resolved by the gateway: the task is the
	// account's, succeeded and not deleted or expired, and the call runs
	// on the channel that holds it. A value that is not one of the
	// gateway's ids is no Ref: it passes through in Body (a preset).
	Refs []JobRef
}

// JobRef is an earlier task a request refers to, as the gateway resolved
// it: what the plugin needs to use it upstream.
type JobRef struct {
	Field  string // the body field that named it: voice, avatar, asr_id
	TaskID string // the gateway's id, as the client sent it
	Family string
	Model  string
	// UpstreamRef is the upstream's own id of the result (a cloned
	// voice's voice_id); Record is the task's record as its poll shows it.
	UpstreamRef string
	Record      []byte
}

// JobModel is the model a job runs on.
type JobModel struct {
	ID       string // as the client named it
	Upstream string // the upstream's id on the channel
	// Settings are the model block's family settings (grid = 4,
	// ignore_size = true...), as strings.
	Settings map[string]string
	// Tiers are the price tiers the model has besides the base one: "hd"
	// (per_image_hd), "fast", "standard", "max" (per-second tiers).
	Tiers []string
}

// JobFile is an uploaded file of a multipart request. The gateway streams
// an upload to its file store as it arrives and hands the plugin a link
// to it (URL), never the bytes: read it with OpenFile. Data is set
// instead only by callers that hold the bytes already (tests, in-process
// callers).
type JobFile struct {
	Field       string // image, image[]
	Filename    string
	ContentType string
	Data        []byte
	// URL is a signed link the plugin reads the upload from; Size its
	// length and SHA256 its digest (hex).
	URL    string
	Size   int64
	SHA256 string
}

// Len is the file's size in bytes.
func (f *JobFile) Len() int64 {
	if f.Data != nil {
		return int64(len(f.Data))
	}
	return f.Size
}

// Units are a count of the family's unit at one price tier ("" = base).
type Units struct {
	Tier  string
	Count int64
}

// JobError is a refusal: the gateway's own (Code set, e.g.
// invalid_request) or the upstream's (Code empty: the gateway maps Status
// the way it maps any upstream status).
type JobError struct {
	Status  int
	Code    string
	Message string
}

func (e *JobError) Error() string { return e.Message }

// JobPlan is Validate's answer: the units to hold, or a refusal.
type JobPlan struct {
	Hold  []Units
	Error *JobError
	// UpstreamJob: the vendor runs the request as an upstream job (Submit,
	// then Poll), whether the client waits or not; false: one Run. The
	// gateway polls an upstream job for a waiting client, and runs a Run
	// in the background for a client that asked for a task. Each vendor
	// plans for its own channels: a model may be served by one vendor
	// that runs jobs and another that answers at once.
	UpstreamJob bool
	// Record is the task's record as its submit answers it, for a family
	// whose tasks are records (FamilySpec.Record): a JSON object the
	// gateway writes the status word into. Rendered with req.TaskID and
	// req.Submitted.
	Record []byte
}

// JobState is where an upstream job stands.
type JobState int

const (
	JobRunning JobState = iota + 1
	JobSucceeded
	JobFailed
	// JobCancelled: the upstream (or an operator through the gateway)
	// cancelled the job; it is refunded in full.
	JobCancelled
)

// JobOutcome is what Run, Submit, Poll and Read report.
type JobOutcome struct {
	State       JobState
	UpstreamRef string
	PollAfter   time.Duration // running: when to ask again; 0 = the gateway's backoff

	// Succeeded: the units delivered, and the answer as the client gets it
	// once the gateway has written the files' links into their slots.
	// Running, for a family whose tasks are records: Body, when set, is
	// the task's record as it now stands (progress).
	Units   []Units
	Status  int
	Headers map[string]string
	Body    []byte
	Files   []ResultFile
	// URLs are result links the upstream hosts itself, and ExpiresAt when
	// they stop working (zero: unknown). A family re-hosts links (a
	// ResultFile with a URL) rather than hand them to the client.
	URLs      []string
	ExpiresAt time.Time
	// ExpiresSlot is where, in Body, the gateway writes when the files it
	// hosts expire (Unix seconds); "" for nowhere.
	ExpiresSlot string
	// Inline: the body carries the result's bytes (base64). Such an answer
	// is not kept for an idempotent replay, and a task keeps it only until
	// its first successful poll.
	Inline bool

	// Failed or cancelled: the upstream's refusal (status and message;
	// the gateway answers it in the client's error shape, or writes it
	// into the task's record).
	Error *JobError
}

// ResultFile is a result the gateway hosts: its bytes are stored and a
// signed, expiring link to them is written at Slot in the answer's body.
// Data holds the bytes; or URL names where the gateway fetches them (a
// result larger than a plugin message, or a link the upstream hosts),
// with Header sent along (the upstream's credentials) and, when a
// redirect leaves the URL's host, dropped. Inline writes the bytes at
// Slot as base64 instead of a link (a client that asked b64_json of an
// upstream that answered a link).
type ResultFile struct {
	Slot        string // dotted JSON path: data.0.url
	ContentType string // "" to take the fetched answer's, or sniff
	Name        string
	Data        []byte
	URL         string
	Header      map[string]string
	Inline      bool
}
