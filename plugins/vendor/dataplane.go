package vendor

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	vendorv1 "github.com/tollgate-gw/tollgate/proto/vendorplugin/v1"
)

// The data plane carries Chat and ChatStream calls over a local stream
// socket, framed as proto/vendorplugin/v1/vendor.proto describes under
// DataPlane. A gRPC call costs each side tens of microseconds and several
// goroutine hand-offs; a frame is one write and one read.

// DataPlaneVersion is the data plane version this package speaks.
const DataPlaneVersion = 1

// Frame types.
const (
	frameHello    byte = 'H'
	frameChat     byte = 'Q'
	frameStream   byte = 'S'
	frameResponse byte = 'R'
	frameHead     byte = 'h'
	frameEvents   byte = 'e'
	frameFailure  byte = 'f'
	frameEnd      byte = 'z'
	frameFault    byte = 'x'
)

// frameHeader is the length (4) and the type (1).
const frameHeader = 5

// maxFrame bounds a frame's payload: a chat body and its proto envelope.
const maxFrame = MaxMessage + 1<<20

var errFrameTooLarge = errors.New("vendor: data plane frame too large")

// startFrame appends a frame header of type t to b; finishFrame fills in
// the length once the payload is appended.
func startFrame(b []byte, t byte) []byte {
	return append(b, 0, 0, 0, 0, t)
}

