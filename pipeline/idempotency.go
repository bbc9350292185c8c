package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/store"
)

// Idempotency-Key on the billed endpoints (spec: Idempotency; PRODUCT §7:
// the four chat endpoints included). The first call with a key takes it
// for the account and runs; a 2xx answer it gives in full is kept for 7
// days and replayed verbatim (a stream as its recorded events) to a call
// with the same key and body, without a second charge. A failed call
// frees the key. A process that dies mid-call leaves the key held until
// the lease (10 minutes) runs out: "a key held after a client-side
// cut-off frees itself after at most 10 minutes".
const (
	idemRetention = 7 * 24 * time.Hour
	idemLease     = 10 * time.Minute
	// idemMaxBody is the largest answer kept for replay; a larger one
	// answers later calls with 409 idempotency_response_not_cached.
	idemMaxBody = 8 << 20
)

type idempotencyStage struct {
	store   store.Store
	now     func() time.Time
	log     hclog.Logger
	maxBody int
}

func newIdempotency(d *Deps, settings map[string]string) (Stage, error) {
	s := &idempotencyStage{store: d.Store, now: d.Now, log: d.Logger.Named("idempotency"), maxBody: idemMaxBody}
	if v, ok := settings["max_response_bytes"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max_response_bytes must be a byte count, not %q", v)
		}
		s.maxBody = n
	}
	return s, nil
}

func (*idempotencyStage) Name() string { return "idempotency" }

func (s *idempotencyStage) Serve(ctx context.Context, c *Call) error {
	vs, present := c.Request.Header["Idempotency-Key"]
	if !present {
		return nil
	}
	if len(vs) != 1 || !ValidIdempotencyKey(vs[0]) {
		return apierr.New(apierr.InvalidIdempotencyKey,
			"Idempotency-Key must be 1 to 200 printable ASCII characters without spaces")
	}
	if !c.Billed || c.Key == nil || c.W == nil {
		return nil
	}
	key, account := vs[0], c.Key.AccountID
	now := s.now()
	mine := store.IdemRecord{Owner: c.ID, Fingerprint: fingerprint(c), State: store.IdemRunning,
		CreatedAt: now, ExpiresAt: now.Add(idemLease)}
	rec, won, err := s.store.ClaimIdempotencyKey(ctx, account, key, mine, now)
	if err != nil {
		return apierr.Internal(err)
	}
	if c.Unpaid != nil {
		return s.unpaid(ctx, c, account, key, won, &rec, mine)
	}
	if !won {
		return s.answer(c, key, &rec, mine.Fingerprint)
	}
	c.W.capture = &capture{limit: s.maxBody}
	c.Defer(func() { s.finish(ctx, c, account, key, mine) })
	return nil
}

// unpaid answers a call at an exhausted balance: the retry of a call
// with this key and body gets what that call's retry gets (its answer, or
// the 409 of one still running or too large to keep); anything else is
// the 402, and the key it claimed for the lookup is freed.
func (s *idempotencyStage) unpaid(ctx context.Context, c *Call, account, key string, won bool, rec *store.IdemRecord, mine store.IdemRecord) error {
	if won {
		s.release(ctx, c, account, key, mine.Owner)
		return c.Unpaid
	}
	if string(rec.Fingerprint) != string(mine.Fingerprint) {
		return c.Unpaid
	}
	c.Unpaid = nil
	return s.answer(c, key, rec, mine.Fingerprint)
}

// answer handles a key another call holds or held.
func (s *idempotencyStage) answer(c *Call, key string, rec *store.IdemRecord, fp []byte) error {
	if string(rec.Fingerprint) != string(fp) {
		return apierr.Newf(apierr.IdempotencyKeyReuse,
			"Idempotency-Key %q was used with a different request; use a new key for a new request", key)
	}
	switch rec.State {
	case store.IdemRunning:
		return apierr.Newf(apierr.IdempotencyInFlight,
			"a call with Idempotency-Key %q is still running; retry when it has finished", key)
	case store.IdemTooLarge:
		return apierr.Newf(apierr.IdempotencyResponseNotCached,
			"the answer to Idempotency-Key %q was too large to keep for replay; find the call with GET /v1/logs?ref=%s", key, rec.Owner)
	}
	h := c.W.Header()
	for k, v := range rec.Header {
		h[k] = v
	}
	h.Set("Idempotency-Replayed", "true")
	c.ReplayOf = rec.Owner
	c.W.WriteHeader(rec.Status)
	_, _ = c.W.Write(rec.Body)
	return nil
}

