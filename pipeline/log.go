package pipeline

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/translate"
	"github.com/tollgate-gw/tollgate/store"
)

// log commits the call: the hold is closed, the charge booked and the usage
// row written in one store step, so a row never exists without its charge
// nor a charge without its row. Every call whose key is known gets a row.
// A step the store refuses as unavailable waits in the SettleQueue, its
// hold kept, and is written once the store takes writes; the answer is
// handed out meanwhile (its charge is known and will be booked). When the
// step fails otherwise, a response still held back is replaced by a 500:
// the gateway does not hand out an answer it could not bill.
type logStage struct {
	store   store.Store
	waiting *SettleQueue
	now     func() time.Time
	log     hclog.Logger
}

func newLog(d *Deps, _ map[string]string) (Stage, error) {
	return &logStage{store: d.Store, waiting: d.Settlements, now: d.Now, log: d.Logger.Named("ledger")}, nil
}

func (s *logStage) Name() string { return "log" }

func (s *logStage) Serve(ctx context.Context, c *Call) error {
	s.Finish(ctx, c)
	return nil
}

func (s *logStage) Finish(ctx context.Context, c *Call) {
	if c.Key == nil {
		return
	}
	if c.Status == "" {
		c.Status = rowStatus(c)
	}
	if j := c.Job; j != nil && j.Task != nil {
		if j.Accepted && !store.TaskTerminal(j.Task.Status) {
			return // the task owns the hold; it writes its row when it ends
		}
		s.finishTask(ctx, c)
		return
	}
	row := s.row(c)
	st := store.Settlement{Charge: c.Charge, Row: row}
	if c.Hold != nil {
		st.HoldID = c.Hold.ID
	} else {
		st.Charge = 0
		row.Cost = 0
	}
	heldBack := c.Err == nil && c.response != nil
	// The client may be gone; the ledger must still be written. It goes
	// straight to the store unless settlements wait for it (then behind
	// them), and waits when the store refuses it as unavailable.
	var written *store.LogRow
	var unbooked bool
	var err error
	if s.waiting.Waiting() == 0 {
		c.own.detached = detached{ctx} // context.WithoutCancel, the Call's own
		written, unbooked, err = settle(&c.own.detached, s.store, s.log, c.ID, st, heldBack)
		if errors.Is(err, store.ErrUnavailable) {
			err = s.waiting.Queue(c.ID, c.Hold != nil, s.late(c.ID, st), err)
		}
	} else {
		err = s.waiting.Queue(c.ID, c.Hold != nil, s.late(c.ID, st), nil)
	}
	switch {
	case err == nil:
		c.Row = written
		if heldBack && unbooked {
			c.Err = apierr.New(apierr.InternalError, "the charge of this call could not be booked (the account's balance is out of its range), so the answer was not handed out")
			c.renderError()
		}
		if s.log.IsDebug() { // its arguments cost allocations on every call
			s.log.Debug("settled", "request_id", c.ID, "status", written.Status, "cost", written.Cost.String(), "model", written.Model)
		}
	case errors.Is(err, ErrSettlementWaits):
		// The answer is handed out: its charge is known and will be
		// booked.
		c.Row = row
		s.log.Warn("the store cannot take settlements now; this one waits in memory, its hold kept, and is written when it can",
			"request_id", c.ID, "error", err)
	default:
		if c.Hold != nil {
			s.log.Error("settlement failed; the hold stays open for recovery", "request_id", c.ID, "error", err)
		} else {
			s.log.Error("the row of a call without a hold could not be written", "request_id", c.ID, "error", err)
		}
		if heldBack {
			c.Err = apierr.Internal(err)
			c.renderError()
		}
	}
}

// late is the settlement st of request id as the SettleQueue makes it,
// once the answer was handed out. A hold found gone was taken by an
// earlier attempt whose answer was lost (a database gone mid-commit):
// nothing more is written. (A hold another instance's sweep released
// under a lapsed lease is charged late by the store itself.)
func (s *logStage) late(id string, st store.Settlement) func(context.Context) error {
	return func(ctx context.Context) error {
		_, _, err := settle(ctx, s.store, s.log, id, st, false)
		if errors.Is(err, store.ErrNotFound) {
			s.log.Warn("a waiting settlement found its hold already closed; nothing more is written", "request_id", id)
			return nil
		}
		return err
	}
}

