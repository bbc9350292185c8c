package vendor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	vendorv1 "github.com/tollgate-gw/tollgate/proto/vendorplugin/v1"
)

// Handshake is what host and plugin check before talking: a plugin built
// for another protocol version or another program is refused.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "TOLLGATE_PLUGIN",
	MagicCookieValue: "vendor-v1-8b1f9c2e",
}

// PluginName is the name the vendor service is dispensed under.
const PluginName = "vendor"

// MaxMessage is the largest gRPC message either side accepts: chat bodies
// may be 32 MB, an image edit's uploads 95 MB.
const MaxMessage = 128 << 20

// GRPCPlugin connects go-plugin to the Vendor interface.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Vendor // set on the plugin side only
	// DisableDataPlane keeps the host on gRPC calls (tests of that path).
	DisableDataPlane bool
}

// GRPCServer registers the plugin's implementation.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	vendorv1.RegisterVendorServer(s, &grpcServer{impl: p.Impl, dp: &dataPlaneServer{impl: p.Impl}})
	if j, ok := p.Impl.(Jobs); ok {
		vendorv1.RegisterJobsServer(s, &jobsServer{impl: j})
	}
	return nil
}

// GRPCClient returns a Vendor that calls the plugin: over its data plane
// when it offers one, else over gRPC. Close it (io.Closer) when the
// plugin is gone.
func (p *GRPCPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	gc := &grpcClient{c: vendorv1.NewVendorClient(c), jobsClient: jobsClient{c: vendorv1.NewJobsClient(c)}}
	if p.DisableDataPlane {
		return gc, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := gc.c.OpenDataPlane(ctx, &vendorv1.OpenDataPlaneRequest{Versions: []uint32{DataPlaneVersion}})
	switch status.Code(err) {
	case codes.OK:
		if r.GetVersion() != DataPlaneVersion || r.GetNetwork() != "unix" {
			return nil, fmt.Errorf("vendor: the plugin offers data plane version %d on %q, want %d on unix",
				r.GetVersion(), r.GetNetwork(), DataPlaneVersion)
		}
		gc.dp = newDataPlaneClient(r, gc.cancelCall)
	case codes.Unimplemented: // an older plugin: gRPC calls only
	default:
		return nil, fmt.Errorf("vendor: open the data plane: %w", err)
	}
	return gc, nil
}

// grpcServer is the plugin side: gRPC calls to the Vendor implementation.
type grpcServer struct {
	vendorv1.UnimplementedVendorServer
	impl Vendor
	dp   *dataPlaneServer
}

func (s *grpcServer) CancelCall(_ context.Context, req *vendorv1.CancelCallRequest) (*vendorv1.CancelCallResponse, error) {
	s.dp.cancel(req.GetCallId())
	return &vendorv1.CancelCallResponse{}, nil
}

func (s *grpcServer) OpenDataPlane(_ context.Context, req *vendorv1.OpenDataPlaneRequest) (*vendorv1.OpenDataPlaneResponse, error) {
	if !slices.Contains(req.GetVersions(), DataPlaneVersion) {
		return nil, status.Errorf(codes.Unimplemented, "data plane version %d only", DataPlaneVersion)
	}
	resp, err := s.dp.open()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "data plane: %v", err)
	}
	return resp, nil
}

func (s *grpcServer) Describe(ctx context.Context, _ *vendorv1.DescribeRequest) (*vendorv1.DescribeResponse, error) {
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, err
	}
	return &vendorv1.DescribeResponse{Name: d.Name, Protocols: d.Protocols, Families: d.Families, Version: d.Version,
		FamilySpecs: toProtoSpecs(d.Specs)}, nil
}

func (s *grpcServer) Configure(ctx context.Context, req *vendorv1.ConfigureRequest) (*vendorv1.ConfigureResponse, error) {
	cfg := Config{Settings: req.GetSettings(), AllowPrivateURLs: req.GetAllowPrivateUrls(), MaxEventBytes: req.GetMaxEventBytes()}
	for _, ch := range req.GetChannels() {
		cfg.Channels = append(cfg.Channels, Channel{
			Name: ch.GetName(), BaseURL: ch.GetBaseUrl(), APIKey: ch.GetApiKey(),
			Protocols: ch.GetProtocols(), Settings: ch.GetSettings(),
		})
	}
	if err := s.impl.Configure(ctx, cfg); err != nil {
		return nil, configStatus(err)
	}
	return &vendorv1.ConfigureResponse{}, nil
}

