// Package apierr is the gateway's one error type and its encoder for the
// three body shapes of the spec's truth table: completions-style (also used
// by responses-style, media, logs and agents), messages-style and
// generate-content-style.
package apierr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Codes of the truth table and the logs API.
const (
	ModelNotFound                = "model_not_found"
	ModelNotAllowed              = "model_not_allowed"
	InvalidRequest               = "invalid_request"
	ToolNotSupported             = "tool_not_supported"
	InvalidIdempotencyKey        = "invalid_idempotency_key"
	IdempotencyKeyReuse          = "idempotency_key_reuse"
	IdempotencyInFlight          = "idempotency_in_flight"
	IdempotencyResponseNotCached = "idempotency_response_not_cached"
	InvalidAPIKey                = "invalid_api_key"
	QuotaExceeded                = "quota_exceeded"
	PermissionDenied             = "permission_denied"
	RateLimitExceeded            = "rate_limit_exceeded"
	InternalError                = "internal_error"
	UpstreamUnreachable          = "upstream_unreachable"
	NoChannelAvailable           = "no_channel_available"
	UpstreamTimeout              = "upstream_timeout"
	UpstreamError                = "upstream_error"
	NotFound                     = "not_found"
	LogNotFound                  = "log_not_found"
	LogsRateLimited              = "logs_rate_limited"
	ModelNoVision                = "model_no_vision"
	// ClientClosed marks a call whose client went away; it is logged, never sent.
	ClientClosed = "client_closed"
)

// row is one line of the truth table.
type row struct {
	status      int
	openaiType  string
	messageType string
	geminiState string
}

