package pipeline

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/translate"
	"github.com/tollgate-gw/tollgate/store"
)

// Output past the limit the gateway sent upstream is the upstream's fault
// (PRODUCT.md §7, Wallet and billing): the gateway stops relaying there,
// ends the answer as the protocol ends a stop at max tokens, and bills
// no more than the limit. It cannot count an upstream's tokens, so it
// takes the upstream's own count when the stream reports a running one,
// and otherwise counts the characters: past charsPerToken a token (twice
// the estimate's four, so an honest answer of long words is never cut)
// plus limitSlack, the upstream has run past the limit.
const (
	charsPerToken = 8
	limitSlack    = 64
)

// charCap is how many characters of output limit tokens may hold.
func charCap(limit int64) int64 { return limit*charsPerToken + limitSlack }

// pastLimit reports whether output of chars characters, with a count of
// reported tokens (0 when none), ran past limit.
func pastLimit(limit, chars, reported int64) bool {
	return limit > 0 && (chars > charCap(limit) || reported > limit)
}

// stopUsage is the usage a stopped answer reports and is billed at: the
// input as the upstream reported it (else the estimate), the output at
// the limit.
func stopUsage(c *Call, u protocol.Usage) protocol.Usage {
	if u.InputTokens == 0 {
		u.InputTokens = c.Estimated
	}
	u.InputTokens = max(u.InputTokens, u.CachedTokens+u.CacheWriteTokens)
	u.OutputTokens = c.OutLimit
	u.ReasoningTokens = min(u.ReasoningTokens, c.OutLimit)
	return u
}

// errStopped ends a relay that stopped the upstream at the limit;
// errBroken one whose upstream sent an event that does not parse.
var (
	errStopped = errors.New("the upstream ran past the output limit; stopped there")
	errBroken  = errors.New("the upstream sent an event that does not parse")
)

// brokenStream is the row's error of a stream ended by an event that does
// not parse (the spec's mid-stream failure: the client's stream just ends).
func brokenStream() *apierr.Error {
	return &apierr.Error{Status: http.StatusBadGateway, Code: apierr.UpstreamError, Type: "api_error",
		Message: "the upstream sent a stream event that is not valid JSON; the stream was ended there"}
}

// brokenAnswer is the error of a whole answer that does not parse.
func brokenAnswer() *apierr.Error {
	return &apierr.Error{Status: http.StatusBadGateway, Code: apierr.UpstreamError, Type: "api_error",
		Message: "the upstream's answer is not valid JSON"}
}

// stop ends the client's stream at the limit, as its protocol ends a stop
// at max tokens: through the translator, or in the upstream's own
// protocol (which is then the client's).
func (r *relay) stop() error {
	c := r.c
	c.PastLimit = true
	r.stopped = true
	u := stopUsage(c, r.track.Usage())
	var err error
	if r.tr != nil {
		err = r.tr.Stop(u, r.emit)
	} else {
		err = r.track.Stop(codec.StopOptions{Model: c.ModelID, RequestID: c.ID, Created: c.Start, Usage: u,
			IncludeUsage: c.Req.IncludeUsage}, r.out.Append)
	}
	if err != nil {
		return err
	}
	return errStopped
}

// cutAnswer cuts a whole answer that ran past the limit: to the share of
// its characters the limit holds by the upstream's own count, or to what
// the limit may hold when it reported none. ok is false when the answer
// is within the limit. body passed codec.ValidObject.
func cutAnswer(c *Call, body []byte) (out []byte, ok bool, err error) {
	limit, chars, u := c.OutLimit, c.OutputChars, c.Usage
	if !pastLimit(limit, chars, u.OutputTokens) {
		return nil, false, nil
	}
	keep := min(chars, charCap(limit))
	if u.OutputTokens > limit {
		keep = min(keep, chars*limit/u.OutputTokens)
	}
	c.PastLimit = true
	opts := c.responseOptions()
	opts.Checked = true // a whole answer dispatch checked
	out, err = translate.CutAnswer(c.Protocol, c.Route.Protocol, body, keep, stopUsage(c, u), opts)
	return out, true, err
}

// limitNote is the row's technical view of an upstream that ran past the
// limit.
func limitNote(c *Call) store.KV {
	return store.KV{K: "output_limit", V: strconv.FormatInt(c.OutLimit, 10) +
		" tokens: the upstream ran past it; its output was stopped and billed there"}
}
