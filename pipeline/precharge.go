package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/redact"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// holdOutputCap bounds the output a hold covers when max tokens are omitted.
const holdOutputCap = 32768

// precharge reserves the worst-case cost: the input estimate (bytes / 4)
// plus the explicit max tokens, or min(default_max_tokens, 32768) when they
// are omitted (then the on-wire value is raised to the model ceiling).
type prechargeStage struct {
	cfg     *config.Config
	store   store.Store
	waiting *SettleQueue
	jobs    map[string]vendor.Jobs
	red     *redact.Redactor
}

func newPrecharge(d *Deps, _ map[string]string) (Stage, error) {
	red := d.Redact
	if red == nil {
		red = RedactorFor(d.Config)
	}
	return &prechargeStage{cfg: d.Config, store: d.Store, waiting: d.Settlements, jobs: d.Jobs, red: red}, nil
}

func (s *prechargeStage) Name() string { return "precharge" }

func (s *prechargeStage) Serve(ctx context.Context, c *Call) error {
	if c.Unpaid != nil {
		return c.Unpaid // no idempotency stage looked for an answer
	}
	if c.Job != nil {
		return s.holdJob(ctx, c)
	}
	m := c.Model
	c.Estimated = c.Req.InputEstimate()
	if c.Req.MaxTokens > 0 {
		c.HoldMax = c.Req.MaxTokens
	} else {
		c.HoldMax = int64(min(m.DefaultMaxTokens, holdOutputCap))
		c.WireMax = int64(m.MaxOutputTokens)
		if c.WireMax == 0 {
			c.WireMax = int64(m.DefaultMaxTokens)
		}
	}
	c.OutLimit = max(c.Req.MaxTokens, c.WireMax)
	amount, ok := TokenCost(m.Price, c.Estimated, 0, 0, c.HoldMax)
	if !ok {
		// Beyond the largest amount: more than any balance can be.
		return apierr.New(apierr.QuotaExceeded, "insufficient balance: this request may cost more than "+amount.String()+
			" credits ("+s.heldTokens(c)+"), more than any balance; lower "+maxTokensField(c.Protocol))
	}
	h := store.Hold{
		ID:          c.ID,
		AccountID:   c.Account.ID,
		KeyID:       c.Key.ID,
		KeyName:     c.Key.Name,
		KeyPrefix:   c.Key.Prefix,
		Model:       m.ID,
		Amount:      amount,
		SubmittedAt: c.Start,
		SpendCap:    c.Key.SpendCap,
	}
	return s.place(ctx, c, h, func() string { return s.heldTokens(c) }, func(available money.Nano) string {
		return s.tokensThatFit(c, available)
	})
}

// heldTokens says what a chat hold covers, in the client's own field
// names: the output reservation is the client's max tokens, or the
// model's default when the request sent none.
func (s *prechargeStage) heldTokens(c *Call) string {
	in := "an input estimate of " + english.Count(int(c.Estimated), "token")
	if c.Req.MaxTokens > 0 {
		return in + " plus " + english.Count(int(c.HoldMax), "output token") + " (" + maxTokensField(c.Protocol) + "), at the model's prices"
	}
	return in + " plus the model's default output reservation of " + english.Count(int(c.HoldMax), "token") +
		", held because the request sent no " + maxTokensField(c.Protocol)
}

// tokensThatFit says the largest max tokens the available balance pays
// for with this input, or that the input alone is beyond it.
func (s *prechargeStage) tokensThatFit(c *Call, available money.Nano) string {
	in, _ := TokenCost(c.Model.Price, c.Estimated, 0, 0, 0)
	rest, _ := money.Sub(available, in)
	n := money.CountWithin(rest, c.Model.Price.Output)
	switch {
	case n < 1:
		return "the input alone costs " + in.String() + " credits, more than that; shorten the conversation"
	case n < c.HoldMax:
		return maxTokensField(c.Protocol) + " up to " + strconv.FormatInt(n, 10) + " would fit"
	}
	return ""
}

// maxTokensField is the client protocol's name of its max tokens field.
func maxTokensField(p protocol.ID) string {
	switch p {
	case protocol.OpenAIResponses:
		return "max_output_tokens"
	case protocol.GeminiNative:
		return "generationConfig.maxOutputTokens"
	}
	return "max_tokens"
}

