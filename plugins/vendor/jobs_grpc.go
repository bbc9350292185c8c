package vendor

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vendorv1 "github.com/tollgate-gw/tollgate/proto/vendorplugin/v1"
)

// ErrNoJobs is what the Jobs methods of a plugin that serves no family
// return (the plugin answered codes.Unimplemented).
var ErrNoJobs = errors.New("vendor: the plugin serves no endpoint family")

// jobsServer is the plugin side of the Jobs service.
type jobsServer struct {
	vendorv1.UnimplementedJobsServer
	impl Jobs
}

func (s *jobsServer) Validate(ctx context.Context, req *vendorv1.JobRequest) (*vendorv1.JobPlan, error) {
	p, err := s.impl.Validate(ctx, fromProtoJob(req))
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, status.Error(codes.Internal, "Validate returned no plan")
	}
	return &vendorv1.JobPlan{Hold: toProtoUnits(p.Hold), Error: toProtoJobError(p.Error), UpstreamJob: p.UpstreamJob,
		Record: p.Record}, nil
}

func (s *jobsServer) outcome(o *JobOutcome, err error) (*vendorv1.JobOutcome, error) {
	var f *Failure
	if errors.As(err, &f) {
		return &vendorv1.JobOutcome{Failure: toProtoFailure(f)}, nil
	}
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, status.Error(codes.Internal, "the plugin returned no outcome")
	}
	return toProtoOutcome(o), nil
}

func (s *jobsServer) Run(ctx context.Context, req *vendorv1.JobRequest) (*vendorv1.JobOutcome, error) {
	return s.outcome(s.impl.Run(ctx, fromProtoJob(req)))
}

func (s *jobsServer) Submit(ctx context.Context, req *vendorv1.JobRequest) (*vendorv1.JobOutcome, error) {
	return s.outcome(s.impl.Submit(ctx, fromProtoJob(req)))
}

func (s *jobsServer) Poll(ctx context.Context, req *vendorv1.JobRequest) (*vendorv1.JobOutcome, error) {
	return s.outcome(s.impl.Poll(ctx, fromProtoJob(req)))
}

func (s *jobsServer) Read(ctx context.Context, req *vendorv1.JobRequest) (*vendorv1.JobOutcome, error) {
	r, ok := s.impl.(JobReader)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the plugin serves no read routes")
	}
	return s.outcome(r.Read(ctx, fromProtoJob(req)))
}

func (s *jobsServer) Cancel(ctx context.Context, req *vendorv1.JobRequest) (*vendorv1.CancelReply, error) {
	err := s.impl.Cancel(ctx, fromProtoJob(req))
	var f *Failure
	if errors.As(err, &f) {
		return &vendorv1.CancelReply{Failure: toProtoFailure(f)}, nil
	}
	if err != nil {
		return nil, err
	}
	return &vendorv1.CancelReply{}, nil
}

// jobsClient is the host side of the Jobs service.
type jobsClient struct {
	c vendorv1.JobsClient
}

func jobsErr(err error) error {
	if status.Code(err) == codes.Unimplemented {
		return ErrNoJobs
	}
	return err
}

func (c jobsClient) Validate(ctx context.Context, req *JobRequest) (*JobPlan, error) {
	r, err := c.c.Validate(ctx, toProtoJob(req), maxCall...)
	if err != nil {
		return nil, jobsErr(err)
	}
	return &JobPlan{Hold: fromProtoUnits(r.GetHold()), Error: fromProtoJobError(r.GetError()), UpstreamJob: r.GetUpstreamJob(),
		Record: r.GetRecord()}, nil
}

func (c jobsClient) outcome(r *vendorv1.JobOutcome, err error) (*JobOutcome, error) {
	if err != nil {
		return nil, jobsErr(err)
	}
	if f := r.GetFailure(); f != nil {
		return nil, fromProtoFailure(f)
	}
	return fromProtoOutcome(r), nil
}

func (c jobsClient) Run(ctx context.Context, req *JobRequest) (*JobOutcome, error) {
	return c.outcome(c.c.Run(ctx, toProtoJob(req), maxCall...))
}

func (c jobsClient) Submit(ctx context.Context, req *JobRequest) (*JobOutcome, error) {
	return c.outcome(c.c.Submit(ctx, toProtoJob(req), maxCall...))
}

