package vendor

import (
	"fmt"
	"slices"
	"time"
)

// FamilySpec is a family's contract as the gateway needs it: its routes,
// the unit it bills, its task vocabulary and its limits. A family's rules
// package defines it once; every plugin of the family returns it in
// Describe.
//
// Several families may declare one route (the video route serves video,
// avatar, lipsync, motion and clip): the model's family then decides each
// call, and a poll or list of the route shows each task as its own family
// renders it. The fields a shared route must agree on are FamilyRoute's
// shape (SameShape).
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

	// Record: the family's tasks are records the plugin renders (the
	// video object, a voice, an avatar): JobPlan.Record is what the submit
	// answers, a running outcome's Body the record as it stands, a
	// succeeded outcome's Body the final record. The gateway writes the
	// status word at "status"; a poll answers the record (with
	// InFlightStatus while it runs, else 200) and a list item is the
	// record. A task that fails, times out, is cut by a restart or is
	// cancelled is a record too: status failed (or cancelled) and
	// "error". Without Record a task shows {id, status, model, created_at}
	// while it runs and its final answer (or error) once it ended.
	Record bool
	// RecordError is the form of a failed record's "error": RecordErrorObject
	// ({code, message}, the default) or RecordErrorMessage (the message).
	RecordError string
	// ExpireResults: a succeeded task whose hosted result passed its
	// retention becomes expired (no money moves).
	ExpireResults bool
	// Caps are the model settings the catalog shows in a model's caps
	// (the video capability object: modes, ratios, duration bounds,
	// references, audio).
	Caps []CapField
	// Refusals are the statuses of the gateway's own refusals of the
	// family's calls where they differ from the truth table's 400.
	Refusals Refusals

	// How the family presents itself, so that the gateway names no
	// family: Endpoint is the endpoint_type of its models in the pricing
	// catalog ("" is the family's name); Examples are the calls the start
	// banner offers to try it with, in order.
	Endpoint string
	Examples []Example
	// LogKind is the "kind" of the technical view of its rows (one of
	// LogKinds; "" for none), where a route does not say.
	LogKind string
}

// logKinds are the kinds a row's technical view may name: the logs API
// shows any other as null.
var logKinds = map[string]bool{"video": true, "image": true, "music": true, "audio": true}

// ValidLogKind reports whether k is one of the technical view's kinds.
func ValidLogKind(k string) bool { return logKinds[k] }

// Example is a call the start banner prints to try a family: a GET of
// Path, or a POST of a JSON body naming the first configured model of
// Family (the spec's own when "") followed by Body's members. Note
// follows the command (a comment, or a curl option). Nothing is printed
// while no model of Family is configured.
type Example struct {
	Family string
	Method string // GET or POST
	Path   string
	Body   string // the body's members after "model", without braces
	Note   string
}

// EndpointType is the family's endpoint_type in the pricing catalog.
func (s *FamilySpec) EndpointType() string {
	if s.Endpoint != "" {
		return s.Endpoint
	}
	return s.Name
}

// Refusals are the HTTP statuses of two of the gateway's refusals, for
// the families whose errors differ from the truth table (errors rule 9,
// digital human and editing): NotAllowed of model_not_allowed (a model
// the key's allowlist excludes, or a route's gate), NotFound of
// model_not_found for a route's implied model, or its gate, that this
// gateway does not configure. Zero keeps the truth table's 400; a model
// the body names and the registry lacks is always 400 (errors rule 7).
type Refusals struct {
	NotAllowed int
	NotFound   int
}

// CapField is a model setting the catalog shows: at Path (dotted) in the
// model's caps, the setting Setting read as Kind (CapList: a
// comma-separated list; CapInt; CapBool).
type CapField struct {
	Path, Setting, Kind string
}

// Kinds of a CapField.
const (
	CapList = "list"
	CapInt  = "int"
	CapBool = "bool"
)

