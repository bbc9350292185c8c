package vendor

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	vendorv1 "github.com/tollgate-gw/tollgate/proto/vendorplugin/v1"
)

// maxIdleConns bounds the data plane connections kept open between calls:
// one per call in flight, so at least the gateway's usual concurrency.
const maxIdleConns = 256

var errDataPlaneClosed = errors.New("vendor: data plane closed")

// dataPlaneClient is the host side of the data plane: a pool of
// connections, each carrying one call at a time.
type dataPlaneClient struct {
	network, addr string
	token         []byte
	cancelCall    func(id uint64)
	lastID        atomic.Uint64

	mu     sync.Mutex
	idle   []*planeConn
	closed bool
}

func newDataPlaneClient(r *vendorv1.OpenDataPlaneResponse, cancelCall func(id uint64)) *dataPlaneClient {
	return &dataPlaneClient{network: r.GetNetwork(), addr: r.GetAddress(), token: r.GetToken(), cancelCall: cancelCall}
}

type planeConn struct {
	d   *dataPlaneClient
	c   net.Conn
	br  *bufio.Reader
	buf []byte  // the request frame being written
	evs []Event // the last event frame's events

	// The call in flight: its id, and the stop of its context's watch.
	id      uint64
	stop    func() bool
	abandon func() // c.cancel, bound once per connection
}

// cancel tells the plugin to cancel the call and closes the connection
// (which also stops a read in progress).
func (c *planeConn) cancel() {
	c.d.cancelCall(c.id)
	c.c.Close()
}

// done ends the call: finished says its last frame was read, and the
// connection goes back to the pool; otherwise, unless the context's end
// abandoned it already, the call is abandoned now.
func (c *planeConn) done(finished bool) {
	if !c.stop() {
		return // abandoned already
	}
	if finished {
		c.d.put(c)
		return
	}
	c.cancel()
}

func (d *dataPlaneClient) get() (*planeConn, error) {
	d.mu.Lock()
	if n := len(d.idle); n > 0 {
		c := d.idle[n-1]
		d.idle[n-1] = nil
		d.idle = d.idle[:n-1]
		d.mu.Unlock()
		return c, nil
	}
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, errDataPlaneClosed
	}
	conn, err := net.DialTimeout(d.network, d.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	pc := &planeConn{d: d, c: conn, br: bufio.NewReaderSize(conn, 16<<10)}
	pc.abandon = pc.cancel
	b := startFrame(nil, frameHello)
	b = append(b, d.token...)
	if _, err := conn.Write(finishFrame(b, 0)); err != nil {
		conn.Close()
		return nil, err
	}
	return pc, nil
}

func (d *dataPlaneClient) put(c *planeConn) {
	if cap(c.buf) > 256<<10 {
		c.buf = nil
	}
	d.mu.Lock()
	if !d.closed && len(d.idle) < maxIdleConns {
		d.idle = append(d.idle, c)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	c.c.Close()
}

// Close closes the idle connections; calls in flight finish on theirs.
func (d *dataPlaneClient) Close() error {
	d.mu.Lock()
	idle := d.idle
	d.idle, d.closed = nil, true
	d.mu.Unlock()
	for _, c := range idle {
		c.c.Close()
	}
	return nil
}

// start takes a connection and sends req. c.done must be called with
// whether the call ended normally (its last frame read): otherwise, or
// when ctx ends first, the plugin is told to cancel the call and the
// connection is closed (which also stops a read in progress).
func (d *dataPlaneClient) start(ctx context.Context, frame byte, req *ChatRequest) (*planeConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := d.get()
	if err != nil {
		return nil, err
	}
	c.id = d.lastID.Add(1)
	c.stop = context.AfterFunc(ctx, c.abandon)
	pr := toProtoRequest(req)
	pr.CallId = c.id
	if dl, ok := ctx.Deadline(); ok {
		pr.ContextTimeoutUs = max(time.Until(dl).Microseconds(), 1)
	}
	b, err := proto.MarshalOptions{}.MarshalAppend(startFrame(c.buf[:0], frame), pr)
	if err == nil {
		c.buf = finishFrame(b, 0)
		_, err = c.c.Write(c.buf)
	}
	if err != nil {
		c.done(false)
		return nil, err
	}
	return c, nil
}

func (d *dataPlaneClient) chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	c, err := d.start(ctx, frameChat, req)
	if err != nil {
		return nil, err
	}
	t, payload, err := readFrame(c.br)
	if err != nil {
		c.done(false)
		return nil, ctxErr(ctx, err)
	}
	switch t {
	case frameResponse:
		c.done(true)
		r, err := parseReply(payload, responseFields)
		if err != nil {
			return nil, err
		}
		if r.failure != nil {
			return nil, r.failure
		}
		return &ChatResponse{Status: r.status, Body: r.body, Headers: r.headers}, nil
	case frameFault:
		c.done(true)
		return nil, faultError(payload)
	}
	c.done(false)
	return nil, unexpectedFrame(t, "in answer to a call")
}

func (d *dataPlaneClient) chatStream(ctx context.Context, req *ChatRequest, sink Sink) error {
	c, err := d.start(ctx, frameStream, req)
	if err != nil {
		return err
	}
	reuse := false
	defer func() { c.done(reuse) }()
	headed := false
	for {
		t, payload, err := readFrame(c.br)
		if err != nil {
			return ctxErr(ctx, err)
		}
		switch t {
		case frameHead:
			h, err := parseReply(payload, headFields)
			if err != nil {
				return err
			}
			headed = true
			if err := sink.Head(Head{Status: h.status, Headers: h.headers, Body: h.body}); err != nil {
				return err // closing the connection ends the plugin's upstream call
			}
		case frameEvents:
			if !headed {
				return unexpectedFrame(t, "before the stream's head")
			}
			// Frames that came in with this one join its batch: one
			// call to the sink, one flush to the client, no waiting.
			c.evs, err = parseEvents(payload, c.evs[:0])
			for err == nil && buffered(c.br, frameEvents) {
				if _, payload, err = readFrame(c.br); err == nil {
					c.evs, err = parseEvents(payload, c.evs)
				}
			}
			if err != nil {
				return err
			}
			err = SendEvents(sink, c.evs)
			clear(c.evs)
			if err != nil {
				return err
			}
		case frameFailure:
			reuse = true
			var f vendorv1.Failure
			if err := proto.Unmarshal(payload, &f); err != nil {
				return err
			}
			return fromProtoFailure(&f)
		case frameEnd:
			reuse = true
			if !headed {
				return &Failure{Kind: FailureBroken, Message: "the plugin ended the stream without a head"}
			}
			return nil
		case frameFault:
			reuse = true
			return faultError(payload)
		default:
			return unexpectedFrame(t, "in a stream")
		}
	}
}

// ctxErr is the error of a read that failed: the context's when it ended
// (its end closed the connection), else the read's own.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// faultError is the status error a fault frame carries.
func faultError(payload []byte) error {
	if len(payload) == 0 {
		return status.Error(codes.Unknown, "the plugin failed")
	}
	return status.Error(codes.Code(payload[0]), string(payload[1:]))
}