func (c jobsClient) Poll(ctx context.Context, req *JobRequest) (*JobOutcome, error) {
	return c.outcome(c.c.Poll(ctx, toProtoJob(req), maxCall...))
}

func (c jobsClient) Read(ctx context.Context, req *JobRequest) (*JobOutcome, error) {
	return c.outcome(c.c.Read(ctx, toProtoJob(req), maxCall...))
}

func (c jobsClient) Cancel(ctx context.Context, req *JobRequest) error {
	r, err := c.c.Cancel(ctx, toProtoJob(req), maxCall...)
	if err != nil {
		return jobsErr(err)
	}
	if f := r.GetFailure(); f != nil {
		return fromProtoFailure(f)
	}
	return nil
}

func toProtoJob(r *JobRequest) *vendorv1.JobRequest {
	p := &vendorv1.JobRequest{
		Family: r.Family, Operation: r.Operation, Channel: r.Channel, Body: r.Body, Async: r.Async,
		UpstreamRef: r.UpstreamRef, RequestId: r.RequestID, TimeoutMs: r.Timeout.Milliseconds(),
		Headers: r.Headers,
		Model:   &vendorv1.JobModel{Id: r.Model.ID, Upstream: r.Model.Upstream, Settings: r.Model.Settings, Tiers: r.Model.Tiers},
		TaskId:  r.TaskID,
	}
	if !r.Submitted.IsZero() {
		p.SubmittedMs = r.Submitted.UnixMilli()
	}
	for _, f := range r.Files {
		p.Files = append(p.Files, &vendorv1.JobFile{Field: f.Field, Filename: f.Filename, ContentType: f.ContentType,
			Data: f.Data, Url: f.URL, Size: f.Size, Sha256: f.SHA256})
	}
	for _, ref := range r.Refs {
		p.Refs = append(p.Refs, &vendorv1.JobRef{Field: ref.Field, TaskId: ref.TaskID, Family: ref.Family, Model: ref.Model,
			UpstreamRef: ref.UpstreamRef, Record: ref.Record})
	}
	return p
}

func fromProtoJob(p *vendorv1.JobRequest) *JobRequest {
	m := p.GetModel()
	r := &JobRequest{
		Family: p.GetFamily(), Operation: p.GetOperation(), Channel: p.GetChannel(), Body: p.GetBody(),
		Async: p.GetAsync(), UpstreamRef: p.GetUpstreamRef(), RequestID: p.GetRequestId(),
		Timeout: time.Duration(p.GetTimeoutMs()) * time.Millisecond, Headers: p.GetHeaders(),
		Model:  JobModel{ID: m.GetId(), Upstream: m.GetUpstream(), Settings: m.GetSettings(), Tiers: m.GetTiers()},
		TaskID: p.GetTaskId(),
	}
	if ms := p.GetSubmittedMs(); ms != 0 {
		r.Submitted = time.UnixMilli(ms)
	}
	for _, f := range p.GetFiles() {
		r.Files = append(r.Files, JobFile{Field: f.GetField(), Filename: f.GetFilename(), ContentType: f.GetContentType(),
			Data: f.GetData(), URL: f.GetUrl(), Size: f.GetSize(), SHA256: f.GetSha256()})
	}
	for _, ref := range p.GetRefs() {
		r.Refs = append(r.Refs, JobRef{Field: ref.GetField(), TaskID: ref.GetTaskId(), Family: ref.GetFamily(),
			Model: ref.GetModel(), UpstreamRef: ref.GetUpstreamRef(), Record: ref.GetRecord()})
	}
	return r
}

func toProtoUnits(us []Units) []*vendorv1.Units {
	out := make([]*vendorv1.Units, len(us))
	for i, u := range us {
		out[i] = &vendorv1.Units{Tier: u.Tier, Count: u.Count}
	}
	return out
}

func fromProtoUnits(us []*vendorv1.Units) []Units {
	if len(us) == 0 {
		return nil
	}
	out := make([]Units, len(us))
	for i, u := range us {
		out[i] = Units{Tier: u.GetTier(), Count: u.GetCount()}
	}
	return out
}

func toProtoJobError(e *JobError) *vendorv1.JobError {
	if e == nil {
		return nil
	}
	return &vendorv1.JobError{Status: int32(e.Status), Code: e.Code, Message: e.Message}
}

func fromProtoJobError(e *vendorv1.JobError) *JobError {
	if e == nil {
		return nil
	}
	return &JobError{Status: int(e.GetStatus()), Code: e.GetCode(), Message: e.GetMessage()}
}