func finishFrame(b []byte, start int) []byte {
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// readFrame reads one frame. The payload is a fresh slice the caller owns.
func readFrame(br *bufio.Reader) (byte, []byte, error) {
	hdr, err := br.Peek(frameHeader)
	if err != nil {
		if err == io.EOF && len(hdr) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	t := hdr[4]
	if n < 1 || n > maxFrame {
		return 0, nil, errFrameTooLarge
	}
	if _, err := br.Discard(frameHeader); err != nil {
		return 0, nil, err
	}
	payload := make([]byte, n-1)
	if _, err := io.ReadFull(br, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return t, payload, nil
}

// buffered reports whether br already holds a whole frame of type t:
// reading it takes no syscall and waits for nothing.
func buffered(br *bufio.Reader, t byte) bool {
	if br.Buffered() < frameHeader {
		return false
	}
	hdr, _ := br.Peek(frameHeader)
	n := int(binary.BigEndian.Uint32(hdr))
	return hdr[4] == t && n >= 1 && n <= maxFrame && br.Buffered() >= 4+n
}

// EventBatch fields (vendor.proto): events = 1; Event: event = 1, data = 2.
const (
	batchEvents protowire.Number = 1
	eventName   protowire.Number = 1
	eventData   protowire.Number = 2
)

// appendEvents encodes evs as an EventBatch message. It is written by hand
// because it runs once per stream frame and decodes without copying.
func appendEvents(b []byte, evs []Event) []byte {
	for _, e := range evs {
		size := 0
		if e.Name != "" {
			size += protowire.SizeTag(eventName) + protowire.SizeBytes(len(e.Name))
		}
		if len(e.Data) > 0 {
			size += protowire.SizeTag(eventData) + protowire.SizeBytes(len(e.Data))
		}
		b = protowire.AppendTag(b, batchEvents, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		if e.Name != "" {
			b = protowire.AppendTag(b, eventName, protowire.BytesType)
			b = protowire.AppendString(b, e.Name)
		}
		if len(e.Data) > 0 {
			b = protowire.AppendTag(b, eventData, protowire.BytesType)
			b = protowire.AppendBytes(b, e.Data)
		}
	}
	return b
}

// parseEvents decodes an EventBatch and appends its events to evs. Data
// aliases b. Unknown fields are skipped, as proto3 requires.
func parseEvents(b []byte, evs []Event) ([]Event, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num != batchEvents || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		msg, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		var e Event
		for len(msg) > 0 {
			num, typ, n := protowire.ConsumeTag(msg)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			msg = msg[n:]
			if typ == protowire.BytesType && (num == eventName || num == eventData) {
				v, n := protowire.ConsumeBytes(msg)
				if n < 0 {
					return nil, protowire.ParseError(n)
				}
				msg = msg[n:]
				if num == eventName {
					e.Name = string(v)
				} else {
					e.Data = v[:len(v):len(v)]
				}
				continue
			}
			if n = protowire.ConsumeFieldValue(num, typ, msg); n < 0 {
				return nil, protowire.ParseError(n)
			}
			msg = msg[n:]
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// unexpectedFrame is the error of a frame the protocol does not allow here.
func unexpectedFrame(t byte, where string) error {
	return fmt.Errorf("vendor: data plane: unexpected frame %q %s", t, where)
}

// replyFields are the field numbers of a ChatResponse or a Head
// (vendor.proto); failure is 0 where there is none.
type replyFields struct{ status, body, headers, failure protowire.Number }

var (
	responseFields = replyFields{status: 1, body: 2, headers: 3, failure: 4}
	headFields     = replyFields{status: 1, headers: 2, body: 3}
)

// reply is a decoded ChatResponse or Head.
type reply struct {
	status  int
	body    []byte
	headers map[string]string
	failure *Failure
}

// parseReply decodes a ChatResponse or a Head. It is written by hand, as
// parseEvents is, so that the body aliases b (the frame the caller owns)
// instead of being copied a second time. Unknown fields are skipped.
func parseReply(b []byte, fs replyFields) (reply, error) {
	var r reply
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return reply{}, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == fs.status && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return reply{}, protowire.ParseError(n)
			}
			b = b[n:]
			r.status = int(int32(v))
			continue
		case typ == protowire.BytesType && (num == fs.body || num == fs.headers || fs.failure != 0 && num == fs.failure):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return reply{}, protowire.ParseError(n)
			}
			b = b[n:]
			var err error
			switch num {
			case fs.body:
				r.body = v[:len(v):len(v)]
			case fs.headers:
				r.headers, err = parseHeader(v, r.headers)
			default:
				var f vendorv1.Failure
				if err = proto.Unmarshal(v, &f); err == nil {
					r.failure = fromProtoFailure(&f)
				}
			}
			if err != nil {
				return reply{}, err
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return reply{}, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return r, nil
}

// parseHeader decodes one entry of a map<string, string> into h.
func parseHeader(b []byte, h map[string]string) (map[string]string, error) {
	var k, v string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			b = b[n:]
			if !utf8.Valid(s) {
				return nil, errors.New("vendor: data plane: a header is not valid UTF-8")
			}
			if num == 1 {
				k = string(s)
			} else {
				v = string(s)
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
	}
	if h == nil {
		h = make(map[string]string, 2)
	}
	h[k] = v
	return h, nil
}

// ChatRequest fields (vendor.proto).
const (
	reqChannel protowire.Number = iota + 1
	reqProtocol
	reqModel
	reqBody
	reqStream
	reqHeaders
	reqTimeoutMs
	reqRequestID
	reqOperation
	reqIdleTimeoutMs
	reqContextTimeoutUs
	reqCallID
)

// planeRequest is a ChatRequest as the data plane carries it: the call
// and the two fields of the data plane only.
type planeRequest struct {
	req              ChatRequest
	callID           uint64
	contextTimeoutUs int64
}

// parseRequest decodes a ChatRequest into r. Written by hand so that the
// body aliases b (the frame read, which the call owns) instead of being
// copied a second time. Unknown fields are skipped.
func parseRequest(b []byte, r *planeRequest) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case typ == protowire.VarintType && num >= reqStream && num <= reqCallID && num != reqHeaders && num != reqRequestID && num != reqOperation:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			switch num {
			case reqStream:
				r.req.Stream = v != 0
			case reqTimeoutMs:
				r.req.Timeout = time.Duration(int64(v)) * time.Millisecond
			case reqIdleTimeoutMs:
				r.req.IdleTimeout = time.Duration(int64(v)) * time.Millisecond
			case reqContextTimeoutUs:
				r.contextTimeoutUs = int64(v)
			case reqCallID:
				r.callID = v
			}
			continue
		case typ == protowire.BytesType && num >= reqChannel && num <= reqOperation && num != reqStream && num != reqTimeoutMs:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			switch num {
			case reqBody:
				r.req.Body = v[:len(v):len(v)]
				continue
			case reqHeaders:
				var err error
				if r.req.Headers, err = parseHeader(v, r.req.Headers); err != nil {
					return err
				}
				continue
			}
			if !utf8.Valid(v) {
				return errors.New("vendor: data plane: a request field is not valid UTF-8")
			}
			s := string(v)
			switch num {
			case reqChannel:
				r.req.Channel = s
			case reqProtocol:
				r.req.Protocol = s
			case reqModel:
				r.req.Model = s
			case reqRequestID:
				r.req.RequestID = s
			case reqOperation:
				r.req.Operation = s
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}