// finish keeps a complete 2xx answer for replay, or frees the key.
func (s *idempotencyStage) finish(ctx context.Context, c *Call, account, key string, mine store.IdemRecord) {
	ctx = context.WithoutCancel(ctx)
	cp, w := c.W.capture, c.W
	c.W.capture = nil
	// A call that succeeded was charged: its answer is kept even when the
	// client went away while it was written, so a retry is not charged
	// again. Any other outcome frees the key.
	if c.Err != nil || w.Status() < 200 || w.Status() > 299 {
		s.release(ctx, c, account, key, mine.Owner)
		return
	}
	now := s.now()
	rec := mine
	rec.CreatedAt, rec.ExpiresAt = now, now.Add(idemRetention)
	if cp.over || c.Job != nil && c.Job.Inline {
		// An answer with its result inline (base64 images) is not kept.
		rec.State = store.IdemTooLarge
	} else {
		rec.State, rec.Status, rec.Header, rec.Body = store.IdemDone, w.Status(), cp.header, cp.body
	}
	if err := s.store.CompleteIdempotencyKey(ctx, account, key, rec); err != nil {
		s.log.Error("could not keep the answer for replay", "request_id", c.ID, "error", err)
	}
}

func (s *idempotencyStage) release(ctx context.Context, c *Call, account, key, owner string) {
	if err := s.store.ReleaseIdempotencyKey(context.WithoutCancel(ctx), account, key, owner); err != nil {
		s.log.Error("could not free an idempotency key; it frees itself when its lease ends",
			"request_id", c.ID, "error", err)
	}
}

// fingerprint identifies the request: method, path (the model of a
// generate-content call is in it) and the body as JSON, canonical (key
// order and spacing do not matter); a multipart body by its text fields and
// each file's SHA-256, so a retry with a new boundary is the same request.
func fingerprint(c *Call) []byte {
	h := sha256.New()
	h.Write([]byte(c.Request.Method))
	h.Write([]byte{0})
	h.Write([]byte(c.Request.URL.Path))
	h.Write([]byte{0})
	body := c.Body
	if c.ClientBody != nil {
		body = c.ClientBody // the body as sent, before the agent stage rewrote it
	}
	if c.Job != nil && c.Job.Body != nil {
		body = c.Job.Body
	}
	h.Write(canonicalJSON(body))
	if c.Job != nil {
		for _, f := range c.Job.Files {
			sum := f.SHA256 // streamed uploads carry their digest
			if f.Data != nil {
				d := sha256.Sum256(f.Data)
				sum = hex.EncodeToString(d[:])
			}
			h.Write([]byte{0})
			h.Write([]byte(f.Field))
			h.Write([]byte{0})
			h.Write([]byte(sum))
		}
	}
	return h.Sum(nil)
}

// canonicalJSON re-encodes a JSON body with sorted keys and no spacing;
// a body that is not JSON is used as it is.
func canonicalJSON(b []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// capture records an answer as the client gets it, up to limit bytes.
type capture struct {
	limit  int
	over   bool
	header http.Header
	body   []byte
}

// replayHeader reports whether a response header is part of the answer
// (kept for replay) rather than of this one delivery.
func replayHeader(k string) bool {
	switch k {
	case "Date", "Content-Length", "Transfer-Encoding", "Connection", "Retry-After",
		"X-Request-Id", "X-Gateway-Trace", "Idempotency-Replayed":
		return false
	}
	return !strings.HasPrefix(k, "X-Ratelimit-")
}

func (cp *capture) start(h http.Header) {
	cp.header = make(http.Header, len(h))
	for k, v := range h {
		if k = http.CanonicalHeaderKey(k); replayHeader(k) {
			cp.header[k] = append([]string(nil), v...)
		}
	}
}

func (cp *capture) write(b []byte) {
	if cp.over {
		return
	}
	if len(cp.body)+len(b) > cp.limit {
		cp.over, cp.body = true, nil
		return
	}
	cp.body = append(cp.body, b...)
}

// ValidIdempotencyKey reports whether k is 1 to 200 printable, non-space ASCII characters.
func ValidIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 200 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}
