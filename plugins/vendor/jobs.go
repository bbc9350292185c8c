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
// transport fault.
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

// JobFile is an uploaded file of a multipart request.
type JobFile struct {
	Field       string // image, image[]
	Filename    string
	ContentType string
	Data        []byte
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
	// in the background for a client that asked for a task.
	UpstreamJob bool
}

// JobState is where an upstream job stands.
type JobState int

const (
	JobRunning JobState = iota + 1
	JobSucceeded
	JobFailed
)

// JobOutcome is what Run, Submit and Poll report.
type JobOutcome struct {
	State       JobState
	UpstreamRef string
	PollAfter   time.Duration // running: when to ask again; 0 = the gateway's backoff

	// Succeeded: the units delivered, and the answer as the client gets it
	// once the gateway has written the files' links into their slots.
	Units   []Units
	Status  int
	Headers map[string]string
	Body    []byte
	Files   []ResultFile
	// URLs are result links the upstream hosts itself.
	URLs []string
	// ExpiresSlot is where, in Body, the gateway writes when the files it
	// hosts expire (Unix seconds); "" for nowhere.
	ExpiresSlot string
	// Inline: the body carries the result's bytes (base64). Such an answer
	// is not kept for an idempotent replay, and a task keeps it only until
	// its first successful poll.
	Inline bool

	// Failed: the upstream's refusal (status and message; the gateway
	// answers it in the client's error shape).
	Error *JobError
}

// ResultFile is a result the gateway hosts: its bytes are stored and a
// signed, expiring link to them is written at Slot in the answer's body.
type ResultFile struct {
	Slot        string // dotted JSON path: data.0.url
	ContentType string
	Name        string
	Data        []byte
}

// FamilySpec is a family's contract as the gateway needs it: its routes,
// the unit it bills, its task vocabulary and its limits. A family's rules
// package defines it once; every plugin of the family returns it in
// Describe.
type FamilySpec struct {
	Name       string // image, video, music, speech...
	UnitType   string // the log row's unit_type
	PriceUnit  string // per_image, per_second, per_character, per_call, per_generation
	TaskPrefix string // img_, vid_...
	Routes     []FamilyRoute
	// StatusWords map the gateway's task states to the words the client
	// sees, where they differ (music says "processing" for running).
	StatusWords map[string]string
	// InFlightStatus is a poll's HTTP status while the task runs.
	InFlightStatus int
	// ListItem is "task" (list items summarise tasks: the image list) or
	// "poll" (list items are poll bodies).
	ListItem         string
	ListLimitDefault int
	ListLimitMax     int
	// ListStatuses are the status filter values a list accepts, "all" aside.
	ListStatuses []string
	// ListToExcludesDay: a date-form "to" excludes that day.
	ListToExcludesDay bool
	MaxRuntime        time.Duration // a task's longest run
	AttemptTimeout    time.Duration // one upstream attempt of a synchronous call
	CallTimeout       time.Duration // a synchronous call across attempts
	// KeepAliveAfter: a synchronous answer slower than this keeps the
	// connection with whitespace under a 200 status; 0 never.
	KeepAliveAfter time.Duration
	Retention      time.Duration // hosted results
	// ResumeAfterRestart: a task cut by a gateway restart polls on; when
	// false it fails, refunded in full.
	ResumeAfterRestart bool
	ModelOptional      bool
}

// FamilyRoute is one public route of a family.
type FamilyRoute struct {
	Method    string
	Path      string // a pattern: /v1/images/generations/{id}
	Kind      string // RouteCreate, RoutePoll or RouteList
	Operation string // create routes: generations, edits...
	Multipart bool   // accepts multipart/form-data as well as JSON
	MaxBody   int64
	// Async is AsyncNever, AsyncField (the body's async decides) or
	// AsyncAlways.
	Async string
}

// Route kinds and async modes.
const (
	RouteCreate = "create"
	RoutePoll   = "poll"
	RouteList   = "list"

	AsyncNever  = ""
	AsyncField  = "field"
	AsyncAlways = "always"
)
