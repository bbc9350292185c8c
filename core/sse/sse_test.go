package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

func TestReaderEvents(t *testing.T) {
	in := ": comment\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n"
	r := NewReader(strings.NewReader(in))
	var got []protocol.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 3 || got[0].Name != "message_start" || string(got[0].Data) != `{"a":1}` ||
		string(got[1].Data) != "line1\nline2" || !IsDone(got[2]) {
		t.Fatalf("got %+v", got)
	}
}

func TestReaderCutMidEvent(t *testing.T) {
	r := NewReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"b\""))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("want ErrUnexpectedEOF, got %v", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	_ = w.Write(protocol.Event{Name: "ping", Data: []byte("a\nb")})
	_ = w.Done()
	if buf.String() != "event: ping\ndata: a\ndata: b\n\ndata: [DONE]\n\n" {
		t.Fatalf("got %q", buf.String())
	}
}

// Ready is true exactly when Next can return an event without reading.
func TestReaderReady(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr)
	write := func(s string) {
		go func() { _, _ = pw.Write([]byte(s)) }()
	}
	write("event: a\ndata: 1\n\ndata: 2\r\n\r\n: ping\n\ndata: 3\n")
	ev, err := r.Next()
	if err != nil || ev.Name != "a" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	if !r.Ready() {
		t.Fatal("the second event is buffered, but Ready is false")
	}
	if ev, err = r.Next(); err != nil || string(ev.Data) != "2" {
		t.Fatalf("second event %+v, %v", ev, err)
	}
	if r.Ready() {
		t.Fatal("only a comment and half an event are buffered, but Ready is true")
	}
	write("\n")
	if ev, err = r.Next(); err != nil || string(ev.Data) != "3" {
		t.Fatalf("third event %+v, %v", ev, err)
	}
	if r.Ready() {
		t.Fatal("nothing is buffered, but Ready is true")
	}
	pw.Close()
}

func TestWriterAppendThenFlush(t *testing.T) {
	var buf bytes.Buffer
	fl := &flushCounter{w: &buf}
	w := NewWriter(fl)
	_ = w.Append(protocol.Event{Data: []byte("1")})
	_ = w.Append(protocol.Event{Name: "e", Data: []byte("2")})
	w.Flush()
	if fl.n != 1 || buf.String() != "data: 1\n\nevent: e\ndata: 2\n\n" {
		t.Fatalf("%d flushes, %q", fl.n, buf.String())
	}
}

type flushCounter struct {
	w io.Writer
	n int
}

func (f *flushCounter) Write(b []byte) (int, error) { return f.w.Write(b) }
func (f *flushCounter) Flush()                      { f.n++ }

// endless is an SSE stream of one data line that never ends.
type endless struct{ started bool }

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	if !e.started {
		e.started = true
		n = copy(p, "data: ")
	}
	for i := n; i < len(p); i++ {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestReaderCapsAnEvent(t *testing.T) {
	const max = 1 << 20
	r := NewReader(&endless{})
	r.SetMaxEvent(max)
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("one endless line: got %v, want ErrEventTooLarge", err)
	}
	// Many short data lines of one event add up to the cap too.
	r = NewReader(strings.NewReader(strings.Repeat("data: "+strings.Repeat("y", 1000)+"\n", 2000) + "\n"))
	r.SetMaxEvent(max)
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("many lines: got %v, want ErrEventTooLarge", err)
	}
	// Under the cap, nothing changes.
	r = NewReader(strings.NewReader("data: " + strings.Repeat("z", max-10) + "\n\n"))
	r.SetMaxEvent(max)
	if ev, err := r.Next(); err != nil || len(ev.Data) != max-10 {
		t.Fatalf("under the cap: %d bytes, %v", len(ev.Data), err)
	}
}
