package pipeline

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/store"
)

// log commits the call: the hold is closed, the charge booked and the usage
// row written in one store step, so a row never exists without its charge
// nor a charge without its row. Every call whose key is known gets a row.
// When the commit fails, a response still held back is replaced by a 500:
// the gateway does not hand out an answer it could not bill.
type logStage struct {
	store store.Store
	now   func() time.Time
	log   hclog.Logger
}

func newLog(d *Deps, _ map[string]string) (Stage, error) {
	return &logStage{store: d.Store, now: d.Now, log: d.Logger.Named("ledger")}, nil
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
	row := s.row(c)
	st := store.Settlement{Charge: c.Charge, Row: row}
	if c.Hold != nil {
		st.HoldID = c.Hold.ID
	} else {
		st.Charge = 0
		row.Cost = 0
	}
	// The client may be gone; the ledger must still be written.
	if err := s.store.Settle(context.WithoutCancel(ctx), st); err != nil {
		s.log.Error("settlement failed; the hold stays open for recovery", "request_id", c.ID, "error", err)
		if c.Err == nil && c.response != nil {
			c.Err = apierr.Internal(err)
			c.renderError()
		}
		return
	}
	c.Row = row
	s.log.Debug("settled", "request_id", c.ID, "status", row.Status, "cost", row.Cost.String(), "model", row.Model)
}

func (s *logStage) row(c *Call) *store.LogRow {
	now := s.now()
	r := &store.LogRow{
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
		n := c.UpstreamCalls
		r.AttemptsCount = &n
	}
	r.Tech = techView(c)
	return r
}

// techView is the row's technical detail (GET /v1/logs/{id}).
func techView(c *Call) *store.TechView {
	t := &store.TechView{Request: []store.KV{}, Upstream: []store.KV{}, Gateway: []store.KV{}}
	t.Request = append(t.Request,
		store.KV{K: "protocol", V: string(c.Protocol)},
		store.KV{K: "stream", V: strconv.FormatBool(c.Stream)},
		store.KV{K: "body_bytes", V: strconv.Itoa(len(c.Body))},
	)
	if c.Req.MaxTokens > 0 {
		t.Request = append(t.Request, store.KV{K: "max_tokens", V: strconv.FormatInt(c.Req.MaxTokens, 10)})
	}
	if r := c.Route; r != nil {
		t.Upstream = append(t.Upstream, store.KV{K: "protocol", V: string(r.Protocol)})
		if r.bodyModel != "" {
			t.Upstream = append(t.Upstream, store.KV{K: "model", V: r.bodyModel})
		}
		if r.Translator != nil {
			t.Gateway = append(t.Gateway, store.KV{K: "translation", V: string(r.Translator.From()) + "_to_" + string(r.Translator.To())})
		}
		if len(r.Warnings) > 0 {
			t.Gateway = append(t.Gateway, store.KV{K: "dropped_fields", V: strings.Join(r.Warnings, "; ")})
		}
	}
	if c.ReplayOf != "" {
		t.Gateway = append(t.Gateway, store.KV{K: "idempotent_replay_of", V: c.ReplayOf})
	}
	if c.Hold != nil {
		t.Gateway = append(t.Gateway, store.KV{K: "hold", V: c.Hold.Amount.String()})
	}
	if c.Served && !c.Usage.Reported {
		t.Gateway = append(t.Gateway, store.KV{K: "usage", V: "estimated"})
	}
	return t
}
