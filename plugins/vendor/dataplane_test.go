package vendor

import (
	"bufio"
	"bytes"
	"net"
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

// Event frames that reach the host in one read go to the sink as one
// batch (one flush to the client); a frame still on its way is not waited
// for.
func TestBufferedFramesJoinOneBatch(t *testing.T) {
	ln, err := net.Listen("unix", "@tollgate-test-"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	more := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for range 2 { // the hello, the call
			if _, _, err := readFrame(br); err != nil {
				return
			}
		}
		var b []byte
		head, _ := proto.Marshal(&vendorv1.Head{Status: 200})
		b = finishFrame(append(startFrame(b, frameHead), head...), 0)
		for _, e := range []string{"1", "2", "3"} {
			start := len(b)
			b = finishFrame(appendEvents(startFrame(b, frameEvents), []Event{{Data: []byte(e)}}), start)
		}
		_, _ = c.Write(b) // one write: head and three event frames
		<-more
		b = finishFrame(appendEvents(startFrame(nil, frameEvents), []Event{{Data: []byte("4")}}), 0)
		start := len(b)
		b = finishFrame(startFrame(b, frameEnd), start)
		_, _ = c.Write(b)
	}()
	d := newDataPlaneClient(&vendorv1.OpenDataPlaneResponse{Network: "unix", Address: ln.Addr().String()}, func(uint64) {})
	defer d.Close()
	s := &batches{more: more}
	if err := d.chatStream(t.Context(), &ChatRequest{Stream: true}, s); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"1", "2", "3"}, {"4"}}; !reflect.DeepEqual(s.got, want) {
		t.Fatalf("batches %q, want %q", s.got, want)
	}
}

// batches records each batch's data and lets the plugin send more after
// the first.
type batches struct {
	got  [][]string
	more chan struct{}
}

func (s *batches) Head(Head) error { return nil }
func (s *batches) Event(e Event) error {
	return s.Events([]Event{e})
}
func (s *batches) Events(evs []Event) error {
	var b []string
	for _, e := range evs {
		b = append(b, string(e.Data))
	}
	s.got = append(s.got, b)
	if len(s.got) == 1 {
		close(s.more)
	}
	return nil
}

// The hand-written ChatResponse and Head decoders read what the generated
// code writes, unknown fields included, and refuse what it would refuse.
func TestReplyMatchesProto(t *testing.T) {
	unknown := []byte{0x78, 0x07} // field 15, varint 7
	resp := &vendorv1.ChatResponse{Status: 429, Body: []byte(`{"error":1}`),
		Headers: map[string]string{"retry-after": "1", "x-empty": ""}}
	resp.ProtoReflect().SetUnknown(unknown)
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseReply(b, responseFields)
	if err != nil || r.status != 429 || string(r.body) != `{"error":1}` || !reflect.DeepEqual(r.headers, resp.Headers) || r.failure != nil {
		t.Fatalf("response: %+v %v", r, err)
	}
	b, _ = proto.Marshal(&vendorv1.ChatResponse{Failure: &vendorv1.Failure{Kind: vendorv1.FailureKind(FailureTimeout), Message: "slow"}})
	if r, err := parseReply(b, responseFields); err != nil || r.failure == nil || *r.failure != (Failure{Kind: FailureTimeout, Message: "slow"}) {
		t.Fatalf("failure: %+v %v", r, err)
	}
	head := &vendorv1.Head{Status: 200, Headers: map[string]string{"content-type": "text/event-stream"}}
	head.ProtoReflect().SetUnknown(unknown)
	b, _ = proto.Marshal(head)
	if r, err := parseReply(b, headFields); err != nil || r.status != 200 || r.body != nil || !reflect.DeepEqual(r.headers, head.Headers) {
		t.Fatalf("head: %+v %v", r, err)
	}
	b, _ = proto.Marshal(&vendorv1.Head{Status: -1, Body: []byte("x")})
	if r, err := parseReply(b, headFields); err != nil || r.status != -1 || string(r.body) != "x" || r.headers != nil {
		t.Fatalf("head with a body: %+v %v", r, err)
	}
	if r, err := parseReply(nil, responseFields); err != nil || r.status != 0 || r.body != nil {
		t.Fatalf("empty: %+v %v", r, err)
	}
	for _, bad := range [][]byte{{0x12}, {0x12, 0x05, 'a'}, {0x08}, {0x1a, 0x04, 0x0a, 0x02, 0xff, 0xfe}} {
		if _, err := parseReply(bad, responseFields); err == nil {
			t.Errorf("parseReply(%x) accepted it", bad)
		}
		if err := proto.Unmarshal(bad, new(vendorv1.ChatResponse)); err == nil {
			t.Errorf("proto.Unmarshal(%x) accepted it too", bad)
		}
	}
}

// The hand-written ChatRequest decoder reads every field the generated
// code writes, as fromProtoRequest would, and skips unknown ones.
func TestRequestMatchesProto(t *testing.T) {
	pr := &vendorv1.ChatRequest{Channel: "main", Protocol: "openai_chat", Model: "m", Body: []byte(`{"x":1}`),
		Stream: true, Headers: map[string]string{"anthropic-beta": "b", "traceparent": "t"}, TimeoutMs: 1500,
		RequestId: "req_1", Operation: "count_tokens", IdleTimeoutMs: -2, ContextTimeoutUs: 777, CallId: 1<<40 + 3}
	pr.ProtoReflect().SetUnknown([]byte{0xa8, 0x01, 0x07}) // field 21, varint 7
	b, err := proto.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	var got planeRequest
	if err := parseRequest(b, &got); err != nil {
		t.Fatal(err)
	}
	if want := fromProtoRequest(pr); !reflect.DeepEqual(&got.req, want) {
		t.Fatalf("parsed %+v, want %+v", got.req, *want)
	}
	if got.callID != pr.CallId || got.contextTimeoutUs != 777 {
		t.Fatalf("call id %d, context timeout %d", got.callID, got.contextTimeoutUs)
	}
	var empty planeRequest
	if err := parseRequest(nil, &empty); err != nil || !reflect.DeepEqual(empty, planeRequest{}) {
		t.Fatalf("empty: %+v %v", empty, err)
	}
	for _, bad := range [][]byte{{0x0a, 0x01, 0xff}, {0x22, 0x05}, {0x28}, {0x32, 0x03, 0x0a, 0x01, 0xff}} {
		if err := parseRequest(bad, new(planeRequest)); err == nil {
			t.Errorf("parseRequest(%x) accepted it", bad)
		}
		if err := proto.Unmarshal(bad, new(vendorv1.ChatRequest)); err == nil {
			t.Errorf("proto.Unmarshal(%x) accepted it too", bad)
		}
	}
}
