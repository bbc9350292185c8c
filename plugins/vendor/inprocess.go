package vendor

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"
)

// InProcess is the in-process transport: v called directly, in the
// caller's process, through the same interfaces the gRPC transport
// serves (Vendor, Jobs and JobReader, answering ErrNoJobs where v serves
// no family). A panic of a call fails that call with a transport error,
// as a plugin process dying under it would; the stack goes to log (nil:
// nowhere). The gateway runs its built-in vendors this way when a
// channel says transport = "in-process".
func InProcess(v Vendor, log hclog.Logger) Vendor {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &inProcess{v: v, log: log}
}

type inProcess struct {
	v   Vendor
	log hclog.Logger
}

// recovered turns a panic into *err; deferred directly by each call, so
// recover sees the panic.
func (p *inProcess) recovered(err *error) {
	r := recover()
	if r == nil {
		return
	}
	p.log.Error("the vendor panicked during a call", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*err = fmt.Errorf("vendor: the plugin panicked: %v", r)
}

func (p *inProcess) Describe(ctx context.Context) (_ Description, err error) {
	defer p.recovered(&err)
	return p.v.Describe(ctx)
}

func (p *inProcess) Configure(ctx context.Context, cfg Config) (err error) {
	defer p.recovered(&err)
	return p.v.Configure(ctx, cfg)
}

func (p *inProcess) Chat(ctx context.Context, req *ChatRequest) (_ *ChatResponse, err error) {
	defer p.recovered(&err)
	return p.v.Chat(ctx, req)
}

func (p *inProcess) ChatStream(ctx context.Context, req *ChatRequest, sink Sink) (err error) {
	defer p.recovered(&err)
	return p.v.ChatStream(ctx, req, sink)
}

func (p *inProcess) jobs() (Jobs, error) {
	j, ok := p.v.(Jobs)
	if !ok {
		return nil, ErrNoJobs
	}
	return j, nil
}

func (p *inProcess) Validate(ctx context.Context, req *JobRequest) (_ *JobPlan, err error) {
	j, err := p.jobs()
	if err != nil {
		return nil, err
	}
	defer p.recovered(&err)
	return j.Validate(ctx, req)
}

func (p *inProcess) Run(ctx context.Context, req *JobRequest) (_ *JobOutcome, err error) {
	j, err := p.jobs()
	if err != nil {
		return nil, err
	}
	defer p.recovered(&err)
	return j.Run(ctx, req)
}

func (p *inProcess) Submit(ctx context.Context, req *JobRequest) (_ *JobOutcome, err error) {
	j, err := p.jobs()
	if err != nil {
		return nil, err
	}
	defer p.recovered(&err)
	return j.Submit(ctx, req)
}

func (p *inProcess) Poll(ctx context.Context, req *JobRequest) (_ *JobOutcome, err error) {
	j, err := p.jobs()
	if err != nil {
		return nil, err
	}
	defer p.recovered(&err)
	return j.Poll(ctx, req)
}

func (p *inProcess) Cancel(ctx context.Context, req *JobRequest) (err error) {
	j, err := p.jobs()
	if err != nil {
		return err
	}
	defer p.recovered(&err)
	return j.Cancel(ctx, req)
}

func (p *inProcess) Read(ctx context.Context, req *JobRequest) (_ *JobOutcome, err error) {
	r, ok := p.v.(JobReader)
	if !ok {
		return nil, ErrNoJobs
	}
	defer p.recovered(&err)
	return r.Read(ctx, req)
}

// Close closes what v holds open, if anything.
func (p *inProcess) Close() error {
	if c, ok := p.v.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

var (
	_ Jobs      = (*inProcess)(nil)
	_ JobReader = (*inProcess)(nil)
	_ io.Closer = (*inProcess)(nil)
)
