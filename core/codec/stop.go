package codec

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// StopOptions say how a stream the gateway stops ends for its client.
type StopOptions struct {
	Model     string         // the model id the client sees
	RequestID string         // derives ids the upstream never sent
	Created   time.Time      // the creation time when the upstream sent none
	Usage     protocol.Usage // what the end reports
	// IncludeUsage: a completions client asked for the usage chunk.
	IncludeUsage bool
}

// ValidObject reports whether body is one JSON object, nested at most
// maxNesting deep: what every protocol's answer and stream event is.
func ValidObject(body []byte) bool {
	s := str(body)
	i := skipWS(s, 0)
	return i < len(s) && s[i] == '{' && validJSON(s)
}

// eventObject returns the index of the '{' opening an event's data, or
// -1 when there is no object to read; bad reports data that is neither a
// JSON object nor empty nor the [DONE] some proxies add to every protocol.
func eventObject(data []byte) (i int, bad bool) {
	s := str(data)
	i = skipWS(s, 0)
	switch {
	case i >= len(s):
		return -1, false
	case s[i] != '{':
		return -1, !isDone(s[i:])
	case !validEvent(s[i:]):
		return -1, true
	}
	return i, false
}

// shortEvent is the length up to which an event is validated in one pass:
// it cannot nest deeper than its length, and gjson.Valid's recursion
// stays small there. Longer events get validJSON's depth pass first.
const shortEvent = 4096

func validEvent(s string) bool {
	if len(s) <= shortEvent {
		return gjson.Valid(s)
	}
	return validJSON(s)
}

// stopWriter builds the events of a stop in one reused buffer.
type stopWriter struct {
	emit func(protocol.Event) error
	b    []byte
	err  error
}

func (w *stopWriter) send(name string, b []byte) {
	if w.err == nil {
		w.b = b
		w.err = w.emit(protocol.Event{Name: name, Data: b})
	}
}

// rawOr returns raw (a raw JSON value kept from the stream) or fallback as
// a JSON string.
func rawOr(b []byte, raw, fallback string) []byte {
	if raw != "" {
		return append(b, raw...)
	}
	return appendQuoted(b, fallback)
}

// numOr returns raw (a raw JSON number kept from the stream) or n.
func numOr(b []byte, raw string, n int64) []byte {
	if raw != "" {
		return append(b, raw...)
	}
	return strconv.AppendInt(b, n, 10)
}

// keep copies a raw value out of an event's data, which the caller reuses.
func keep(raw string) string { return strings.Clone(raw) }