// settle makes one settlement, the row of request id. A charge the books
// refuse because it would take the balance out of money's range (an
// account already indebted by about 9.2e9 credits) is logged with cost 0
// instead: the row is written and the hold closed with a charge of 0, the
// charge that could not be booked named in the row's technical view and in
// the log, and an answer still held back marked as an internal error (the
// gateway does not hand out what it could not bill). The call is never
// lost, and the books stay exact. It returns the row written and whether
// its charge was left unbooked.
func settle(ctx context.Context, st store.Store, log hclog.Logger, id string, set store.Settlement, heldBack bool) (*store.LogRow, bool, error) {
	err := st.Settle(ctx, set)
	if !errors.Is(err, store.ErrOutOfRange) {
		return set.Row, false, err
	}
	log.Error("the charge would take the balance out of range; the call is logged with cost 0",
		"request_id", id, "account_id", set.Row.AccountID, "charge", set.Charge.String())
	row := *set.Row
	row.Cost = 0
	if heldBack {
		row.Status, row.ErrorCode, row.ErrorMessage = store.StatusError, apierr.InternalError, "the charge could not be booked"
	}
	if row.Tech != nil {
		tech := *row.Tech
		tech.Gateway = append(tech.Gateway[:len(tech.Gateway):len(tech.Gateway)],
			store.KV{K: "charge_not_booked", V: set.Charge.String() + " (out of the balance's range)"})
		row.Tech = &tech
	}
	set.Charge, set.Row = 0, &row
	if err := st.Settle(ctx, set); err != nil {
		return nil, true, err
	}
	return &row, true, nil
}

func (s *logStage) row(c *Call) *store.LogRow {
	now := s.now()
	if c.ModelID == "" {
		// Refused before the body was read (a 402 at authentication,
		// a missing anthropic-version, a bad field): the row keeps the
		// model the body names, so a model= filter finds it.
		if m := gjson.GetBytes(c.Body, "model"); m.Type == gjson.String {
			c.ModelID = m.Str
		}
	}
	// The row, its technical view and the view's lists share one
	// allocation.
	a := new(rowAlloc)
	r := &a.row
	*r = store.LogRow{
		AccountID:    c.Key.AccountID,
		CreatedAt:    now,
		SubmittedAt:  c.Start,
		KeyID:        c.Key.ID,
		KeyName:      c.Key.Name,
		KeyPrefix:    c.Key.Prefix,
		Model:        c.ModelID,
		Status:       c.Status,
		InputTokens:  c.Usage.InputTokens,
		OutputTokens: c.Usage.OutputTokens,
		CachedTokens: c.Usage.CachedTokens,
		Cost:         c.Charge,
		LatencyMS:    now.Sub(c.Start).Milliseconds(),
		RequestID:    c.ID,
		Attempts:     c.Attempts,
	}
	if c.Err != nil {
		r.ErrorCode = c.Err.Code
		r.ErrorMessage = c.Err.Message
	}
	if c.UpstreamCalls > 0 {
		a.attempts = c.UpstreamCalls
		r.AttemptsCount = &a.attempts
	}
	if j := c.Job; j != nil {
		r.UnitType = j.rowBilling().UnitType
		a.units = unitCount(j.Units)
		if c.Err != nil || !c.Served {
			a.units = 0
		}
		r.UnitCount = &a.units
		r.TaskID = j.TaskID
		if c.Err == nil && c.Served {
			r.ResultURLs = j.URLs
			r.ResultExpiresAt = j.ExpiresAt
		}
	}
	r.Tech = techView(c, &a.tech, &a.kv)
	return r
}

// rowAlloc holds a row with what it points to.
type rowAlloc struct {
	row      store.LogRow
	tech     store.TechView
	kv       [12]store.KV
	attempts int
	units    int64
}

// finishTask ends a job's task in the same store step as its settlement
// and row: an accepted task at its terminal state, or a task whose submit
// failed (never shown to the client: it is hidden).
func (s *logStage) finishTask(ctx context.Context, c *Call) {
	j := c.Job
	t := *j.Task
	if !store.TaskTerminal(t.Status) {
		t.Status, t.Hidden, t.CompletedAt = store.TaskFailed, true, s.now()
		t.Result = &store.TaskResult{}
		if c.Err != nil {
			t.Result.HTTPStatus, t.Result.Body = c.Err.Status, apierr.Body(c.Protocol, c.Err)
			t.Result.ErrorCode, t.Result.ErrorMessage = c.Err.Code, c.Err.Message
		}
	}
	row := s.row(c)
	row.TaskID = t.ID
	t.Result.Cost = c.Charge
	t.Result.Units = *row.UnitCount
	err := s.store.FinishTask(context.WithoutCancel(ctx), t, store.Settlement{HoldID: t.HoldID, Charge: c.Charge, Row: row})
	if errors.Is(err, store.ErrOutOfRange) {
		// As for a chat call: the task ends, its row at cost 0 naming the
		// charge the books could not take.
		s.log.Error("the charge would take the balance out of range; the task ends with cost 0",
			"task_id", t.ID, "account_id", row.AccountID, "charge", c.Charge.String())
		if row.Tech != nil {
			row.Tech.Gateway = append(row.Tech.Gateway, store.KV{K: "charge_not_booked", V: c.Charge.String() + " (out of the balance's range)"})
		}
		row.Cost, t.Result.Cost = 0, 0
		err = s.store.FinishTask(context.WithoutCancel(ctx), t, store.Settlement{HoldID: t.HoldID, Row: row})
	}
	switch {
	case err == nil:
		c.Row = row
		*j.Task = t
	case errors.Is(err, store.ErrLeaseLost):
		s.log.Warn("a task ended elsewhere first; nothing changed", "task_id", t.ID)
	default:
		s.log.Error("ending a task failed; its hold stays open", "task_id", t.ID, "error", err)
	}
	c.finishErr = err
	if err != nil && c.Err == nil && c.response != nil {
		c.Err = apierr.Internal(err)
		c.renderError()
	}
}

