package sim

import (
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendStr appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; <, > and & stay literal, as the vendors send them.
func appendStr(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendStrBytes is appendStr for a byte slice.
func appendStrBytes(dst, b []byte) []byte {
	return appendStr(dst, unsafeString(b))
}

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// appendKey appends ,"k": (or "k": when first).
func appendKey(dst []byte, k string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, k...)
	return append(dst, '"', ':')
}

// appendHex appends n as 16 lower-case hex digits.
func appendHex(dst []byte, n uint64) []byte {
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(n>>uint(shift))&0xf])
	}
	return dst
}
