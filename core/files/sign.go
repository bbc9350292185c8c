package files

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A link is {base}/files/{id}?expires=<unix seconds>&sig=<signature>, where
// the signature is base64url (no padding) of HMAC-SHA256 over
// "files/v1", the id and the expiry, keyed with a key derived from
// Options.Secret. The key derivation separates this use of the gateway's
// secret from any other; the version tag lets a later format coexist.

// minSecret is the shortest signing secret Open accepts.
const minSecret = 16

// signingKey derives the link key from the operator's secret.
func signingKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("tollgate files link signing key v1"))
	return m.Sum(nil)
}

func (s *Store) sign(id string, expires int64) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("files/v1\x00"))
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write(strconv.AppendInt(nil, expires, 10))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks a link's signature in constant time.
func (s *Store) verify(id string, expires int64, sig string) bool {
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	want, _ := base64.RawURLEncoding.DecodeString(s.sign(id, expires))
	return hmac.Equal(got, want)
}

// ErrNoExpiry is returned by Link for a file that never expires when no
// validity was given: every link must expire.
var ErrNoExpiry = errors.New("files: a link to a file that never expires needs a validity")

// Link returns a signed link to file id under base (an absolute URL such as
// "https://gw.example.com", see BaseURL) and the instant it expires. The
// link is valid for validFor, and never beyond the file's own expiry;
// validFor <= 0 means until the file expires. Link reads no store: it does
// not check that the file exists, only that id is well formed and not
// expired (ErrNotFound, ErrExpired).
func (s *Store) Link(base, id string, validFor time.Duration) (string, time.Time, error) {
	fileExp, ok := parseID(id)
	if !ok {
		return "", time.Time{}, ErrNotFound
	}
	now := s.now()
	if expired(fileExp, now) {
		return "", time.Time{}, ErrExpired
	}
	var exp time.Time
	switch {
	case validFor > 0:
		exp = now.Add(validFor)
		if !fileExp.IsZero() && exp.After(fileExp) {
			exp = fileExp
		}
	case fileExp.IsZero():
		return "", time.Time{}, ErrNoExpiry
	default:
		exp = fileExp
	}
	// Whole seconds, rounded up: file expiries are whole seconds, so the
	// link still never outlives the file.
	sec := exp.Unix()
	if exp.Nanosecond() != 0 {
		sec++
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(base, "/"))
	b.WriteString("/files/")
	b.WriteString(id)
	b.WriteString("?expires=")
	b.WriteString(strconv.FormatInt(sec, 10))
	b.WriteString("&sig=")
	b.WriteString(s.sign(id, sec))
	return b.String(), time.Unix(sec, 0), nil
}