func toProtoOutcome(o *JobOutcome) *vendorv1.JobOutcome {
	p := &vendorv1.JobOutcome{
		State: vendorv1.JobState(o.State), UpstreamRef: o.UpstreamRef, PollAfterMs: o.PollAfter.Milliseconds(),
		Units: toProtoUnits(o.Units), Status: int32(o.Status), Headers: o.Headers, Body: o.Body,
		Urls: o.URLs, ExpiresSlot: o.ExpiresSlot, Error: toProtoJobError(o.Error), Inline: o.Inline,
	}
	if !o.ExpiresAt.IsZero() {
		p.ExpiresAtMs = o.ExpiresAt.UnixMilli()
	}
	for _, f := range o.Files {
		p.Files = append(p.Files, &vendorv1.ResultFile{Slot: f.Slot, ContentType: f.ContentType, Name: f.Name, Data: f.Data,
			Url: f.URL, Header: f.Header, Inline: f.Inline})
	}
	return p
}

func fromProtoOutcome(p *vendorv1.JobOutcome) *JobOutcome {
	o := &JobOutcome{
		State: JobState(p.GetState()), UpstreamRef: p.GetUpstreamRef(),
		PollAfter: time.Duration(p.GetPollAfterMs()) * time.Millisecond, Units: fromProtoUnits(p.GetUnits()),
		Status: int(p.GetStatus()), Headers: p.GetHeaders(), Body: p.GetBody(), URLs: p.GetUrls(),
		ExpiresSlot: p.GetExpiresSlot(), Error: fromProtoJobError(p.GetError()), Inline: p.GetInline(),
	}
	if ms := p.GetExpiresAtMs(); ms != 0 {
		o.ExpiresAt = time.UnixMilli(ms)
	}
	for _, f := range p.GetFiles() {
		o.Files = append(o.Files, ResultFile{Slot: f.GetSlot(), ContentType: f.GetContentType(), Name: f.GetName(), Data: f.GetData(),
			URL: f.GetUrl(), Header: f.GetHeader(), Inline: f.GetInline()})
	}
	return o
}

func toProtoSpecs(ss []FamilySpec) []*vendorv1.FamilySpec {
	out := make([]*vendorv1.FamilySpec, len(ss))
	for i, s := range ss {
		p := &vendorv1.FamilySpec{
			Name: s.Name, UnitType: s.UnitType, PriceUnit: s.PriceUnit, TaskPrefix: s.TaskPrefix,
			StatusWords: s.StatusWords, InFlightStatus: int32(s.InFlightStatus), ListItem: s.ListItem,
			ListLimitDefault: int32(s.ListLimitDefault), ListLimitMax: int32(s.ListLimitMax),
			MaxRuntimeMs: s.MaxRuntime.Milliseconds(), AttemptTimeoutMs: s.AttemptTimeout.Milliseconds(),
			CallTimeoutMs: s.CallTimeout.Milliseconds(), KeepaliveAfterMs: s.KeepAliveAfter.Milliseconds(),
			RetentionMs: s.Retention.Milliseconds(), ResumeAfterRestart: s.ResumeAfterRestart,
			ModelOptional: s.ModelOptional, ListToExcludesDay: s.ListToExcludesDay, ListStatuses: s.ListStatuses,
			Record: s.Record, RecordError: s.RecordError, ExpireResults: s.ExpireResults,
			NotAllowedStatus: int32(s.Refusals.NotAllowed), NotFoundStatus: int32(s.Refusals.NotFound),
			EndpointType: s.Endpoint, LogKind: s.LogKind,
		}
		for _, e := range s.Examples {
			p.Examples = append(p.Examples, &vendorv1.Example{Family: e.Family, Method: e.Method, Path: e.Path, Body: e.Body, Note: e.Note})
		}
		for _, c := range s.Caps {
			p.Caps = append(p.Caps, &vendorv1.CapField{Path: c.Path, Setting: c.Setting, Kind: c.Kind})
		}
		for _, r := range s.Routes {
			pr := &vendorv1.FamilyRoute{Method: r.Method, Path: r.Path, Kind: r.Kind,
				Operation: r.Operation, Multipart: r.Multipart, MaxBody: r.MaxBody, Async: r.Async,
				UnitType: r.UnitType, PriceUnit: r.PriceUnit, TaskPrefix: r.TaskPrefix, Model: r.Model,
				StatusWords: r.StatusWords, Recorded: r.Recorded, Gate: r.Gate,
				RecordError: r.RecordError, ExpireRecords: r.ExpireRecords, LogKind: r.LogKind}
			for _, f := range r.Refs {
				pr.Refs = append(pr.Refs, &vendorv1.RefField{Field: f.Field, Prefix: f.Prefix})
			}
			if l := r.List; l != nil {
				pr.List = &vendorv1.ListSpec{Statuses: l.Statuses, LimitDefault: int32(l.LimitDefault),
					LimitMax: int32(l.LimitMax), ToExcludesDay: l.ToExcludesDay, Bare: l.Bare}
			}
			p.Routes = append(p.Routes, pr)
		}
		out[i] = p
	}
	return out
}

