package translate

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// TestStreamKeepsNoViewOfTheUpstreamEvent feeds each recorded upstream
// stream (text, tool calls, usage, finish) through a codec tracker and
// Read, as the relay does, from one buffer that is scribbled over after
// every event, as a relay's read buffer is: the client's stream must be
// the same as from fresh copies, so nothing a writer keeps past an event
// (a call id or name, a finish reason) may view the upstream's bytes.
func TestStreamKeepsNoViewOfTheUpstreamEvent(t *testing.T) {
	t.Parallel()
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			tr := mustLookup(t, p.from, p.to)
			evs := loadEvents(t, sides[p.to].fixture)
			want := runStream(t, tr, evs, testResp)

			var got []protocol.Event
			emit := func(ev protocol.Event) error {
				got = append(got, protocol.Event{Name: ev.Name, Data: bytes.Clone(ev.Data)})
				return nil
			}
			s := tr.NewStream(testResp)
			scan := codec.For(p.to).NewStream()
			chunk := scan.Chunk()
			var buf []byte
			for _, ev := range evs {
				buf = append(buf[:0], ev.Data...)
				scan.Observe(protocol.Event{Name: ev.Name, Data: buf})
				if err := s.Read(chunk, emit); err != nil {
					t.Fatalf("Read(%s): %v", ev.Data, err)
				}
				for i := range buf {
					buf[i] = 'x'
				}
			}
			if err := s.End(emit); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d events, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Name != want[i].Name || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Errorf("event %d:\n got %s %s\nwant %s %s", i, got[i].Name, got[i].Data, want[i].Name, want[i].Data)
				}
			}
		})
	}
}

// TestReadStillRefusesANonObject: data that is not a JSON object is
// refused from a reader's scan as from the event itself.
func TestReadStillRefusesANonObject(t *testing.T) {
	t.Parallel()
	for _, p := range pairs {
		s := mustLookup(t, p.from, p.to).NewStream(testResp)
		emit := func(protocol.Event) error { return nil }
		for _, data := range []string{"", " ", "[1]", `"s"`, "7", `{"a":`} {
			scan := codec.For(p.to).NewStream()
			chunk := scan.Chunk()
			scan.Observe(protocol.Event{Data: []byte(data)})
			if err := s.Read(chunk, emit); err == nil {
				t.Errorf("%s: Read(%q) accepted", p.name, data)
			}
			if err := s.Event(protocol.Event{Data: []byte(data)}, emit); err == nil {
				t.Errorf("%s: Event(%q) accepted", p.name, data)
			}
		}
	}
}

// TestCheckedRequestIsTheSameTranslation: a body the codec already found
// valid (Checked) is translated to the same bytes and warnings as one
// scanned again, for every pair.
func TestCheckedRequestIsTheSameTranslation(t *testing.T) {
	t.Parallel()
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			tr := mustLookup(t, p.from, p.to)
			body := []byte(sides[p.from].body)
			if _, err := codec.For(p.from).Inspect(body); err != nil {
				t.Fatalf("the codec refuses the body: %v", err)
			}
			opts := RequestOptions{Model: "up", MaxTokens: 100, Stream: true}
			want, wantW, err := tr.Request(body, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Checked = true
			got, gotW, err := tr.Request(body, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || !slices.Equal(gotW, wantW) {
				t.Errorf("checked: %s %v\nscanned: %s %v", got, gotW, want, wantW)
			}
		})
	}
}
