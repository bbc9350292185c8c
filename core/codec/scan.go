package codec

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// This file is a small JSON scanner over raw bytes. Unlike gjson's Get it
// never unescapes a string it only needs to skip, count or compare, so the
// hot paths stay free of allocations. Positions are absolute offsets into the
// scanned text, which is what Rewrite needs to splice values in place.
// Every function is bounds-checked: on malformed input it reports failure,
// it never panics.

// str views b as a string without copying; b must not change while the
// result is in use.
func str(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// skipWS returns the index of the first non-space byte at or after i.
func skipWS(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// valueEnd returns the index just past the JSON value starting at s[i],
// or -1 when the value is malformed or cut short.
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e := stringEnd(s, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(s) {
			c := s[j]
			if c == ',' || c == '}' || c == ']' || c == ':' || isSpace(c) {
				break
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// stringEnd returns the index just past the string whose quote is s[i].
// It jumps from quote to quote (IndexByte is vectorised); a quote preceded
// by an odd run of backslashes is escaped.
func stringEnd(s string, i int) int {
	j := i + 1
	for j <= len(s) {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		bs := 0
		for b := q - 1; b > i && s[b] == '\\'; b-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return -1
}

// iter walks the members of one JSON object or the elements of one array.
type iter struct {
	s     string
	i     int // next byte to read
	arr   bool
	n     int  // members returned so far
	bad   bool // malformed input was met
	close int  // index of the closing bracket once the walk has ended
}

// members starts a walk over the object whose '{' is at s[start].
func members(s string, start int) iter {
	it := iter{s: s, i: start + 1, close: -1}
	if start < 0 || start >= len(s) || s[start] != '{' {
		it.bad, it.i = true, len(s)
	}
	return it
}

// elems starts a walk over the array whose '[' is at s[start].
func elems(s string, start int) iter {
	it := iter{s: s, i: start + 1, arr: true, close: -1}
	if start < 0 || start >= len(s) || s[start] != '[' {
		it.bad, it.i = true, len(s)
	}
	return it
}

// next returns the next member: the raw key with its quotes (empty for
// arrays) and the bounds [vs, ve) of the raw value. ok is false at the end
// and on malformed input (then it.bad is set).
func (it *iter) next() (key string, vs, ve int, ok bool) {
	if it.bad || it.close >= 0 {
		return "", 0, 0, false
	}
	s := it.s
	i := skipWS(s, it.i)
	if i >= len(s) {
		it.bad = true
		return "", 0, 0, false
	}
	end := byte('}')
	if it.arr {
		end = ']'
	}
	if s[i] == end {
		it.close = i
		return "", 0, 0, false
	}
	if it.n > 0 {
		if s[i] != ',' {
			it.bad = true
			return "", 0, 0, false
		}
		i = skipWS(s, i+1)
	}
	if !it.arr {
		if i >= len(s) || s[i] != '"' {
			it.bad = true
			return "", 0, 0, false
		}
		ke := stringEnd(s, i)
		if ke < 0 {
			it.bad = true
			return "", 0, 0, false
		}
		key = s[i:ke]
		i = skipWS(s, ke)
		if i >= len(s) || s[i] != ':' {
			it.bad = true
			return "", 0, 0, false
		}
		i = skipWS(s, i+1)
	}
	ve = valueEnd(s, i)
	if ve < 0 {
		it.bad = true
		return "", 0, 0, false
	}
	it.i = ve
	it.n++
	return key, i, ve, true
}

// lastEnd is the index just past the last member's value (or just past the
// opening bracket when there was none): where a new member is appended.
func (it *iter) lastEnd(start int) int {
	if it.n == 0 {
		return start + 1
	}
	return it.i
}

// keyName returns the key's text: a substring when it has no escapes.
func keyName(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	for k := 0; k < len(inner); k++ {
		if inner[k] == '\\' {
			return unescape(inner)
		}
	}
	return inner
}

// field returns the raw value of key in the object raw (first occurrence),
// or "" when absent.
func field(raw, key string) string {
	it := members(raw, skipWS(raw, 0))
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return ""
		}
		if keyName(k) == key {
			return raw[vs:ve]
		}
	}
}

// isString, isObject, isArray and isNull classify a raw value by its first byte.
func isString(raw string) bool { return len(raw) >= 2 && raw[0] == '"' }
func isObject(raw string) bool { return len(raw) >= 2 && raw[0] == '{' }
func isArray(raw string) bool  { return len(raw) >= 2 && raw[0] == '[' }
func isNull(raw string) bool   { return raw == "null" }
func isBool(raw string) bool   { return raw == "true" || raw == "false" }

// isNumber reports whether raw starts like a JSON number.
func isNumber(raw string) bool {
	return raw != "" && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// strIs reports whether the raw JSON string raw equals lit.
func strIs(raw, lit string) bool {
	if !isString(raw) {
		return false
	}
	return keyName(raw) == lit
}

// strValue returns the text of a raw JSON string (allocating only when it
// has escapes), or "" when raw is not a string.
func strValue(raw string) string {
	if !isString(raw) {
		return ""
	}
	return keyName(raw)
}

// intValue parses a raw JSON integer; ok is false for fractions, exponents,
// non-numbers and overflow.
func intValue(raw string) (int64, bool) {
	if !isNumber(raw) {
		return 0, false
	}
	for k := 0; k < len(raw); k++ {
		if c := raw[k]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// floatValue parses a raw JSON number.
func floatValue(raw string) (float64, bool) {
	if !isNumber(raw) {
		return 0, false
	}
	f, err := strconv.ParseFloat(raw, 64)
	return f, err == nil
}

// countChars counts the characters of a raw JSON string without decoding
// it: an escape is one character, a surrogate pair one, a UTF-8 sequence one.
func countChars(raw string) int64 {
	if !isString(raw) {
		return 0
	}
	var n int64
	end := len(raw) - 1
	for i := 1; i < end; {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 < end && raw[i+1] == 'u' {
				if i+12 <= end && isHighSurrogate(raw[i+2:i+6]) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					i += 12
				} else {
					i += 6
				}
			} else {
				i += 2
			}
			n++
		case c < utf8.RuneSelf:
			i++
			n++
		default:
			_, size := utf8.DecodeRuneInString(raw[i:end])
			i += size
			n++
		}
	}
	return n
}

func isHighSurrogate(hex string) bool {
	v, err := strconv.ParseUint(hex, 16, 16)
	return err == nil && v >= 0xD800 && v <= 0xDBFF
}

// unescape decodes the inside of a JSON string (without its quotes).
// Malformed escapes are kept as written.
func unescape(in string) string {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' || i+1 >= len(in) {
			out = append(out, c)
			continue
		}
		i++
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, size := decodeU(in[i-1:])
			if size == 0 {
				out = append(out, '\\', 'u')
				continue
			}
			out = utf8.AppendRune(out, r)
			i += size - 2
		default:
			out = append(out, '\\', in[i])
		}
	}
	return string(out)
}

// decodeU decodes a \uXXXX escape (and a following low surrogate) at the
// start of s; size is the bytes consumed, 0 when malformed.
func decodeU(s string) (rune, int) {
	if len(s) < 6 {
		return 0, 0
	}
	v, err := strconv.ParseUint(s[2:6], 16, 16)
	if err != nil {
		return 0, 0
	}
	r := rune(v)
	if r >= 0xD800 && r <= 0xDBFF && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if lo, err := strconv.ParseUint(s[8:12], 16, 16); err == nil && lo >= 0xDC00 && lo <= 0xDFFF {
			return (r-0xD800)<<10 | (rune(lo) - 0xDC00) + 0x10000, 12
		}
	}
	if r >= 0xD800 && r <= 0xDFFF {
		return utf8.RuneError, 6
	}
	return r, 6
}

// appendQuoted appends s as a JSON string.
func appendQuoted(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// maxNesting bounds how deeply arrays and objects may nest. gjson.Valid
// recurses once per level, and a 32 MB body of brackets would overflow
// the goroutine stack, which kills the process rather than panicking.
const maxNesting = 1000

// validJSON reports whether s is one valid JSON value nested at most
// maxNesting deep. The depth pass is iterative and runs first.
func validJSON(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			e := stringEnd(s, i)
			if e < 0 {
				return false
			}
			i = e - 1
		case '[', '{':
			depth++
			if depth > maxNesting {
				return false
			}
		case ']', '}':
			depth--
		}
	}
	return gjson.Valid(s)
}
