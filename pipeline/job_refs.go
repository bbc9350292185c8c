package pipeline

import (
	"context"
	"errors"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// resolveRefs resolves the body fields that name an earlier task of the
// caller's account (the route's Refs: a cloned voice, an avatar, an
// asr_id). A value with the field's prefix is one of the gateway's ids: it
// must be a task of this account that succeeded and was neither deleted
// nor expired, else the call is a 400 naming the field; the plugin is
// handed what it needs of it, and the call is pinned to the channel that
// holds it. Any other value passes through (a preset). A plugin never
// sees the account, so this is the gateway's to check.
func resolveRefs(ctx context.Context, st store.Tasks, c *Call) error {
	j := c.Job
	for _, rf := range j.Route.Refs {
		v := gjson.GetBytes(j.Body, rf.Field)
		if !v.Exists() || v.Type == gjson.Null {
			continue
		}
		if v.Type != gjson.String {
			return apierr.Newf(apierr.InvalidRequest, "%s: want a string id", rf.Field)
		}
		id := v.Str
		if rf.Prefix == "" || !strings.HasPrefix(id, rf.Prefix) {
			continue // a preset, or an upstream's own id
		}
		t, err := st.GetTask(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && (t.AccountID != c.Account.ID || t.Hidden):
			return apierr.Newf(apierr.InvalidRequest, "%s: '%s' does not exist (an id is usable only by the account that made it)", rf.Field, id)
		case err != nil:
			return apierr.Internal(err)
		case t.Status == store.TaskExpired:
			return apierr.Newf(apierr.InvalidRequest, "%s: '%s' has expired; make it again", rf.Field, id)
		case !store.TaskTerminal(t.Status):
			return apierr.Newf(apierr.InvalidRequest, "%s: '%s' is not ready yet (it is still being made); wait until it is", rf.Field, id)
		case t.Status != store.TaskSucceeded:
			return apierr.Newf(apierr.InvalidRequest, "%s: '%s' is not ready: it %s and cannot be used", rf.Field, id, t.Status)
		}
		record := []byte(t.Record)
		if len(record) == 0 && t.Result != nil {
			record = t.Result.Body
		}
		j.Refs = append(j.Refs, vendor.JobRef{Field: rf.Field, TaskID: t.ID, Family: t.Family, Model: t.Model,
			UpstreamRef: t.UpstreamRef, Record: record})
		if t.Channel == "" {
			continue
		}
		var pinned []*config.Channel
		for _, ch := range j.Channels {
			if ch.Name == t.Channel {
				pinned = append(pinned, ch)
			}
		}
		if len(pinned) == 0 {
			return apierr.Newf(apierr.InvalidRequest, "%s: '%s' was made on a channel that does not serve the model '%s'; use a model of that channel",
				rf.Field, id, c.ModelID)
		}
		j.Channels = pinned
	}
	return nil
}
