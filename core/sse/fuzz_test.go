package sse

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// FuzzReader: no upstream stream panics the event reader or makes it
// return an event past its cap; every event it reads is written back by
// AppendEvent and read again the same.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\n", "event: x\ndata: 1\ndata: 2\n\n", ": comment\n\nid: 3\nretry: 9\ndata: [DONE]\n\n",
		"data:no space\r\n\r\n", "data: cut", "event: only\n\n", "\n\n\n", "data: " + string(bytes.Repeat([]byte("x"), 70000)) + "\n\n",
	} {
		f.Add([]byte(s))
	}
	const max = 64 << 10
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		r.SetMaxEvent(max)
		var evs []protocol.Event
		for {
			ev, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("error %v", err)
				}
				break
			}
			if len(ev.Data) > max+1 {
				t.Fatalf("an event of %d bytes past a cap of %d", len(ev.Data), max)
			}
			evs = append(evs, ev)
		}
		var out []byte
		for _, ev := range evs {
			out = AppendEvent(out, ev)
		}
		back := NewReader(bytes.NewReader(out))
		for i, want := range evs {
			got, err := back.Next()
			if err != nil || got.Name != want.Name || !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("event %d %+v read back as %+v (%v)", i, want, got, err)
			}
		}
	})
}