// holdJob holds what a job's planned units cost; an async job's hold
// names its task, which owns it from the moment the task is written.
func (s *prechargeStage) holdJob(ctx context.Context, c *Call) error {
	j := c.Job
	if err := resolveRefs(ctx, s.store, c); err != nil {
		return err
	}
	if j.recorded() {
		// The plugin renders the task's record with its id.
		j.TaskID = newTaskID(j.Billing.TaskPrefix)
	}
	amount, err := s.planJob(ctx, c)
	if err != nil {
		return err
	}
	h := store.Hold{
		ID: c.ID, AccountID: c.Account.ID, KeyID: c.Key.ID, KeyName: c.Key.Name, KeyPrefix: c.Key.Prefix,
		Model: c.Model.ID, UnitType: j.Billing.UnitType, Amount: amount, SubmittedAt: c.Start, TaskID: j.TaskID,
		SpendCap: c.Key.SpendCap,
	}
	return s.place(ctx, c, h, func() string { return "its units at the model's price" }, nil)
}

// place reserves h, or refuses the call with 402: beyond the account's
// available balance, or beyond the key's spend cap (cap minus spent minus
// the key's open holds, decided by the store with the hold). what says
// what the hold covers; fits, when set, says what would fit the
// available balance.
// what says what the hold covers; it is only worded for a refusal.
func (s *prechargeStage) place(ctx context.Context, c *Call, h store.Hold, what func() string, fits func(available money.Nano) string) error {
	if n := s.waiting.Holding(); n > 0 {
		// Fail closed: calls already served wait for their charges to be
		// written; no new one is served until they are.
		return storeFailing(fmt.Errorf("%w: %d settlements wait for the store", store.ErrUnavailable, n))
	}
	w, err := s.store.PlaceHold(ctx, h)
	if errors.Is(err, store.ErrSpendCap) {
		return apierr.New(apierr.QuotaExceeded, "spend cap reached: this request may cost up to "+h.Amount.String()+
			" credits ("+what()+"), more than is left of this key's spend cap of "+h.SpendCap.String()+
			" (the cap minus what the key spent and holds for calls in flight); ask an admin to raise it")
	}
	if errors.Is(err, store.ErrInsufficient) {
		msg := "insufficient balance: this request may cost up to " + h.Amount.String() + " credits (" + what() + "), more than the account's available balance"
		// The balance is read again for the message only: a store that
		// fails here leaves the figures out, not the refusal.
		if w, err := s.store.GetWallet(ctx, h.AccountID); err == nil {
			available := max(w.Available(), 0)
			msg += " of " + available.String() + " credits"
			if fits != nil {
				if f := fits(available); f != "" {
					msg += "; " + f
				}
			}
		}
		return apierr.New(apierr.QuotaExceeded, msg+"; "+TopUpHint(s.cfg, c.Request))
	}
	if errors.Is(err, store.ErrUnavailable) {
		// Fail closed: a call whose charge cannot be recorded is not served.
		return storeFailing(err)
	}
	if err != nil {
		return apierr.Internal(err)
	}
	c.Wallet = w
	c.hold = h
	c.Hold = &c.hold
	return nil
}

// TopUpHint says where credit comes from: the operator's top-up page
// (server.billing_url), else the console's billing page when the console
// runs (on its own listener, or on the API's: then at public_url, else
// the host r reached), else the operator.
func TopUpHint(cfg *config.Config, r *http.Request) string {
	switch {
	case cfg == nil:
	case cfg.Server.BillingURL != "":
		return "top up at " + cfg.Server.BillingURL
	case cfg.Console.Enabled:
		base := cfg.Server.PublicURL
		scheme := "http"
		if r != nil && r.TLS != nil {
			scheme = "https"
		}
		switch {
		case cfg.Console.Listen != "":
			base = scheme + "://" + cfg.Console.Listen
		case base == "" && r != nil:
			base = scheme + "://" + r.Host
		}
		return "top up from the console's billing page, " + base + "/console/billing"
	}
	return "ask the gateway's operator to add credit"
}

// storeFailing is the refusal of a call whose charge the store cannot
// record now.
func storeFailing(cause error) *apierr.Error {
	e := apierr.New(apierr.InternalError, "the gateway's store is failing, so the charge of this call could not be recorded and the call was not served; try again later")
	e.Cause = cause
	return e
}

// TokenCost prices token usage: cached input at cached_input (input when
// unset), cache writes at cache_write (input when unset), the rest of the
// input at input, output at output. input includes cached and written tokens.
// Each part is rounded half up to the nano. ok is false when the cost is
// beyond money.Max; the cost is then money.Max.
func TokenCost(p config.Price, input, cached, cacheWrite, output int64) (cost money.Nano, ok bool) {
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	writePrice := p.CacheWrite
	if writePrice == 0 {
		writePrice = p.Input
	}
	plain := max(input-cached-cacheWrite, 0)
	for _, part := range [...]struct {
		n     int64
		price money.Nano
	}{{plain, p.Input}, {cached, cachedPrice}, {cacheWrite, writePrice}, {output, p.Output}} {
		c, fits := money.MulPerMillion(part.n, part.price)
		if fits {
			cost, fits = money.Add(cost, c)
		}
		if !fits {
			return money.Max, false
		}
	}
	return cost, true
}
