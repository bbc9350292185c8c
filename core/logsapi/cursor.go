package logsapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// cursor is what next_cursor carries: the window resolved on page 1, the
// order, and the position of the last row returned.
//
// Wire form: base64url (no padding) of the JSON below followed by the first
// 8 bytes of SHA-256("tollgate/logs-cursor/v1" || JSON). The checksum
// rejects edited or truncated cursors; it is not a secret MAC, because a
// cursor grants nothing the query parameters do not: the account and key
// always come from the authenticated key.
type cursor struct {
	V    int    `json:"v"`
	From int64  `json:"f"` // unix nanos, inclusive
	To   int64  `json:"t"` // unix nanos, exclusive
	Asc  bool   `json:"asc"`
	At   int64  `json:"a"` // created_at of the last row, unix nanos
	ID   uint64 `json:"i"` // id of the last row
}

const (
	cursorVersion = 1
	cursorSumLen  = 8
	cursorDomain  = "tollgate/logs-cursor/v1"
)

var errBadCursor = errors.New("cursor is malformed or was modified; pass next_cursor back verbatim")

func cursorSum(payload []byte) []byte {
	h := sha256.New()
	h.Write([]byte(cursorDomain))
	h.Write(payload)
	return h.Sum(nil)[:cursorSumLen]
}

func (c cursor) encode() string {
	payload, _ := json.Marshal(c)
	buf := append(payload, cursorSum(payload)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= cursorSumLen {
		return c, errBadCursor
	}
	payload, sum := raw[:len(raw)-cursorSumLen], raw[len(raw)-cursorSumLen:]
	if !bytes.Equal(sum, cursorSum(payload)) {
		return c, errBadCursor
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.V != cursorVersion || c.From > c.To {
		return cursor{}, errBadCursor
	}
	return c, nil
}

func (c cursor) window() (time.Time, time.Time) {
	return time.Unix(0, c.From).UTC(), time.Unix(0, c.To).UTC()
}

func (c cursor) position() *store.LogPosition {
	return &store.LogPosition{CreatedAt: time.Unix(0, c.At).UTC(), ID: c.ID}
}
