package apierr

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The spec's truth table, row by row, as the spec writes it.
var truthTable = []struct {
	status                           int
	code, openai, messages, geminiSt string
}{
	{400, "model_not_found", "invalid_request_error", "not_found_error", "NOT_FOUND"},
	{400, "model_not_allowed", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	{400, "invalid_request", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	{400, "tool_not_supported", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	{400, "invalid_idempotency_key", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	{409, "idempotency_key_reuse", "invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	{409, "idempotency_in_flight", "invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	{409, "idempotency_response_not_cached", "invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	{401, "invalid_api_key", "authentication_error", "authentication_error", "UNAUTHENTICATED"},
	{402, "quota_exceeded", "insufficient_quota", "billing_error", "RESOURCE_EXHAUSTED"},
	{403, "permission_denied", "permission_error", "permission_error", "PERMISSION_DENIED"},
	{429, "rate_limit_exceeded", "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"},
	{500, "internal_error", "server_error", "api_error", "INTERNAL"},
	{502, "upstream_unreachable", "api_error", "api_error", "UNAVAILABLE"},
	{503, "no_channel_available", "server_error", "overloaded_error", "UNAVAILABLE"},
	{504, "upstream_timeout", "api_error", "api_error", "DEADLINE_EXCEEDED"},
	// Errors rule 8 (logs API), with PRODUCT.md §7's types.
	{404, "log_not_found", "invalid_request_error", "not_found_error", "NOT_FOUND"},
	{429, "logs_rate_limited", "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"},
}

// shapes decodes a body in each protocol's shape, refusing unknown fields:
// no request_id or other extra field rides along (errors rule 5).
type openaiShape struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

type messagesShape struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type geminiShape struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func TestTruthTableShapes(t *testing.T) {
	for _, r := range truthTable {
		t.Run(r.code, func(t *testing.T) {
			e := New(r.code, "why it failed")
			if e.Status != r.status {
				t.Fatalf("status %d, want %d", e.Status, r.status)
			}
			checkShapes(t, e, r.code, r.openai, r.messages, r.geminiSt)
		})
	}
}

// Errors rule 4: an upstream status passes through with the mapped
// completions-style code and type; the other shapes name the status.
func TestFromUpstream(t *testing.T) {
	for _, c := range []struct {
		status                           int
		code, openai, messages, geminiSt string
	}{
		{400, "invalid_request", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
		{422, "invalid_request", "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
		{401, "invalid_api_key", "authentication_error", "authentication_error", "UNAUTHENTICATED"},
		{403, "permission_denied", "permission_error", "permission_error", "PERMISSION_DENIED"},
		{404, "not_found", "invalid_request_error", "not_found_error", "NOT_FOUND"},
		{429, "rate_limit_exceeded", "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"},
		{500, "upstream_error", "api_error", "api_error", "INTERNAL"},
		{503, "upstream_error", "api_error", "overloaded_error", "UNAVAILABLE"},
		{529, "upstream_error", "api_error", "overloaded_error", "UNAVAILABLE"},
		{502, "upstream_error", "api_error", "api_error", "UNAVAILABLE"},
		{504, "upstream_error", "api_error", "timeout_error", "DEADLINE_EXCEEDED"},
		{413, "upstream_error", "api_error", "request_too_large", "INVALID_ARGUMENT"},
		{402, "upstream_error", "api_error", "billing_error", "RESOURCE_EXHAUSTED"},
		{409, "upstream_error", "api_error", "invalid_request_error", "ALREADY_EXISTS"},
	} {
		e := FromUpstream(c.status, "")
		if e.Status != c.status || e.Message == "" {
			t.Errorf("%d: %+v", c.status, e)
		}
		checkShapes(t, e, c.code, c.openai, c.messages, c.geminiSt)
	}
}

// A table code lent to another status (a body over the cap, a method the
// route lacks) keeps its completions-style code and type; the other shapes
// name the status, as their vendors do.
func TestCodeAtAnotherStatus(t *testing.T) {
	for _, c := range []struct {
		status             int
		messages, geminiSt string
	}{
		{413, "request_too_large", "INVALID_ARGUMENT"},
		{405, "invalid_request_error", "INVALID_ARGUMENT"},
		{408, "invalid_request_error", "INVALID_ARGUMENT"},
	} {
		e := New(InvalidRequest, "no")
		e.Status = c.status
		checkShapes(t, e, InvalidRequest, "invalid_request_error", c.messages, c.geminiSt)
	}
}

func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	e := New(RateLimitExceeded, "slow down").WithHeader("Retry-After", "3")
	Write(w, protocol.GeminiNative, e)
	if w.Code != 429 || w.Header().Get("Retry-After") != "3" || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	var g geminiShape
	decodeStrict(t, w.Body.Bytes(), &g)
	if g.Error.Code != 429 || g.Error.Status != "RESOURCE_EXHAUSTED" {
		t.Fatalf("%s", w.Body)
	}
	// A 500's cause stays in the logs.
	in := Internal(errString("disk on fire at /var/lib/secret"))
	if b := string(Body(protocol.OpenAIChat, in)); strings.Contains(b, "secret") || in.Status != 500 {
		t.Fatalf("%d %s", in.Status, b)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// checkShapes checks e in the three shapes: the completions-style code and
// type (responses-style too), the messages-style type, and the
// generate-content status with e's status as its code.
func checkShapes(t *testing.T, e *Error, code, openai, messages, geminiSt string) {
	t.Helper()
	for _, p := range []protocol.ID{protocol.OpenAIChat, protocol.OpenAIResponses, ""} {
		var o openaiShape
		decodeStrict(t, Body(p, e), &o)
		if o.Error.Code != code || o.Error.Type != openai || o.Error.Message != e.Message {
			t.Errorf("%d %q: %+v", e.Status, p, o)
		}
	}
	var m messagesShape
	decodeStrict(t, Body(protocol.AnthropicMessages, e), &m)
	if m.Type != "error" || m.Error.Type != messages || m.Error.Message != e.Message {
		t.Errorf("%d messages: %+v", e.Status, m)
	}
	var g geminiShape
	decodeStrict(t, Body(protocol.GeminiNative, e), &g)
	if g.Error.Code != e.Status || g.Error.Status != geminiSt || g.Error.Message != e.Message {
		t.Errorf("%d generate-content: %+v", e.Status, g)
	}
}
