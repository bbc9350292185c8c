package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Task states. A family shows them in its own words (music's
// "processing", speech's "pending"); the store keeps these.
const (
	TaskQueued    = "queued"
	TaskRunning   = "running"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
	TaskExpired   = "expired" // a delivered result past its retention
)

// TaskTerminal reports whether a task in state s has ended.
func TaskTerminal(s string) bool {
	switch s {
	case TaskSucceeded, TaskFailed, TaskCancelled, TaskExpired:
		return true
	}
	return false
}

// ErrLeaseLost is returned when a task changes hands: another instance
// took it over after its lease ended, or it has already ended.
var ErrLeaseLost = errors.New("store: task lease lost")

// ErrTaskRunning is returned by HideTask for a task that has not ended.
var ErrTaskRunning = errors.New("store: the task has not ended")

// TaskCollection is the collection of a task id: its prefix up to and
// including the first underscore (vid_ of vid_0f3a...), the tasks one
// family route polls and lists; "" when it has none.
func TaskCollection(id string) string {
	if i := strings.IndexByte(id, '_'); i > 0 {
		return id[:i+1]
	}
	return ""
}

// Task is one async job (an image with async, a video, a song...). It is
// written before the submit is answered and owns the job's hold: the
// hold's TaskID names it, and only the task's terminal transition settles
// it. An instance owns a task while its lease lasts and renews it while
// the job runs; when the lease ends (the instance died), another instance
// claims it.
type Task struct {
	ID        string `json:"id"` // the gateway's own: img_..., vid_...
	AccountID string `json:"account_id"`
	KeyID     string `json:"key_id"`
	KeyName   string `json:"key_name"`
	KeyPrefix string `json:"key_prefix"`
	Family    string `json:"family"`    // image, video, ...
	UnitType  string `json:"unit_type"` // its rows' unit_type
	Operation string `json:"operation"` // the route's operation: generations, edits
	Model     string `json:"model"`     // as the client named it
	Status    string `json:"status"`
	RequestID string `json:"request_id"` // the submit's x-gateway-trace

	// The hold the task owns (HoldID is the hold's id) and what it holds.
	HoldID string     `json:"hold_id"`
	Hold   money.Nano `json:"hold"`

	// Where the job runs: the channel, its vendor plugin, and the
	// upstream's own job id once it has one.
	Channel     string `json:"channel,omitempty"`
	Vendor      string `json:"vendor,omitempty"`
	UpstreamRef string `json:"upstream_ref,omitempty"`
	// Job is what the plugin needs to run or poll the job again (the
	// request as the plugin was handed it), opaque to the store.
	Job []byte `json:"job,omitempty"`

	SubmittedAt time.Time `json:"submitted_at"`
	StartedAt   time.Time `json:"started_at,omitempty"`
	CompletedAt time.Time `json:"completed_at,omitempty"`
	// Deadline is when the job fails if it has not ended (the family's
	// maximum runtime).
	Deadline time.Time `json:"deadline"`
	// NextPollAt is when the owner next asks the upstream; Polls counts
	// the asks so far (the backoff).
	NextPollAt time.Time `json:"next_poll_at,omitempty"`
	Polls      int       `json:"polls,omitempty"`

	// Owner is the instance working on the task, until LeaseUntil.
	Owner      string    `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitempty"`

	// Result is the answer of an ended task: what a poll returns.
	Result *TaskResult `json:"result,omitempty"`
	// Hidden tasks were refused at submit (the client never saw their id)
	// or deleted by their account: polls, lists and references leave them
	// out.
	Hidden bool `json:"hidden,omitempty"`
	// Record is the task as its family renders it (a video object, a
	// voice), for families whose tasks are records: what a poll shows,
	// without the status word, which the gateway writes in.
	Record json.RawMessage `json:"record,omitempty"`
	// ExpireAt is when a succeeded task's result passes its retention and
	// the task becomes expired (ExpireTasks); zero for never.
	ExpireAt time.Time `json:"expire_at,omitempty"`
}

// TaskResult is how a task ended, and what a poll answers from then on.
type TaskResult struct {
	HTTPStatus int               `json:"http_status"`
	Header     map[string]string `json:"header,omitempty"`
	// Body is the final answer, exactly as a synchronous call gives it.
	Body []byte `json:"body,omitempty"`
	// BodyGone: the body was delivered once and dropped (a base64 answer
	// is kept only until its first successful poll).
	BodyGone   bool       `json:"body_gone,omitempty"`
	DropOnRead bool       `json:"drop_on_read,omitempty"`
	URLs       []string   `json:"urls,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	// Units are what the upstream delivered; Cost what was charged.
	Units        int64      `json:"units"`
	Cost         money.Nano `json:"cost"`
	ErrorCode    string     `json:"error_code,omitempty"`
	ErrorMessage string     `json:"error_message,omitempty"`
}

// TaskQuery selects one account's tasks, newest first by (SubmittedAt,
// ID). Zero values mean no filter.
type TaskQuery struct {
	AccountID string
	KeyID     string
	Family    string
	// Collection selects the tasks whose id has this prefix (a family
	// route's task prefix: vid_), whatever their family.
	Collection string
	Statuses   []string  // any of
	From, To   time.Time // SubmittedAt >= From and < To
	// Before continues a page: tasks strictly older than this position.
	Before *TaskPosition
	// Unfinished selects tasks not yet ended (Statuses ignored).
	Unfinished bool
	Limit      int
}

// TaskPosition is a task's place in list order, used by cursors.
type TaskPosition struct {
	SubmittedAt time.Time
	ID          string
}

// Tasks is the role of async tasks. The hold and the terminal transition
// are tied: FinishTask ends the task, settles its hold and writes its row
// in one step, so a task is charged exactly once or refunded in full.
type Tasks interface {
	// CreateTask writes a new task (ErrExists when its id is taken).
	CreateTask(ctx context.Context, t Task) error
	GetTask(ctx context.Context, id string) (Task, error)
	ListTasks(ctx context.Context, q TaskQuery) ([]Task, error)
	// UpdateTask writes an unfinished task's progress (status running, the
	// upstream reference, the next poll). It fails with ErrLeaseLost when
	// the stored task has ended or belongs to another owner than t.Owner,
	// and ErrNotFound when there is none.
	UpdateTask(ctx context.Context, t Task) error
	// RenewTaskLeases extends to until the leases owner holds on ids and
	// returns the ids it no longer holds (ended, or taken over).
	RenewTaskLeases(ctx context.Context, owner string, ids []string, until time.Time) (lost []string, err error)
	// ClaimTasks gives owner, until until, up to limit unfinished tasks
	// whose lease ended before expiredBefore (their instance is gone). The
	// tasks are returned as they were before the claim (Owner names the
	// previous owner) and now belong to owner.
	ClaimTasks(ctx context.Context, owner string, expiredBefore, until time.Time, limit int) ([]Task, error)
	// FinishTask ends t (its Status terminal, its Result set) if it has not
	// ended and belongs to t.Owner, and applies s (which settles the task's
	// hold and writes its row) in the same step. ErrLeaseLost: it ended
	// already or changed hands; nothing changed.
	FinishTask(ctx context.Context, t Task, s Settlement) error
	// DropTaskResult forgets the body of an ended task's result (a base64
	// answer delivered once), keeping the rest.
	DropTaskResult(ctx context.Context, id string) error
	// HideTask hides an ended task from its account (a delete):
	// ErrTaskRunning while it runs, ErrNotFound when there is none.
	HideTask(ctx context.Context, id string) error
	// TakeTask gives owner, until until, an unfinished task whatever its
	// lease (an operator cancelling it), and returns it as it was, with
	// its job. ErrLeaseLost: it has ended; ErrNotFound: there is none. The
	// previous owner's next write of it fails with ErrLeaseLost.
	TakeTask(ctx context.Context, id, owner string, until time.Time) (Task, error)
	// ExpireTasks turns up to limit succeeded tasks whose ExpireAt is not
	// after now into expired (no money moves) and returns their ids.
	ExpireTasks(ctx context.Context, now time.Time, limit int) ([]string, error)
}
