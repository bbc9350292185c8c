package pipeline

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/store"
)

// settle works out what the call cost and how it ended: actual usage times
// the model's prices (the cached rate for cached input), or, when the
// upstream reported no usage, the pre-charge input estimate and output
// estimated from the characters emitted; output past the limit sent
// upstream is not billed. It never gates again: the charge may exceed the
// hold. The log stage commits it.
type settleStage struct {
	log hclog.Logger
}

func newSettle(d *Deps, _ map[string]string) (Stage, error) {
	return settleStage{log: d.Logger.Named("settle")}, nil
}

func (settleStage) Name() string { return "settle" }

func (s settleStage) Serve(ctx context.Context, c *Call) error {
	s.Finish(ctx, c)
	return nil
}

func (s settleStage) Finish(_ context.Context, c *Call) {
	c.Status = rowStatus(c)
	if c.Job != nil {
		// A job is charged what it delivered, never more than it held.
		if c.Err == nil && c.Served {
			c.Charge = jobCharge(c)
		}
		return
	}
	if c.Model == nil || !c.Served {
		return
	}
	u := c.Usage
	if !u.Reported {
		// A stream cut before its final usage: keep what the upstream did
		// report (messages-style streams give input counts up front) and
		// estimate the rest.
		if u.InputTokens == 0 {
			u.InputTokens = c.Estimated
		}
		u.InputTokens = max(u.InputTokens, u.CachedTokens+u.CacheWriteTokens)
		u.OutputTokens = max(u.OutputTokens, (c.OutputChars+3)/4)
	}
	if c.OutLimit > 0 && u.OutputTokens > c.OutLimit {
		// Output past the limit sent upstream is never billed.
		u.OutputTokens, u.ReasoningTokens = c.OutLimit, min(u.ReasoningTokens, c.OutLimit)
		c.PastLimit = true
	}
	c.Usage = u
	var ok bool
	c.Charge, ok = TokenCost(c.Model.Price, u.InputTokens, u.CachedTokens, u.CacheWriteTokens, u.OutputTokens)
	if !ok {
		// Fail closed: a cost beyond the largest amount is charged the
		// largest amount, more than any balance holds.
		s.log.Error("the call's cost is beyond the largest amount; charging the largest amount",
			"request_id", c.ID, "input_tokens", u.InputTokens, "output_tokens", u.OutputTokens)
	}
}

// rowStatus is the log row's status: interrupted for a client that went away
// or a gateway timeout, error for an upstream failure, rejected for a call
// the gateway refused before reaching an upstream.
func rowStatus(c *Call) string {
	if c.Job != nil && c.Job.Interrupted {
		return store.StatusInterrupted // a task a restart cut: no error code
	}
	if c.Err == nil {
		return store.StatusSuccess
	}
	if c.Job != nil && c.Job.Rejected {
		return store.StatusRejected // the upstream refused the submit
	}
	switch c.Err.Code {
	case apierr.ClientClosed, apierr.UpstreamTimeout:
		return store.StatusInterrupted
	}
	if c.UpstreamTried || c.Err.Status >= 500 && c.Err.Code != apierr.NoChannelAvailable {
		return store.StatusError
	}
	return store.StatusRejected
}
