package pipeline

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/badgerstore"
)

// idemRig runs the idempotency stage alone on a store, with a clock the
// test moves: the spec's 10-minute hold and 7-day retention, never waited.
type idemRig struct {
	t     *testing.T
	stage *idempotencyStage
	now   time.Time
	n     int
}

func newIdemRig(t *testing.T) *idemRig {
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &idemRig{t: t, now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	r.stage = &idempotencyStage{store: st, now: func() time.Time { return r.now }, log: hclog.NewNullLogger(), maxBody: idemMaxBody}
	return r
}

// call is a billed chat call of account acct with Idempotency-Key key,
// answered through w.
func (r *idemRig) call(acct, key, body string, w http.ResponseWriter) *Call {
	r.n++
	req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	c := &Call{ID: "req-" + strconv.Itoa(r.n), Kind: KindChat, Protocol: protocol.OpenAIChat, Billed: true, Request: req,
		Body: []byte(body), Key: &store.Key{ID: "k-" + acct, AccountID: acct}}
	c.W = c.Writer(w)
	return c
}

// start runs the stage: nil when the call took the key and runs.
func (r *idemRig) start(c *Call) error {
	r.t.Helper()
	err := r.stage.Serve(context.Background(), c)
	if err == nil && c.ReplayOf != "" {
		return errReplayed
	}
	return err
}

var errReplayed = errors.New("replayed")

// end answers a running call with status and body, then runs what the
// chain runs after it.
func (r *idemRig) end(c *Call, status int, body string) {
	if status >= 400 {
		c.Err = &apierr.Error{Status: status, Code: "x", Message: body}
	}
	c.W.Header().Set("Content-Type", "application/json")
	c.W.WriteHeader(status)
	_, _ = c.W.Write([]byte(body))
	for i := len(c.deferred) - 1; i >= 0; i-- {
		c.deferred[i]()
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil || apierr.As(err).Code != code {
		t.Fatalf("err %v, want %s", err, code)
	}
}

// A key held by a call that never ended (a gateway that died, a
// client-side cut-off the call did not outlive) frees itself after at
// most 10 minutes; a kept answer is replayed for 7 days, then forgotten.
func TestIdempotencyHoldAndRetention(t *testing.T) {
	r := newIdemRig(t)
	body := `{"model":"m","messages":[]}`
	held := r.call("a", "k", body, httptest.NewRecorder())
	if err := r.start(held); err != nil {
		t.Fatal(err)
	}
	// The call never ends: nothing frees the key but its lease.
	r.now = r.now.Add(10*time.Minute - time.Second)
	wantCode(t, r.start(r.call("a", "k", body, httptest.NewRecorder())), apierr.IdempotencyInFlight)
	r.now = r.now.Add(time.Second)
	retry := r.call("a", "k", body, httptest.NewRecorder())
	if err := r.start(retry); err != nil {
		t.Fatalf("after 10 minutes the key is still held: %v", err)
	}
	r.end(retry, 200, `{"id":"first"}`)
	// The dead call's owner can no longer keep or free the key.
	r.end(held, 200, `{"id":"late"}`)

	kept := r.now
	r.now = kept.Add(7*24*time.Hour - time.Second)
	rec := httptest.NewRecorder()
	c := r.call("a", "k", body, rec)
	if err := r.start(c); err != errReplayed || rec.Body.String() != `{"id":"first"}` || rec.Header().Get("Idempotency-Replayed") != "true" {
		t.Fatalf("within 7 days: %v %d %q %v", err, rec.Code, rec.Body, rec.Header())
	}
	r.now = kept.Add(7 * 24 * time.Hour)
	if err := r.start(r.call("a", "k", body, httptest.NewRecorder())); err != nil {
		t.Fatalf("after 7 days the key is still kept: %v", err)
	}
}

// goneWriter is a client that went away: every write fails.
type goneWriter struct{ h http.Header }

func (g *goneWriter) Header() http.Header     { return g.h }
func (*goneWriter) WriteHeader(int)           {}
func (*goneWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A call that succeeded (and so was charged) keeps its answer even when
// the client was gone by the time it was written: the retry gets the
// answer, not a second run and charge. A failure frees the key.
func TestIdempotencyKeepsAnAnswerTheClientLost(t *testing.T) {
	r := newIdemRig(t)
	body := `{"model":"m"}`
	lost := r.call("a", "k", body, &goneWriter{h: http.Header{}})
	if err := r.start(lost); err != nil {
		t.Fatal(err)
	}
	r.end(lost, 200, `{"answer":42}`)
	if !lost.W.ClientGone() {
		t.Fatal("the writer did not fail")
	}
	rec := httptest.NewRecorder()
	if err := r.start(r.call("a", "k", body, rec)); err != errReplayed || rec.Code != 200 || rec.Body.String() != `{"answer":42}` {
		t.Fatalf("retry: %v %d %q", err, rec.Code, rec.Body)
	}

	failed := r.call("a", "f", body, httptest.NewRecorder())
	if err := r.start(failed); err != nil {
		t.Fatal(err)
	}
	r.end(failed, 503, `{"error":{}}`)
	if err := r.start(r.call("a", "f", body, httptest.NewRecorder())); err != nil {
		t.Fatalf("a failure kept the key: %v", err)
	}
}

// At a balance of 0 or below (auth leaves the refusal to this stage when
// the call has a key), a kept answer is still replayed and a running call
// is still 409; a key with nothing under it is the 402, and is not kept.
func TestIdempotencyBeforeTheZeroBalanceRefusal(t *testing.T) {
	r := newIdemRig(t)
	body := `{"model":"m"}`
	broke := func(c *Call) *Call {
		c.Unpaid = apierr.New(apierr.QuotaExceeded, "insufficient balance")
		return c
	}
	first := r.call("a", "done", body, httptest.NewRecorder())
	if err := r.start(first); err != nil {
		t.Fatal(err)
	}
	r.end(first, 200, `{"ok":true}`)
	rec := httptest.NewRecorder()
	if err := r.start(broke(r.call("a", "done", body, rec))); err != errReplayed || rec.Body.String() != `{"ok":true}` {
		t.Fatalf("replay at zero balance: %v %q", err, rec.Body)
	}
	running := r.call("a", "run", body, httptest.NewRecorder())
	if err := r.start(running); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.start(broke(r.call("a", "run", body, httptest.NewRecorder()))), apierr.IdempotencyInFlight)
	// Another body under a kept key is not a retry: the 402 comes first.
	wantCode(t, r.start(broke(r.call("a", "done", `{"model":"other"}`, httptest.NewRecorder()))), apierr.QuotaExceeded)
	wantCode(t, r.start(broke(r.call("a", "new", body, httptest.NewRecorder()))), apierr.QuotaExceeded)
	if err := r.start(r.call("a", "new", body, httptest.NewRecorder())); err != nil {
		t.Fatalf("the refused call kept its key: %v", err)
	}
}
