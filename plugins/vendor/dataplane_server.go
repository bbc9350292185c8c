package vendor

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	vendorv1 "github.com/tollgate-gw/tollgate/proto/vendorplugin/v1"
)

// dataPlaneServer is the plugin side of the data plane: it listens on a
// local socket and serves each connection's calls with the Vendor.
type dataPlaneServer struct {
	impl Vendor

	once  sync.Once
	ln    net.Listener
	addr  string
	token []byte
	err   error

	mu       sync.Mutex
	calls    map[uint64]context.CancelFunc // calls running
	early    [64]uint64                    // cancelled before they were read
	earlyPos int
}

// maxEarly bounds the cancellations kept for calls not read yet: the host
// cancels right after sending, so only the last few matter.
const maxEarly = len(dataPlaneServer{}.early)

// cancel ends call id, or, if it has not started, marks it to end at once.
func (s *dataPlaneServer) cancel(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.calls[id]; ok {
		c()
		return
	}
	s.early[s.earlyPos] = id
	s.earlyPos = (s.earlyPos + 1) % maxEarly
}

// begin registers a call; its context ends on CancelCall.
func (s *dataPlaneServer) begin(id uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	if id == 0 {
		return ctx, cancel
	}
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[uint64]context.CancelFunc{}
	}
	s.calls[id] = cancel
	for i, e := range s.early {
		if e == id {
			s.early[i] = 0
			cancel()
		}
	}
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
		cancel()
	}
}

// open starts listening on first use and returns where to connect.
func (s *dataPlaneServer) open() (*vendorv1.OpenDataPlaneResponse, error) {
	s.once.Do(func() {
		s.token = make([]byte, 32)
		_, _ = rand.Read(s.token)
		s.ln, s.addr, s.err = listenLocal()
		if s.err == nil {
			go s.accept()
		}
	})
	if s.err != nil {
		return nil, s.err
	}
	return &vendorv1.OpenDataPlaneResponse{
		Version: DataPlaneVersion, Network: "unix", Address: s.addr, Token: s.token,
	}, nil
}

// listenLocal listens on an abstract Unix socket on Linux (nothing on
// disk to clean up after a SIGKILL; the token guards it), else on a
// socket in a private temporary directory.
func listenLocal() (net.Listener, string, error) {
	var name [12]byte
	_, _ = rand.Read(name[:])
	if runtime.GOOS == "linux" {
		addr := "@tollgate-plugin-" + hex.EncodeToString(name[:])
		ln, err := net.Listen("unix", addr)
		return ln, addr, err
	}
	dir, err := os.MkdirTemp("", "tollgate-plugin-")
	if err != nil {
		return nil, "", err
	}
	addr := filepath.Join(dir, "data.sock")
	ln, err := net.Listen("unix", addr)
	return ln, addr, err
}

func (s *dataPlaneServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		go s.serveConn(c)
	}
}

// serveConn runs one connection: read a call, answer it, read the next,
// all in this goroutine.
func (s *dataPlaneServer) serveConn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 16<<10)
	t, tok, err := readFrame(br)
	if err != nil || t != frameHello || subtle.ConstantTimeCompare(tok, s.token) != 1 {
		return
	}
	w := &frameWriter{c: c}
	for {
		t, payload, err := readFrame(br)
		if err != nil || t != frameChat && t != frameStream {
			return
		}
		pr := new(planeRequest)
		if err := parseRequest(payload, pr); err != nil {
			return
		}
		ctx, end := s.begin(pr.callID)
		err = s.call(ctx, t == frameStream, pr, w)
		end()
		w.release()
		if err != nil {
			return // the connection broke: the host sees it closed
		}
	}
}

// call runs one call under the caller's deadline, as it was when sent.
func (s *dataPlaneServer) call(ctx context.Context, stream bool, pr *planeRequest, w *frameWriter) error {
	if us := pr.contextTimeoutUs; us > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(us)*time.Microsecond)
		defer cancel()
	}
	req := &pr.req
	if stream {
		return s.stream(ctx, req, w)
	}
	return s.unary(ctx, req, w)
}

func (s *dataPlaneServer) unary(ctx context.Context, req *ChatRequest, w *frameWriter) error {
	resp, err := s.impl.Chat(ctx, req)
	var f *Failure
	switch {
	case errors.As(err, &f):
		return w.message(frameResponse, &vendorv1.ChatResponse{Failure: toProtoFailure(f)})
	case err != nil:
		return w.fault(err)
	case resp == nil:
		return w.fault(status.Error(codes.Internal, "vendor Chat returned neither a response nor an error"))
	}
	return w.message(frameResponse, &vendorv1.ChatResponse{Status: int32(resp.Status), Body: resp.Body, Headers: resp.Headers})
}

func (s *dataPlaneServer) stream(ctx context.Context, req *ChatRequest, w *frameWriter) error {
	sink := &frameSink{w: w}
	err := s.impl.ChatStream(ctx, req, sink)
	if sink.err != nil {
		return sink.err
	}
	var f *Failure
	switch {
	case errors.As(err, &f):
		return w.message(frameFailure, toProtoFailure(f))
	case err != nil:
		return w.fault(err)
	}
	return w.frame(frameEnd, nil)
}

// frameWriter writes frames to one connection; one call at a time uses it.
type frameWriter struct {
	c   net.Conn
	buf []byte
}

func (w *frameWriter) send(b []byte) error {
	w.buf = b
	_, err := w.c.Write(b)
	return err
}

func (w *frameWriter) frame(t byte, payload []byte) error {
	b := startFrame(w.buf[:0], t)
	b = append(b, payload...)
	return w.send(finishFrame(b, 0))
}

func (w *frameWriter) message(t byte, m proto.Message) error {
	b, err := proto.MarshalOptions{}.MarshalAppend(startFrame(w.buf[:0], t), m)
	if err != nil {
		return w.fault(err)
	}
	return w.send(finishFrame(b, 0))
}

// fault sends a transport fault as gRPC would: its status code (a byte),
// then its message.
func (w *frameWriter) fault(err error) error {
	st := status.Convert(err)
	b := startFrame(w.buf[:0], frameFault)
	b = append(b, byte(st.Code()))
	b = append(b, st.Message()...)
	return w.send(finishFrame(b, 0))
}

func (w *frameWriter) events(evs []Event) error {
	b := appendEvents(startFrame(w.buf[:0], frameEvents), evs)
	return w.send(finishFrame(b, 0))
}

// release drops a buffer a large answer grew, so an idle connection does
// not keep it.
func (w *frameWriter) release() {
	if cap(w.buf) > 256<<10 {
		w.buf = nil
	}
}

// frameSink is the vendor's Sink on the data plane: one frame per call,
// so events that arrive together travel in one frame.
type frameSink struct {
	w   *frameWriter
	one [1]Event
	err error // a write failed: the host is gone
}

func (k *frameSink) Head(h Head) error {
	k.err = k.w.message(frameHead, &vendorv1.Head{Status: int32(h.Status), Headers: h.Headers, Body: h.Body})
	return k.err
}

func (k *frameSink) Event(e Event) error {
	k.one[0] = e
	k.err = k.w.events(k.one[:])
	k.one[0] = Event{}
	return k.err
}

func (k *frameSink) Events(evs []Event) error {
	k.err = k.w.events(evs)
	return k.err
}

var _ BatchSink = (*frameSink)(nil)