// techView is the row's technical detail (GET /v1/logs/{id}).
// t and kv are the view's storage: one backing array for the three
// lists (each full-sliced, so one that outgrows its part moves out
// instead of writing over the next).
func techView(c *Call, t *store.TechView, kv *[12]store.KV) *store.TechView {
	*t = store.TechView{Request: kv[0:0:4], Upstream: kv[4:4:6], Gateway: kv[6:6:12]}
	// The view's numbers share one string.
	var buf [64]byte
	b := strconv.AppendInt(buf[:0], int64(len(c.Body)), 10)
	endBody := len(b)
	if c.Req.MaxTokens > 0 {
		b = strconv.AppendInt(b, c.Req.MaxTokens, 10)
	}
	endMax := len(b)
	if c.Hold != nil {
		b = c.Hold.Amount.Append(b)
	}
	nums := string(b)
	if c.Job == nil {
		t.Request = append(t.Request,
			store.KV{K: "protocol", V: string(c.Protocol)},
			store.KV{K: "stream", V: strconv.FormatBool(c.Stream)},
		)
	}
	t.Request = append(t.Request, store.KV{K: "body_bytes", V: nums[:endBody]})
	if c.Req.MaxTokens > 0 {
		t.Request = append(t.Request, store.KV{K: "max_tokens", V: nums[endBody:endMax]})
	}
	if r := c.Route; r != nil {
		t.Upstream = append(t.Upstream, store.KV{K: "protocol", V: string(r.Protocol)})
		if r.bodyModel != "" {
			t.Upstream = append(t.Upstream, store.KV{K: "model", V: r.bodyModel})
		}
		if r.Translator != nil {
			t.Gateway = append(t.Gateway, store.KV{K: "translation", V: translate.HeaderValue(r.Translator.From(), r.Translator.To())})
		}
		if len(r.Warnings) > 0 {
			t.Gateway = append(t.Gateway, store.KV{K: "dropped_fields", V: strings.Join(r.Warnings, "; ")})
		}
	}
	if c.ReplayOf != "" {
		t.Gateway = append(t.Gateway, store.KV{K: "idempotent_replay_of", V: c.ReplayOf})
	}
	if c.Agent != nil {
		t.Gateway = append(t.Gateway, store.KV{K: "agent", V: c.Agent.ID})
		if len(c.AgentPages) > 0 {
			t.Gateway = append(t.Gateway, store.KV{K: "knowledge_pages", V: strings.Join(c.AgentPages, ",")})
		}
	}
	if c.Hold != nil {
		t.Gateway = append(t.Gateway, store.KV{K: "hold", V: nums[endMax:]})
	}
	if j := c.Job; j != nil {
		t.Kind = j.rowBilling().LogKind
		t.Request = append(t.Request, store.KV{K: "operation", V: j.Route.Operation}, store.KV{K: "async", V: strconv.FormatBool(j.Async)})
		if len(j.Files) > 0 {
			t.Request = append(t.Request, store.KV{K: "files", V: strconv.Itoa(len(j.Files))})
		}
		if c.Channel != "" {
			t.Upstream = append(t.Upstream, store.KV{K: "channel", V: c.Channel})
		}
		if j.Task != nil && j.Task.UpstreamRef != "" {
			t.Upstream = append(t.Upstream, store.KV{K: "job", V: j.Task.UpstreamRef})
		}
		if j.Plan != nil && len(j.Plan.Hold) > 0 {
			t.Gateway = append(t.Gateway, store.KV{K: "held_units", V: strconv.FormatInt(unitCount(j.Plan.Hold), 10)})
		}
		if j.Orphan != "" {
			// The submit got no answer: the channel may hold a job nobody polls.
			t.Gateway = append(t.Gateway, store.KV{K: "possible_orphan_on", V: j.Orphan})
		}
	}
	if c.Served && !c.Usage.Reported {
		t.Gateway = append(t.Gateway, store.KV{K: "usage", V: "estimated"})
	}
	if c.PastLimit {
		t.Gateway = append(t.Gateway, limitNote(c))
	}
	return t
}