// FamilyRoute is one public route of a family.
type FamilyRoute struct {
	Method    string
	Path      string // a pattern: /v1/images/generations/{id}
	Kind      string // RouteCreate, RoutePoll, RouteList, RouteDelete or RouteRead
	Operation string // create and read routes: generations, edits, presets...; a list's merge (JobReader)
	Multipart bool   // accepts multipart/form-data as well as JSON
	MaxBody   int64
	// Async is AsyncNever, AsyncField (the body's async decides) or
	// AsyncAlways.
	Async string

	// The route's billing identity, where it is not the family's: the
	// unit type of its rows, the price unit it bills, the prefix of its
	// task ids (the tasks a poll, list or delete route serves are those
	// of its prefix), and the model it runs when the body names none (a
	// route whose model is implied: avatar registration).
	UnitType   string
	PriceUnit  string
	TaskPrefix string
	Model      string
	// StatusWords override the family's for the tasks this create route
	// makes (an avatar is pending, ready, failed).
	StatusWords map[string]string
	// Recorded: a synchronous create is kept as an ended task so that
	// later calls can refer to it (a cloned voice); a failed one is not
	// kept.
	Recorded bool
	// Refs are the body fields that may name an earlier task of the
	// caller's account (the gateway resolves them: JobRequest.Refs).
	Refs []RefField
	// Gate is a model the key's allowlist must permit for this route
	// (a helper route of a family, such as the editing templates); a
	// create whose model is the route's implied one needs the gate only.
	Gate string
	// List overrides the family's list vocabulary on a list route.
	List *ListSpec
	// RecordError overrides the family's form of a failed record's
	// "error" for the tasks this create route makes (an avatar's error is
	// its message, a video's {code, message}).
	RecordError string
	// LogKind overrides the family's kind of the technical view for the
	// rows of this route (the shared video route's are video).
	LogKind string
	// ExpireRecords: a succeeded task this create route makes expires
	// once the family's retention (or its model's shorter one) has passed
	// since it ended, whether or not it hosts files (a recognition's
	// asr_id is usable for 24 hours). Without it, only a task whose
	// hosted files expire does (FamilySpec.ExpireResults).
	ExpireRecords bool
}

// RefField is a body field that may name an earlier task: a value with
// Prefix (the collection of the tasks it names, their create route's
// TaskPrefix) is one of the gateway's ids and must resolve; any other
// value passes through (a preset).
type RefField struct {
	Field  string
	Prefix string
}

// ListSpec is a list route's vocabulary (FamilySpec's list fields).
type ListSpec struct {
	Statuses      []string
	LimitDefault  int
	LimitMax      int
	ToExcludesDay bool
	// Bare: the list answers {object: "list", data} without has_more and
	// next_cursor, and takes no cursor: LimitMax is all it shows (the
	// avatar list's 200).
	Bare bool
}

// Route kinds and async modes.
const (
	RouteCreate = "create"
	RoutePoll   = "poll"
	RouteList   = "list"
	// RouteDelete hides an ended task of the route's prefix from its
	// account (400 while it runs).
	RouteDelete = "delete"
	// RouteRead is a free read the plugin answers (JobReader): no hold,
	// no row.
	RouteRead = "read"

	AsyncNever  = ""
	AsyncField  = "field"
	AsyncAlways = "always"

	RecordErrorObject  = "object"
	RecordErrorMessage = "message"
)

// Billing is a route's billing identity: its own, else its family's.
type Billing struct {
	UnitType, PriceUnit, TaskPrefix, Model string
	// LogKind is the technical view's kind of its rows ("" for none).
	LogKind string
}

// BillingOf is the billing identity of route rt of the family.
func (s *FamilySpec) BillingOf(rt *FamilyRoute) Billing {
	b := Billing{UnitType: s.UnitType, PriceUnit: s.PriceUnit, TaskPrefix: s.TaskPrefix, LogKind: s.LogKind}
	if rt == nil {
		return b
	}
	if rt.UnitType != "" {
		b.UnitType = rt.UnitType
	}
	if rt.PriceUnit != "" {
		b.PriceUnit = rt.PriceUnit
	}
	if rt.TaskPrefix != "" {
		b.TaskPrefix = rt.TaskPrefix
	}
	if rt.LogKind != "" {
		b.LogKind = rt.LogKind
	}
	b.Model = rt.Model
	return b
}

