package files

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"time"
)

// An id is the file's expiry followed by 128 random bits, all lowercase
// letters and digits (URL-safe, and safe on case-insensitive file systems):
//
//	<expiry: 9 hex digits of Unix seconds, 000000000 = never><random: 26 base32 characters>
//
// Carrying the expiry in the id lets the sweep decide from a listing alone
// (no attribute read per blob, which is one request each on S3) and lets the
// handler answer 410 for an expired file without touching the bucket. The
// random part is what makes an id unguessable; the expiry is no secret (the
// link carries its own).
const (
	expiryLen = 9
	randLen   = 26 // base32 of 16 bytes, no padding
	idLen     = expiryLen + randLen
	// maxExpiry is the largest expiry 9 hex digits hold (year 4147).
	maxExpiry = 1<<36 - 1
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID makes an id for a file expiring at exp (zero: never).
func newID(exp time.Time) (string, error) {
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	var sec int64
	if !exp.IsZero() {
		sec = exp.Unix()
	}
	hex := strconv.FormatInt(sec, 16)
	b := make([]byte, 0, idLen)
	for i := len(hex); i < expiryLen; i++ {
		b = append(b, '0')
	}
	b = append(b, hex...)
	return string(idEncoding.AppendEncode(b, r[:])), nil
}

// parseID checks an id's form and returns the file's expiry (zero: never).
func parseID(id string) (exp time.Time, ok bool) {
	if len(id) != idLen {
		return time.Time{}, false
	}
	for i := 0; i < idLen; i++ {
		c := id[i]
		switch {
		case i < expiryLen && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f'):
		case i >= expiryLen && (c >= 'a' && c <= 'z' || c >= '2' && c <= '7'):
		default:
			return time.Time{}, false
		}
	}
	sec, err := strconv.ParseInt(id[:expiryLen], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	if sec == 0 {
		return time.Time{}, true
	}
	return time.Unix(sec, 0), true
}

// expired reports whether a file expiring at exp is gone at now.
func expired(exp, now time.Time) bool {
	return !exp.IsZero() && !now.Before(exp)
}
