package sse

import (
	"bytes"
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