// CreateRoute is the family's create route whose tasks have prefix (nil
// when none).
func (s *FamilySpec) CreateRoute(prefix string) *FamilyRoute {
	for i := range s.Routes {
		rt := &s.Routes[i]
		if rt.Kind == RouteCreate && s.BillingOf(rt).TaskPrefix == prefix {
			return rt
		}
	}
	return nil
}

// Word is how the family names a task state for tasks of prefix: the
// create route's words, else the family's, else the state itself.
func (s *FamilySpec) Word(prefix, state string) string {
	if rt := s.CreateRoute(prefix); rt != nil {
		if w, ok := rt.StatusWords[state]; ok {
			return w
		}
	}
	if w, ok := s.StatusWords[state]; ok {
		return w
	}
	return state
}

// ErrorForm is the form of a failed record's "error" for tasks of
// prefix: the create route's, else the family's.
func (s *FamilySpec) ErrorForm(prefix string) string {
	if rt := s.CreateRoute(prefix); rt != nil && rt.RecordError != "" {
		return rt.RecordError
	}
	return s.RecordError
}

// ListOf is the list vocabulary of list route rt: its own, else the
// family's.
func (s *FamilySpec) ListOf(rt *FamilyRoute) ListSpec {
	if rt != nil && rt.List != nil {
		return *rt.List
	}
	return ListSpec{Statuses: s.ListStatuses, LimitDefault: s.ListLimitDefault, LimitMax: s.ListLimitMax,
		ToExcludesDay: s.ListToExcludesDay}
}

// SameShape reports why two families' declarations of one method and path
// cannot share it ("" when they can): a shared route serves every family
// alike, so its kind, operation, body rules, async mode, task prefix,
// implied model, gate and list vocabulary must agree. Its unit type,
// price unit and reference fields may differ: the model's family bills,
// and its reference fields are resolved (the avatar family names
// avatars, the clip family recognitions).
func SameShape(a *FamilySpec, ra *FamilyRoute, b *FamilySpec, rb *FamilyRoute) string {
	ba, bb := a.BillingOf(ra), b.BillingOf(rb)
	la, lb := a.ListOf(ra), b.ListOf(rb)
	switch {
	case ra.Kind != rb.Kind:
		return fmt.Sprintf("kind %q against %q", ra.Kind, rb.Kind)
	case ra.Operation != rb.Operation:
		return fmt.Sprintf("operation %q against %q", ra.Operation, rb.Operation)
	case ra.Multipart != rb.Multipart || ra.MaxBody != rb.MaxBody:
		return "body rules (multipart, max body)"
	case ra.Async != rb.Async || ra.Recorded != rb.Recorded:
		return fmt.Sprintf("async %q (recorded %v) against %q (recorded %v)", ra.Async, ra.Recorded, rb.Async, rb.Recorded)
	case ba.TaskPrefix != bb.TaskPrefix:
		return fmt.Sprintf("task prefix %q against %q", ba.TaskPrefix, bb.TaskPrefix)
	case ra.Model != rb.Model:
		return fmt.Sprintf("implied model %q against %q", ra.Model, rb.Model)
	case ra.Gate != rb.Gate:
		return fmt.Sprintf("gate %q against %q", ra.Gate, rb.Gate)
	case ra.Kind == RouteList && (!slices.Equal(la.Statuses, lb.Statuses) || la.LimitDefault != lb.LimitDefault ||
		la.LimitMax != lb.LimitMax || la.ToExcludesDay != lb.ToExcludesDay || la.Bare != lb.Bare):
		return "list vocabulary (statuses, limits, date bounds)"
	}
	return ""
}

// SameSpec reports whether two plugins describe a family alike.
func SameSpec(a, b *FamilySpec) bool {
	flat := func(s *FamilySpec) string {
		c := *s
		c.Routes = nil
		out := fmt.Sprintf("%+v", c)
		for _, r := range s.Routes {
			l := r.List
			r.List = nil
			out += fmt.Sprintf("|%+v", r)
			if l != nil {
				out += fmt.Sprintf("%+v", *l)
			}
		}
		return out
	}
	return flat(a) == flat(b)
}
