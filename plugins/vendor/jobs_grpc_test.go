package vendor_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// jobsFake serves one family and echoes what it was asked.
type jobsFake struct {
	fake
	spec vendor.FamilySpec
	got  *vendor.JobRequest
	out  *vendor.JobOutcome
	plan *vendor.JobPlan
	read bool // implements JobReader (reader wraps it)
}

func (f *jobsFake) Describe(context.Context) (vendor.Description, error) {
	return vendor.Description{Name: "jobs", Families: []string{f.spec.Name}, Specs: []vendor.FamilySpec{f.spec}}, nil
}
func (f *jobsFake) Validate(_ context.Context, r *vendor.JobRequest) (*vendor.JobPlan, error) {
	f.got = r
	return f.plan, nil
}
func (f *jobsFake) Run(_ context.Context, r *vendor.JobRequest) (*vendor.JobOutcome, error) {
	f.got = r
	return f.out, nil
}
func (f *jobsFake) Submit(_ context.Context, r *vendor.JobRequest) (*vendor.JobOutcome, error) {
	f.got = r
	return f.out, nil
}
func (f *jobsFake) Poll(_ context.Context, r *vendor.JobRequest) (*vendor.JobOutcome, error) {
	f.got = r
	return f.out, nil
}
func (f *jobsFake) Cancel(context.Context, *vendor.JobRequest) error { return nil }

type readerFake struct{ *jobsFake }

func (f readerFake) Read(_ context.Context, r *vendor.JobRequest) (*vendor.JobOutcome, error) {
	f.got = r
	return f.out, nil
}

func connectJobs(t *testing.T, impl vendor.Vendor) vendor.Vendor {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		vendor.PluginName: &vendor.GRPCPlugin{Impl: impl, DisableDataPlane: true},
	})
	raw, err := client.Dispense(vendor.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	v := raw.(vendor.Vendor)
	t.Cleanup(func() {
		v.(io.Closer).Close()
		client.Close()
	})
	return v
}