func (s *grpcServer) Chat(ctx context.Context, req *vendorv1.ChatRequest) (*vendorv1.ChatResponse, error) {
	resp, err := s.impl.Chat(ctx, fromProtoRequest(req))
	var f *Failure
	if errors.As(err, &f) {
		return &vendorv1.ChatResponse{Failure: toProtoFailure(f)}, nil
	}
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, status.Error(codes.Internal, "vendor Chat returned neither a response nor an error")
	}
	return &vendorv1.ChatResponse{Status: int32(resp.Status), Body: resp.Body, Headers: resp.Headers}, nil
}

// streamSink sends each part of the stream as one frame.
type streamSink struct {
	s   vendorv1.Vendor_ChatStreamServer
	ev  vendorv1.Event
	fr  vendorv1.StreamFrame
	evf vendorv1.StreamFrame_Event
}

func (k *streamSink) Head(h Head) error {
	return k.s.Send(&vendorv1.StreamFrame{Frame: &vendorv1.StreamFrame_Head{Head: &vendorv1.Head{
		Status: int32(h.Status), Headers: h.Headers, Body: h.Body,
	}}})
}

func (k *streamSink) Event(e Event) error {
	// One frame value reused per stream: Send marshals before it returns.
	k.ev.Event, k.ev.Data = e.Name, e.Data
	k.evf.Event = &k.ev
	k.fr.Frame = &k.evf
	return k.s.Send(&k.fr)
}

func (s *grpcServer) ChatStream(req *vendorv1.ChatRequest, stream vendorv1.Vendor_ChatStreamServer) error {
	err := s.impl.ChatStream(stream.Context(), fromProtoRequest(req), &streamSink{s: stream})
	var f *Failure
	if errors.As(err, &f) {
		return stream.Send(&vendorv1.StreamFrame{Frame: &vendorv1.StreamFrame_Failure{Failure: toProtoFailure(f)}})
	}
	return err
}

// grpcClient is the host side: a Vendor (and Jobs) whose calls go to the
// plugin.
type grpcClient struct {
	c  vendorv1.VendorClient
	dp *dataPlaneClient // nil: Chat and ChatStream go over gRPC
	jobsClient
}

// cancelCall tells the plugin to end a data plane call, in the background:
// the caller has moved on.
func (c *grpcClient) cancelCall(id uint64) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = c.c.CancelCall(ctx, &vendorv1.CancelCallRequest{CallId: id})
	}()
}

// Close closes the data plane's idle connections.
func (c *grpcClient) Close() error {
	if c.dp != nil {
		return c.dp.Close()
	}
	return nil
}

var (
	maxCall    = []grpc.CallOption{grpc.MaxCallRecvMsgSize(MaxMessage), grpc.MaxCallSendMsgSize(MaxMessage)}
	streamCall = append(maxCall[:len(maxCall):len(maxCall)], grpc.ForceCodecV2(frameCodec{}))
)

// frameCodec is gRPC's proto codec, except that a StreamFrame is merged into
// rather than reset, so the caller can keep its oneof wrapper and Event
// between frames. The caller clears the fields a frame may omit.
type frameCodec struct{}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

func (frameCodec) Name() string { return grpcproto.Name }

