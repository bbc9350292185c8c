package sim

import (
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// ErrorBody is the error body vendor p answers with for status: OpenAI's
// {"error":{message,type,param,code}}, Anthropic's {"type":"error",
// "error":{type,message}}, Gemini's {"error":{code,message,status}}. code
// is OpenAI's error code ("" = null).
func ErrorBody(p protocol.ID, status int, code, message string) []byte {
	b := make([]byte, 0, 128+len(message))
	switch p {
	case protocol.AnthropicMessages:
		b = append(b, `{"type":"error","error":{"type":`...)
		b = appendStr(b, anthropicErrorType(status))
		b = append(b, `,"message":`...)
		b = appendStr(b, message)
		b = append(b, `}}`...)
	case protocol.GeminiNative:
		b = append(b, `{"error":{"code":`...)
		b = appendInt(b, int64(status))
		b = append(b, `,"message":`...)
		b = appendStr(b, message)
		b = append(b, `,"status":`...)
		b = appendStr(b, googleStatus(status))
		b = append(b, `}}`...)
	default:
		b = append(b, `{"error":{"message":`...)
		b = appendStr(b, message)
		b = append(b, `,"type":`...)
		b = appendStr(b, openaiErrorType(status))
		b = append(b, `,"param":null,"code":`...)
		if code == "" {
			b = append(b, "null"...)
		} else {
			b = appendStr(b, code)
		}
		b = append(b, `}}`...)
	}
	return b
}

// ErrorHeaders are the headers of an error answer: a JSON body, and for
// 429 and 529 the retry-after vendors send.
func ErrorHeaders(status int) map[string]string {
	h := map[string]string{"content-type": "application/json"}
	if status == 429 || status == 529 || status == 503 {
		h["retry-after"] = "1"
	}
	return h
}

func openaiErrorType(status int) string {
	switch {
	case status == 429:
		return "requests"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// openaiErrorCode is the code OpenAI sets for a status ("" = null).
func openaiErrorCode(status int) string {
	switch status {
	case 401:
		return "invalid_api_key"
	case 404:
		return "model_not_found"
	case 429:
		return "rate_limit_exceeded"
	}
	return ""
}

func anthropicErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func googleStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// faultError is the answer to an error marker.
func faultError(p protocol.ID, status int) (int, map[string]string, []byte) {
	msg := "Simulated upstream error " + itoa(status) + " requested by [sim:error=" + itoa(status) + "]."
	return status, ErrorHeaders(status), ErrorBody(p, status, openaiErrorCode(status), msg)
}

func itoa(n int) string { return string(appendInt(nil, int64(n))) }