// Every field of the family contract crosses the gRPC transport intact.
func TestJobsContractRoundTrip(t *testing.T) {
	spec := vendor.FamilySpec{
		Name: "video", UnitType: "video", PriceUnit: "per_second", TaskPrefix: "vid_", StatusWords: map[string]string{"running": "busy"},
		InFlightStatus: 200, ListItem: "poll", ListLimitDefault: 30, ListLimitMax: 100, ListStatuses: []string{"queued", "failed"},
		MaxRuntime: time.Hour, AttemptTimeout: time.Minute, CallTimeout: 2 * time.Minute, KeepAliveAfter: time.Second,
		Retention: 24 * time.Hour, ResumeAfterRestart: true, ModelOptional: true,
		Record: true, RecordError: vendor.RecordErrorMessage, ExpireResults: true,
		Caps:     []vendor.CapField{{Path: "duration.max", Setting: "max_duration", Kind: vendor.CapInt}},
		Refusals: vendor.Refusals{NotAllowed: 403, NotFound: 404},
		Endpoint: "videos", LogKind: "video",
		Examples: []vendor.Example{{Method: "GET", Path: "/v1/x", Note: "   # pick one"},
			{Family: "other", Method: "POST", Path: "/v1/x", Body: `"prompt": "p"`}},
		Routes: []vendor.FamilyRoute{
			{Method: "POST", Path: "/v1/x", Kind: vendor.RouteCreate, Operation: "make", Multipart: true, MaxBody: 9, Async: vendor.AsyncField,
				UnitType: "avatar", PriceUnit: "per_call", TaskPrefix: "avt_", Model: "m-create", StatusWords: map[string]string{"succeeded": "ready"},
				Recorded: true, Refs: []vendor.RefField{{Field: "voice", Prefix: "voc_"}}, Gate: "clip",
				RecordError: vendor.RecordErrorMessage, ExpireRecords: true, LogKind: "audio"},
			{Method: "GET", Path: "/v1/x", Kind: vendor.RouteList, Operation: "presets", TaskPrefix: "avt_",
				List: &vendor.ListSpec{Statuses: []string{"ready"}, LimitDefault: 200, LimitMax: 200, ToExcludesDay: true, Bare: true}},
			{Method: "DELETE", Path: "/v1/x/{id}", Kind: vendor.RouteDelete},
		},
	}
	f := &jobsFake{spec: spec}
	v := connectJobs(t, readerFake{f})
	d, err := v.Describe(t.Context())
	if err != nil || len(d.Specs) != 1 || !reflect.DeepEqual(d.Specs[0], spec) {
		t.Fatalf("spec %+v %v\nwant %+v", d.Specs, err, spec)
	}
	if !vendor.SameSpec(&d.Specs[0], &spec) {
		t.Fatal("SameSpec of a spec and its copy")
	}
	j := v.(vendor.Jobs)
	req := &vendor.JobRequest{Family: "video", Operation: "make", Channel: "c", Body: []byte(`{}`),
		Model:  vendor.JobModel{ID: "m", Upstream: "u", Settings: map[string]string{"a": "b"}, Tiers: []string{"fast"}},
		TaskID: "vid_1", Submitted: time.UnixMilli(1700000000123),
		Files: []vendor.JobFile{{Field: "image", Filename: "a.png", ContentType: "image/png", URL: "http://127.0.0.1/files/x", Size: 7, SHA256: "ab"}},
		Refs:  []vendor.JobRef{{Field: "voice", TaskID: "voc_1", Family: "voice", Model: "v", UpstreamRef: "up", Record: []byte(`{"id":"voc_1"}`)}},
	}
	f.plan = &vendor.JobPlan{Hold: []vendor.Units{{Count: 5}}, UpstreamJob: true, Record: []byte(`{"id":"vid_1"}`)}
	plan, err := j.Validate(t.Context(), req)
	if err != nil || !reflect.DeepEqual(plan, f.plan) || !reflect.DeepEqual(f.got, req) {
		t.Fatalf("plan %+v %v\nrequest %+v", plan, err, f.got)
	}
	f.out = &vendor.JobOutcome{State: vendor.JobCancelled, Status: 200, Body: []byte(`{}`), ExpiresAt: time.UnixMilli(1700000999000),
		URLs:  []string{"https://u/x"},
		Files: []vendor.ResultFile{{Slot: "video_url", URL: "https://u/v.mp4", Header: map[string]string{"authorization": "k"}, Inline: true}},
		Error: &vendor.JobError{Status: 499, Message: "cancelled"}}
	out, err := j.Poll(t.Context(), req)
	if err != nil || !reflect.DeepEqual(out, f.out) {
		t.Fatalf("outcome %+v %v", out, err)
	}
	out, err = v.(vendor.JobReader).Read(t.Context(), req)
	if err != nil || !reflect.DeepEqual(out, f.out) {
		t.Fatalf("read %+v %v", out, err)
	}
	// A plugin without JobReader answers ErrNoJobs.
	bare := connectJobs(t, &jobsFake{spec: spec}).(vendor.JobReader)
	if _, err := bare.Read(t.Context(), req); !errors.Is(err, vendor.ErrNoJobs) {
		t.Fatalf("read of a plugin without reads: %v", err)
	}
}

func TestSameShape(t *testing.T) {
	a := &vendor.FamilySpec{Name: "video", TaskPrefix: "vid_", PriceUnit: "per_second"}
	b := &vendor.FamilySpec{Name: "clip", TaskPrefix: "vid_", PriceUnit: "per_call"}
	ra := &vendor.FamilyRoute{Method: "POST", Path: "/v1/videos/generations", Kind: "create", Async: "always"}
	rb := *ra
	if why := vendor.SameShape(a, ra, b, &rb); why != "" {
		t.Fatalf("one route, two price units: %s", why)
	}
	rb.Refs = []vendor.RefField{{Field: "asr_id", Prefix: "sub_"}}
	if why := vendor.SameShape(a, ra, b, &rb); why != "" {
		t.Fatalf("one route, each family its own reference fields: %s", why)
	}
	rb.TaskPrefix = "clp_"
	if why := vendor.SameShape(a, ra, b, &rb); why == "" {
		t.Fatal("two task prefixes share a route")
	}
}