var table = map[string]row{
	ModelNotFound:                {400, "invalid_request_error", "not_found_error", "NOT_FOUND"},
	ModelNotAllowed:              {400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	InvalidRequest:               {400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	ToolNotSupported:             {400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	InvalidIdempotencyKey:        {400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	IdempotencyKeyReuse:          {409, "invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	IdempotencyInFlight:          {409, "invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	IdempotencyResponseNotCached: {409, "invalid_request_error", "invalid_request_error", "ALREADY_EXISTS"},
	InvalidAPIKey:                {401, "authentication_error", "authentication_error", "UNAUTHENTICATED"},
	QuotaExceeded:                {402, "insufficient_quota", "billing_error", "RESOURCE_EXHAUSTED"},
	PermissionDenied:             {403, "permission_error", "permission_error", "PERMISSION_DENIED"},
	RateLimitExceeded:            {429, "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"},
	InternalError:                {500, "server_error", "api_error", "INTERNAL"},
	UpstreamUnreachable:          {502, "api_error", "api_error", "UNAVAILABLE"},
	NoChannelAvailable:           {503, "server_error", "overloaded_error", "UNAVAILABLE"},
	UpstreamTimeout:              {504, "api_error", "api_error", "DEADLINE_EXCEEDED"},
	LogNotFound:                  {404, "invalid_request_error", "not_found_error", "NOT_FOUND"},
	LogsRateLimited:              {429, "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"},
	ModelNoVision:                {400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
	NotFound:                     {404, "invalid_request_error", "not_found_error", "NOT_FOUND"},
	ClientClosed:                 {499, "invalid_request_error", "invalid_request_error", "CANCELLED"},
}

// Error is an error a client sees. Status, Code and the per-protocol types
// come from the truth table unless set explicitly (upstream pass-through).
type Error struct {
	Status  int
	Code    string
	Message string
	// Type overrides the completions-style type (upstream pass-through).
	Type string
	// Header holds extra response headers (Retry-After, x-ratelimit-*).
	Header http.Header
	// Cause is the internal error behind a 500, never shown to the client.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Message + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// New builds an error of a truth-table code; its status comes from the table.
func New(code, message string) *Error {
	r, ok := table[code]
	if !ok {
		r = table[InternalError]
	}
	return &Error{Status: r.status, Code: code, Message: message}
}

// Newf is New with a format.
func Newf(code, format string, args ...any) *Error {
	return New(code, fmt.Sprintf(format, args...))
}

// Internal wraps a gateway fault as a 500 whose cause stays in the logs.
// A cause that has a message meant for clients (a ClientMessage method,
// as the store's "unavailable" has) shows it; others a generic one.
func Internal(cause error) *Error {
	msg := "internal error: the gateway could not complete this request; try again later"
	var cm interface{ ClientMessage() string }
	if errors.As(cause, &cm) {
		msg = cm.ClientMessage()
	}
	e := New(InternalError, msg)
	e.Cause = cause
	return e
}

// WithHeader adds a response header and returns e.
func (e *Error) WithHeader(k, v string) *Error {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Set(k, v)
	return e
}

// FromUpstream maps a non-2xx upstream status to the spec's code and type
// (errors rule 4); the status itself is passed through.
func FromUpstream(status int, message string) *Error {
	e := &Error{Status: status, Message: message}
	switch {
	case status == 400 || status == 422:
		e.Code, e.Type = InvalidRequest, "invalid_request_error"
	case status == 401:
		e.Code, e.Type = InvalidAPIKey, "authentication_error"
	case status == 403:
		e.Code, e.Type = PermissionDenied, "permission_error"
	case status == 404:
		e.Code, e.Type = NotFound, "invalid_request_error"
	case status == 429:
		e.Code, e.Type = RateLimitExceeded, "rate_limit_error"
	default:
		e.Code, e.Type = UpstreamError, "api_error"
	}
	if e.Message == "" {
		e.Message = "upstream returned HTTP " + strconv.Itoa(status)
	}
	return e
}

// As returns err as *Error; any other error becomes a 500.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

func (e *Error) openaiType() string {
	if e.Type != "" {
		return e.Type
	}
	if r, ok := table[e.Code]; ok {
		return r.openaiType
	}
	return statusType(e.Status)
}

// tableRow is the truth-table line of e when e is what that line says:
// its code at its status, not an upstream's pass-through nor a code lent
// to another status (a 413 body, a 408 wait), whose names follow the status.
func (e *Error) tableRow() (row, bool) {
	r, ok := table[e.Code]
	return r, ok && e.Type == "" && e.Status == r.status
}

func (e *Error) messagesType() string {
	if r, ok := e.tableRow(); ok {
		return r.messageType
	}
	switch {
	case e.Status == 400 || e.Status == 422:
		return "invalid_request_error"
	case e.Status == 401:
		return "authentication_error"
	case e.Status == 402:
		return "billing_error"
	case e.Status == 403:
		return "permission_error"
	case e.Status == 404:
		return "not_found_error"
	case e.Status == 413:
		return "request_too_large"
	case e.Status == 429:
		return "rate_limit_error"
	case e.Status == 529 || e.Status == 503:
		return "overloaded_error"
	case e.Status == 504:
		return "timeout_error"
	case e.Status >= 400 && e.Status < 500:
		return "invalid_request_error" // the vendor's type for any other 4xx
	}
	return "api_error"
}

// geminiStatus follows google.rpc's HTTP mapping for statuses outside the
// table.
func (e *Error) geminiStatus() string {
	if r, ok := e.tableRow(); ok {
		return r.geminiState
	}
	switch {
	case e.Status == 401:
		return "UNAUTHENTICATED"
	case e.Status == 403:
		return "PERMISSION_DENIED"
	case e.Status == 404:
		return "NOT_FOUND"
	case e.Status == 409:
		return "ALREADY_EXISTS"
	case e.Status == 429 || e.Status == 402:
		return "RESOURCE_EXHAUSTED"
	case e.Status == 499:
		return "CANCELLED"
	case e.Status == 501:
		return "UNIMPLEMENTED"
	case e.Status == 502 || e.Status == 503 || e.Status == 529:
		return "UNAVAILABLE"
	case e.Status == 504:
		return "DEADLINE_EXCEEDED"
	case e.Status >= 400 && e.Status < 500:
		return "INVALID_ARGUMENT"
	}
	return "INTERNAL"
}

func statusType(status int) string {
	switch {
	case status >= 500:
		return "api_error"
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 429:
		return "rate_limit_error"
	}
	return "invalid_request_error"
}

type openaiBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

type messagesBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type geminiBody struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// Body renders e in the shape of protocol p. Anything but the messages and
// generate-content protocols gets the completions-style shape.
func Body(p protocol.ID, e *Error) []byte {
	var v any
	switch p {
	case protocol.AnthropicMessages:
		var b messagesBody
		b.Type = "error"
		b.Error.Type = e.messagesType()
		b.Error.Message = e.Message
		v = b
	case protocol.GeminiNative:
		var b geminiBody
		b.Error.Code = e.Status
		b.Error.Message = e.Message
		b.Error.Status = e.geminiStatus()
		v = b
	default:
		var b openaiBody
		b.Error.Message = e.Message
		b.Error.Type = e.openaiType()
		b.Error.Code = e.Code
		v = b
	}
	return marshal(v)
}

// marshal is JSON for people to read: <, > and & as they are (an HTML
// escape would show "<admin token>" as "\u003cadmin token\u003e").
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the bodies are plain structs of strings
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Write sends e as the response, in the shape of protocol p.
func Write(w http.ResponseWriter, p protocol.ID, e *Error) {
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = vs
	}
	h.Set("Content-Type", "application/json")
	b := Body(p, e)
	// Whole at once, even when the connection then waits on a client's
	// body (a refusal's body is read away after it).
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}
