package sim

import (
	"strconv"

	"github.com/tollgate-gw/tollgate/core/jsonw"
)

// appendStr appends s as a JSON string.
func appendStr(dst []byte, s string) []byte { return jsonw.AppendString(dst, s) }

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

const hexDigits = "0123456789abcdef"

// appendHex appends n as 16 lower-case hex digits.
func appendHex(dst []byte, n uint64) []byte {
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(n>>uint(shift))&0xf])
	}
	return dst
}