func fromProtoSpecs(ps []*vendorv1.FamilySpec) []FamilySpec {
	if len(ps) == 0 {
		return nil
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	out := make([]FamilySpec, len(ps))
	for i, p := range ps {
		s := FamilySpec{
			Name: p.GetName(), UnitType: p.GetUnitType(), PriceUnit: p.GetPriceUnit(), TaskPrefix: p.GetTaskPrefix(),
			StatusWords: p.GetStatusWords(), InFlightStatus: int(p.GetInFlightStatus()), ListItem: p.GetListItem(),
			ListLimitDefault: int(p.GetListLimitDefault()), ListLimitMax: int(p.GetListLimitMax()),
			ListStatuses: p.GetListStatuses(), ListToExcludesDay: p.GetListToExcludesDay(),
			MaxRuntime: ms(p.GetMaxRuntimeMs()), AttemptTimeout: ms(p.GetAttemptTimeoutMs()),
			CallTimeout: ms(p.GetCallTimeoutMs()), KeepAliveAfter: ms(p.GetKeepaliveAfterMs()),
			Retention: ms(p.GetRetentionMs()), ResumeAfterRestart: p.GetResumeAfterRestart(),
			ModelOptional: p.GetModelOptional(),
			Record:        p.GetRecord(), RecordError: p.GetRecordError(), ExpireResults: p.GetExpireResults(),
			Refusals: Refusals{NotAllowed: int(p.GetNotAllowedStatus()), NotFound: int(p.GetNotFoundStatus())},
			Endpoint: p.GetEndpointType(), LogKind: p.GetLogKind(),
		}
		for _, e := range p.GetExamples() {
			s.Examples = append(s.Examples, Example{Family: e.GetFamily(), Method: e.GetMethod(), Path: e.GetPath(), Body: e.GetBody(), Note: e.GetNote()})
		}
		for _, c := range p.GetCaps() {
			s.Caps = append(s.Caps, CapField{Path: c.GetPath(), Setting: c.GetSetting(), Kind: c.GetKind()})
		}
		for _, r := range p.GetRoutes() {
			rt := FamilyRoute{Method: r.GetMethod(), Path: r.GetPath(), Kind: r.GetKind(),
				Operation: r.GetOperation(), Multipart: r.GetMultipart(), MaxBody: r.GetMaxBody(), Async: r.GetAsync(),
				UnitType: r.GetUnitType(), PriceUnit: r.GetPriceUnit(), TaskPrefix: r.GetTaskPrefix(), Model: r.GetModel(),
				StatusWords: r.GetStatusWords(), Recorded: r.GetRecorded(), Gate: r.GetGate(),
				RecordError: r.GetRecordError(), ExpireRecords: r.GetExpireRecords(), LogKind: r.GetLogKind()}
			for _, f := range r.GetRefs() {
				rt.Refs = append(rt.Refs, RefField{Field: f.GetField(), Prefix: f.GetPrefix()})
			}
			if l := r.GetList(); l != nil {
				rt.List = &ListSpec{Statuses: l.GetStatuses(), LimitDefault: int(l.GetLimitDefault()),
					LimitMax: int(l.GetLimitMax()), ToExcludesDay: l.GetToExcludesDay(), Bare: l.GetBare()}
			}
			s.Routes = append(s.Routes, rt)
		}
		out[i] = s
	}
	return out
}

var (
	_ Jobs                = jobsClient{}
	_ JobReader           = jobsClient{}
	_ vendorv1.JobsServer = (*jobsServer)(nil)
)
