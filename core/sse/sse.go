// Package sse reads and writes server-sent events.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// Reader splits an SSE byte stream into events. Comments and the id and
// retry fields are skipped; CRLF and LF line ends are both accepted.
type Reader struct {
	br   *bufio.Reader
	data []byte
	name []byte
	max  int // bytes an event (or one line) may hold; 0 = no cap
}

// DefaultMaxEvent is the cap the gateway's relays read events with unless
// the config sets another (server { max_event_size }).
const DefaultMaxEvent = 16 << 20

// ErrEventTooLarge is returned by Next for an event or line past the cap.
var ErrEventTooLarge = errors.New("sse: event too large")

// tooLarge is the error of an event past a cap of max bytes.
func tooLarge(max int) error {
	return fmt.Errorf("%w: more than %d bytes", ErrEventTooLarge, max)
}

// SetMaxEvent caps the bytes one event, or one line, may hold: Next fails
// with ErrEventTooLarge past it instead of growing without bound.
func (r *Reader) SetMaxEvent(n int) { r.max = n }

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the next event. It returns io.EOF after the last complete
// event, and io.ErrUnexpectedEOF when the stream stops inside an event.
// The returned Data is a fresh slice the caller may keep.
func (r *Reader) Next() (protocol.Event, error) {
	r.data = r.data[:0]
	r.name = r.name[:0]
	hasData, inEvent := false, false
	for {
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: gather it whole, up to the cap.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				if r.max > 0 && len(long) > r.max {
					return protocol.Event{}, tooLarge(r.max)
				}
				line, err = r.br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return protocol.Event{}, err
		}
		eof := err == io.EOF
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData || len(r.name) > 0 {
				return r.event(), nil
			}
			if eof {
				if inEvent {
					return protocol.Event{}, io.ErrUnexpectedEOF
				}
				return protocol.Event{}, io.EOF
			}
			continue
		}
		inEvent = true
		if line[0] != ':' {
			field, value, _ := bytes.Cut(line, []byte{':'})
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
			switch string(field) {
			case "data":
				if r.max > 0 && len(r.data)+len(value) > r.max {
					return protocol.Event{}, tooLarge(r.max)
				}
				if hasData {
					r.data = append(r.data, '\n')
				}
				r.data = append(r.data, value...)
				hasData = true
			case "event":
				r.name = append(r.name[:0], value...)
			}
		}
		if eof {
			// A final event without its blank line is incomplete.
			return protocol.Event{}, io.ErrUnexpectedEOF
		}
	}
}

// Ready reports whether a whole event is already buffered, so that Next
// returns it without waiting on the source. Relays use it to pass on
// together the events that arrived together.
func (r *Reader) Ready() bool {
	buf, _ := r.br.Peek(r.br.Buffered())
	fields := false
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return false
		}
		line := bytes.TrimRight(buf[:i], "\r")
		buf = buf[i+1:]
		switch {
		case len(line) == 0:
			if fields {
				return true
			}
		case bytes.HasPrefix(line, []byte("data")) || bytes.HasPrefix(line, []byte("event")):
			f, _, _ := bytes.Cut(line, []byte{':'})
			fields = fields || string(f) == "data" || string(f) == "event"
		}
	}
	return false
}

func (r *Reader) event() protocol.Event {
	ev := protocol.Event{Data: append([]byte(nil), r.data...)}
	if len(r.name) > 0 {
		ev.Name = string(r.name)
	}
	return ev
}

// Writer writes events to a client and flushes each one.
type Writer struct {
	w   io.Writer
	f   http.Flusher
	buf []byte
}

// NewWriter writes to w, flushing after each event when w is an http.Flusher.
func NewWriter(w io.Writer) *Writer {
	return new(Writer).Init(w, make([]byte, 0, 512))
}

// Init makes sw a writer to w as NewWriter does, in storage the caller
// owns, its buffer starting in buf's array; it returns sw.
func (sw *Writer) Init(w io.Writer, buf []byte) *Writer {
	*sw = Writer{w: w, buf: buf[:0]}
	sw.f, _ = w.(http.Flusher)
	return sw
}

// The values of an event-stream response's headers, shared by every
// response (read-only; capacity 1, so an Add copies instead of writing
// into them): one allocation less per header per stream.
var (
	hdrEventStream = []string{"text/event-stream"}[:1:1]
	hdrNoCache     = []string{"no-cache"}[:1:1]
	hdrKeepAlive   = []string{"keep-alive"}[:1:1]
	hdrNo          = []string{"no"}[:1:1]
)

// SetHeaders sets the headers of an event-stream response.
func SetHeaders(h http.Header) {
	h["Content-Type"] = hdrEventStream
	h["Cache-Control"] = hdrNoCache
	h["Connection"] = hdrKeepAlive
	h["X-Accel-Buffering"] = hdrNo
}

// Write sends one event: an "event:" line when it has a name, one "data:"
// line per line of data, and the blank line; then flushes.
func (s *Writer) Write(ev protocol.Event) error {
	if err := s.Append(ev); err != nil {
		return err
	}
	s.Flush()
	return nil
}

// Flush sends what Append wrote.
func (s *Writer) Flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// Append writes one event like Write, without flushing: for events that
// arrived together, flushed once after the last.
func (s *Writer) Append(ev protocol.Event) error {
	s.buf = AppendEvent(s.buf[:0], ev)
	_, err := s.w.Write(s.buf)
	return err
}

// AppendEvent appends ev in SSE framing: an "event:" line when it has a
// name, one "data:" line per line of data, and the blank line.
func AppendEvent(b []byte, ev protocol.Event) []byte {
	if ev.Name != "" {
		b = append(b, "event: "...)
		b = append(b, ev.Name...)
		b = append(b, '\n')
	}
	data := ev.Data
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(b, '\n')
}

// Done writes the completions-style terminator "data: [DONE]".
func (s *Writer) Done() error {
	return s.Write(protocol.Event{Data: doneData})
}

var doneData = []byte("[DONE]")

// IsDone reports whether ev is the completions-style terminator.
func IsDone(ev protocol.Event) bool { return bytes.Equal(ev.Data, doneData) }
