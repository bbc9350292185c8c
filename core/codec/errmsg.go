package codec

import (
	"strings"
	"unicode/utf8"
)

// maxPlainMessage caps a non-JSON upstream error body (an HTML proxy page,
// a bare text line) taken as the message.
const maxPlainMessage = 200

// errorMessage extracts the message of an upstream error body: OpenAI's
// and Gemini's {"error":{"message"}}, Anthropic's {"type":"error","error":
// {"message"}}, Gemini's array-wrapped form, and the {"error":"..."},
// {"message":"..."} and {"detail":"..."} of compatible servers. A JSON body
// without any of these gives ""; a body that is not JSON gives its trimmed
// text, cut to 200 characters.
func errorMessage(body []byte) string {
	s := strings.TrimSpace(str(body))
	if s == "" {
		return ""
	}
	if !validJSON(s) {
		return plainMessage(s)
	}
	if s[0] == '[' {
		it := elems(s, 0)
		_, vs, ve, ok := it.next()
		if !ok {
			return ""
		}
		s = s[vs:ve]
	}
	if !isObject(s) {
		if isString(s) {
			return strings.Clone(strings.TrimSpace(strValue(s)))
		}
		return ""
	}
	if e := field(s, "error"); isObject(e) {
		if m := field(e, "message"); isString(m) {
			return ownedString(m)
		}
	} else if isString(e) {
		return ownedString(e)
	}
	for _, k := range [...]string{"message", "detail"} {
		if m := field(s, k); isString(m) {
			return ownedString(m)
		}
	}
	return ""
}

// ownedString returns the text of a raw JSON string, never aliasing body.
func ownedString(raw string) string {
	v := strValue(raw)
	if len(v)+2 == len(raw) {
		v = strings.Clone(v)
	}
	return strings.TrimSpace(v)
}

func plainMessage(s string) string {
	if utf8.RuneCountInString(s) > maxPlainMessage {
		n := 0
		for i := range s {
			if n == maxPlainMessage {
				s = s[:i]
				break
			}
			n++
		}
	}
	return strings.Clone(strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD")))
}
