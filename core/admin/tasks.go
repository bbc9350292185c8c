package admin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/tasks"
	"github.com/tollgate-gw/tollgate/store"
)

// TaskCanceller ends a running task as cancelled, refunded in full: the
// task engine.
type TaskCanceller interface {
	Cancel(ctx context.Context, id string) error
}

// cancelWait bounds how long a cancel waits for the task to end.
const cancelWait = 30 * time.Second

// TaskRoutes mounts POST /admin/v1/tasks/{id}/cancel: the task's upstream
// is asked to stop, then the task ends cancelled and its hold is refunded
// in full (there is no public cancel endpoint).
func (h *Handler) TaskRoutes(c TaskCanceller) {
	h.mux.HandleFunc("POST /admin/v1/tasks/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		ctx, cancel := context.WithTimeout(r.Context(), cancelWait)
		defer cancel()
		switch err := c.Cancel(ctx, id); {
		case errors.Is(err, tasks.ErrEnded):
			t, _ := h.store.GetTask(r.Context(), id)
			fail(w, apierr.Newf(apierr.InvalidRequest, "task %q has already ended (%s); nothing was changed", id, t.Status))
			return
		case err != nil:
			fail(routed{w, r}, err)
			return
		}
		t, err := h.store.GetTask(r.Context(), id)
		if err != nil {
			fail(routed{w, r}, err)
			return
		}
		reply(w, http.StatusOK, taskView(&t))
	})
}

// taskView is a task as the admin API shows it.
func taskView(t *store.Task) map[string]any {
	v := map[string]any{"id": t.ID, "account_id": t.AccountID, "family": t.Family, "model": t.Model,
		"status": t.Status, "channel": t.Channel, "submitted_at": t.SubmittedAt.UTC().Format(time.RFC3339)}
	if r := t.Result; r != nil {
		v["cost"] = r.Cost.String()
		v["error_code"] = r.ErrorCode
	}
	return v
}
