package vendor

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	vendorv1 "github.com/tollgate-gw/tollgate/proto/vendorplugin/v1"
)

// The hand-written EventBatch codec agrees with the generated one both ways.
func TestEventBatchMatchesProto(t *testing.T) {
	evs := []Event{{Name: "message_start", Data: []byte(`{"a":1}`)}, {Data: []byte("x")}, {Name: "ping"}, {}}
	ours := appendEvents(nil, evs)
	var pb vendorv1.EventBatch
	if err := proto.Unmarshal(ours, &pb); err != nil {
		t.Fatal(err)
	}
	if len(pb.Events) != len(evs) {
		t.Fatalf("proto read %d events, want %d", len(pb.Events), len(evs))
	}
	for i, e := range pb.Events {
		if e.GetEvent() != evs[i].Name || !bytes.Equal(e.GetData(), evs[i].Data) {
			t.Fatalf("event %d: proto read %q %q", i, e.GetEvent(), e.GetData())
		}
	}
	// Generated code's encoding, with a field this version does not know.
	pb.Events[0].ProtoReflect().SetUnknown([]byte{0x18, 0x07}) // field 3, varint 7
	theirs, err := proto.Marshal(&pb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseEvents(theirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Name: "message_start", Data: []byte(`{"a":1}`)}, {Data: []byte("x")}, {Name: "ping"}, {}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
}

func TestParseEventsRefusesGarbage(t *testing.T) {
	for _, b := range [][]byte{{0x0a}, {0x0a, 0x05, 0x0a}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, err := parseEvents(b, nil); err == nil {
			t.Errorf("parseEvents(%x) accepted it", b)
		}
	}
}

func TestReadFrameBounds(t *testing.T) {
	frame := func(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
	if _, _, err := readFrame(frame([]byte{0, 0, 0, 0, 'Q'})); err == nil {
		t.Error("a zero-length frame was accepted")
	}
	if _, _, err := readFrame(frame([]byte{0x7f, 0, 0, 0, 'Q'})); err != errFrameTooLarge {
		t.Errorf("an oversized frame: %v", err)
	}
	if _, _, err := readFrame(frame([]byte{0, 0, 0, 4, 'Q', 1})); err == nil {
		t.Error("a cut frame was accepted")
	}
	b := finishFrame(append(startFrame(nil, 'z'), "ok"...), 0)
	typ, p, err := readFrame(frame(b))
	if err != nil || typ != 'z' || string(p) != "ok" {
		t.Fatalf("frame %q %q %v", typ, p, err)
	}
}
