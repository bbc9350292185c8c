package tasks

import (
	"encoding/json"
	"net/http"

	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// How a task shows to its account. A family whose tasks are records
// (FamilySpec.Record) shows its record, the status word written in; any
// other shows its head while it runs and its final answer once it ended
// (the images rule).

// HeadBody is a task's head: what a submit of a family without records
// answers, and its poll while the task runs.
type HeadBody struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Model     string `json:"model"`
	CreatedAt int64  `json:"created_at"`
}

// Word is how the family of t names the state s for t.
func Word(spec *vendor.FamilySpec, t *store.Task, s string) string {
	return spec.Word(store.TaskCollection(t.ID), s)
}

// Head is the head of t in its family's words.
func Head(spec *vendor.FamilySpec, t *store.Task) HeadBody {
	return HeadBody{ID: t.ID, Status: Word(spec, t, t.Status), Model: t.Model, CreatedAt: t.SubmittedAt.Unix()}
}

func headJSON(spec *vendor.FamilySpec, t *store.Task) []byte {
	b, _ := json.Marshal(Head(spec, t)) // plain fields always marshal
	return b
}

// Record is t's record as its poll and list show it, in state status: the
// family's record (or, when it rendered none, the head) with the status
// word written at "status".
func Record(spec *vendor.FamilySpec, t *store.Task, status string) []byte {
	rec := []byte(t.Record)
	if len(rec) == 0 || !json.Valid(rec) {
		rec = headJSON(spec, t)
	}
	out, err := sjson.SetBytes(rec, "status", Word(spec, t, status))
	if err != nil {
		return rec // a record that is no JSON object keeps its words
	}
	return out
}

// InFlightStatus is a poll's HTTP status while t runs.
func InFlightStatus(spec *vendor.FamilySpec) int {
	if spec.InFlightStatus != 0 {
		return spec.InFlightStatus
	}
	return http.StatusOK
}

// WithError writes the error into t's failed record: {code, message} or
// the message, as its family says for tasks of its kind.
func WithError(spec *vendor.FamilySpec, t *store.Task, rec []byte, code, message string) []byte {
	var v any = map[string]string{"code": code, "message": message}
	if spec.ErrorForm(store.TaskCollection(t.ID)) == vendor.RecordErrorMessage {
		v = message
	}
	out, err := sjson.SetBytes(rec, "error", v)
	if err != nil {
		return rec
	}
	return out
}