func (frameCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (frameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	fr, ok := v.(*vendorv1.StreamFrame)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.UnmarshalOptions{Merge: true}.Unmarshal(buf.ReadOnlyData(), fr)
}

func (c *grpcClient) Describe(ctx context.Context) (Description, error) {
	r, err := c.c.Describe(ctx, &vendorv1.DescribeRequest{})
	if err != nil {
		return Description{}, err
	}
	return Description{Name: r.GetName(), Protocols: r.GetProtocols(), Families: r.GetFamilies(), Version: r.GetVersion(),
		Specs: fromProtoSpecs(r.GetFamilySpecs())}, nil
}

func (c *grpcClient) Configure(ctx context.Context, cfg Config) error {
	req := &vendorv1.ConfigureRequest{Settings: cfg.Settings, AllowPrivateUrls: cfg.AllowPrivateURLs, MaxEventBytes: cfg.MaxEventBytes}
	for _, ch := range cfg.Channels {
		req.Channels = append(req.Channels, &vendorv1.Channel{
			Name: ch.Name, BaseUrl: ch.BaseURL, ApiKey: ch.APIKey, Protocols: ch.Protocols, Settings: ch.Settings,
		})
	}
	if _, err := c.c.Configure(ctx, req, maxCall...); err != nil {
		return fromConfigStatus(err)
	}
	return nil
}

func (c *grpcClient) Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	if c.dp != nil {
		return c.dp.chat(ctx, req)
	}
	r, err := c.c.Chat(ctx, toProtoRequest(req), maxCall...)
	if err != nil {
		return nil, err
	}
	if f := r.GetFailure(); f != nil {
		return nil, fromProtoFailure(f)
	}
	return &ChatResponse{Status: int(r.GetStatus()), Body: r.GetBody(), Headers: r.GetHeaders()}, nil
}

func (c *grpcClient) ChatStream(ctx context.Context, req *ChatRequest, sink Sink) error {
	if c.dp != nil {
		return c.dp.chatStream(ctx, req, sink)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.c.ChatStream(ctx, toProtoRequest(req), streamCall...)
	if err != nil {
		return err
	}
	// One frame, event wrapper and event are reused for the whole stream:
	// frameCodec merges each frame into them instead of allocating anew.
	var (
		fr  vendorv1.StreamFrame
		ev  vendorv1.Event
		evf = vendorv1.StreamFrame_Event{Event: &ev}
	)
	headed := false
	for {
		ev.Reset() // Data went to the sink: a new one is allocated per event
		fr.Reset()
		fr.Frame = &evf
		if err := stream.RecvMsg(&fr); err != nil {
			if err == io.EOF {
				if !headed {
					return &Failure{Kind: FailureBroken, Message: "the plugin ended the stream without a head"}
				}
				return nil
			}
			return err
		}
		switch f := fr.Frame.(type) {
		case *vendorv1.StreamFrame_Head:
			headed = true
			h := f.Head
			if err := sink.Head(Head{Status: int(h.GetStatus()), Headers: h.GetHeaders(), Body: h.GetBody()}); err != nil {
				return err // cancel ends the plugin's upstream call
			}
		case *vendorv1.StreamFrame_Event:
			if err := sink.Event(Event{Name: f.Event.GetEvent(), Data: f.Event.GetData()}); err != nil {
				return err
			}
		case *vendorv1.StreamFrame_Failure:
			return fromProtoFailure(f.Failure)
		}
	}
}

func toProtoRequest(r *ChatRequest) *vendorv1.ChatRequest {
	return &vendorv1.ChatRequest{
		Channel: r.Channel, Protocol: r.Protocol, Model: r.Model, Body: r.Body, Stream: r.Stream,
		Headers: r.Headers, TimeoutMs: r.Timeout.Milliseconds(), RequestId: r.RequestID,
		Operation: r.Operation, IdleTimeoutMs: r.IdleTimeout.Milliseconds(),
	}
}

func fromProtoRequest(r *vendorv1.ChatRequest) *ChatRequest {
	return &ChatRequest{
		Channel: r.GetChannel(), Protocol: r.GetProtocol(), Model: r.GetModel(), Body: r.GetBody(),
		Stream: r.GetStream(), Headers: r.GetHeaders(), Timeout: time.Duration(r.GetTimeoutMs()) * time.Millisecond,
		IdleTimeout: time.Duration(r.GetIdleTimeoutMs()) * time.Millisecond, RequestID: r.GetRequestId(),
		Operation: r.GetOperation(),
	}
}

func toProtoFailure(f *Failure) *vendorv1.Failure {
	return &vendorv1.Failure{Kind: vendorv1.FailureKind(f.Kind), Message: f.Message}
}

func fromProtoFailure(f *vendorv1.Failure) *Failure {
	return &Failure{Kind: FailureKind(f.GetKind()), Message: f.GetMessage()}
}

var (
	_ Vendor                = (*grpcClient)(nil)
	_ Jobs                  = (*grpcClient)(nil)
	_ vendorv1.VendorServer = (*grpcServer)(nil)
	_ plugin.GRPCPlugin     = (*GRPCPlugin)(nil)
)
