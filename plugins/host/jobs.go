package host

import (
	"context"
	"errors"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// jobs returns the live client's Jobs service.
func (p *Plugin) jobs(ctx context.Context) (vendor.Jobs, func(error) error, error) {
	v, c, err := p.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	j, ok := v.(vendor.Jobs)
	if !ok {
		return nil, nil, vendor.ErrNoJobs
	}
	return j, func(err error) error {
		if err == nil || errors.Is(err, vendor.ErrNoJobs) {
			return err
		}
		return p.transport(c, err)
	}, nil
}

// call runs one Jobs call through the plugin, turning a dead plugin or an
// ended context into a *vendor.Failure, as for chat calls.
func jobCall[T any](ctx context.Context, p *Plugin, fn func(vendor.Jobs) (T, error)) (T, error) {
	var zero T
	j, wrap, err := p.jobs(ctx)
	if err != nil {
		return zero, err
	}
	out, err := fn(j)
	if err != nil {
		var f *vendor.Failure
		if !errors.As(err, &f) && !errors.Is(err, vendor.ErrNoJobs) && ctx.Err() != nil {
			return zero, ctxFailure(ctx.Err())
		}
		return zero, wrap(err)
	}
	return out, nil
}

// Validate implements vendor.Jobs.
func (p *Plugin) Validate(ctx context.Context, req *vendor.JobRequest) (*vendor.JobPlan, error) {
	return jobCall(ctx, p, func(j vendor.Jobs) (*vendor.JobPlan, error) { return j.Validate(ctx, req) })
}

// Run implements vendor.Jobs.
func (p *Plugin) Run(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return jobCall(ctx, p, func(j vendor.Jobs) (*vendor.JobOutcome, error) { return j.Run(ctx, req) })
}

// Submit implements vendor.Jobs.
func (p *Plugin) Submit(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return jobCall(ctx, p, func(j vendor.Jobs) (*vendor.JobOutcome, error) { return j.Submit(ctx, req) })
}

// Poll implements vendor.Jobs.
func (p *Plugin) Poll(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return jobCall(ctx, p, func(j vendor.Jobs) (*vendor.JobOutcome, error) { return j.Poll(ctx, req) })
}

// Read implements vendor.JobReader: a plugin without it answers
// vendor.ErrNoJobs.
func (p *Plugin) Read(ctx context.Context, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	return jobCall(ctx, p, func(j vendor.Jobs) (*vendor.JobOutcome, error) {
		r, ok := j.(vendor.JobReader)
		if !ok {
			return nil, vendor.ErrNoJobs
		}
		return r.Read(ctx, req)
	})
}

// Cancel implements vendor.Jobs.
func (p *Plugin) Cancel(ctx context.Context, req *vendor.JobRequest) error {
	_, err := jobCall(ctx, p, func(j vendor.Jobs) (struct{}, error) { return struct{}{}, j.Cancel(ctx, req) })
	return err
}

var (
	_ vendor.Jobs      = (*Plugin)(nil)
	_ vendor.JobReader = (*Plugin)(nil)
)
