// Package familytest is the shared kit of the families' conformance
// suites: calling a plugin as the gateway does (Execute, SubmitAndPoll),
// serving it over the real gRPC transport (OverGRPC), the checks every
// family shares (Failed, WantFailure), and Suite, the cases every family
// runs: its spec in Describe, its refusals and holds at Validate, a
// success, the sim's job markers ([sim:error=CODE] refused at submit,
// [sim:fail=CODE] failed at its end, [sim:latency=DUR], [sim:hang]), an
// unknown channel, and a task's record. A family's own suite
// (imagestest, videotest...) fills a Suite and adds its own cases.
package familytest

import (
	"context"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Bounds of the suites.
const (
	CallLimit   = 20 * time.Second
	HangTimeout = 300 * time.Millisecond
	HangLimit   = 5 * time.Second
)

// Ctx is a context bounded for one call of a suite.
func Ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), CallLimit)
	t.Cleanup(cancel)
	return c
}

// Jobs is v's Jobs service.
func Jobs(t *testing.T, v vendor.Vendor) vendor.Jobs {
	t.Helper()
	j, ok := v.(vendor.Jobs)
	if !ok {
		t.Fatalf("%T does not implement vendor.Jobs", v)
	}
	return j
}

// Execute runs a request the way the gateway does: Validate, then Run,
// or Submit and Poll when the plan says the upstream runs a job.
func Execute(t *testing.T, j vendor.Jobs, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	t.Helper()
	plan, err := j.Validate(Ctx(t), req)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if plan.Error != nil {
		t.Fatalf("Validate refused: %+v", plan.Error)
	}
	if !plan.UpstreamJob {
		return j.Run(Ctx(t), req)
	}
	return SubmitAndPoll(t, j, req)
}

// SubmitAndPoll submits req and polls it until it ends.
func SubmitAndPoll(t *testing.T, j vendor.Jobs, req *vendor.JobRequest) (*vendor.JobOutcome, error) {
	t.Helper()
	out, err := j.Submit(Ctx(t), req)
	if err != nil || out.State != vendor.JobRunning {
		return out, err
	}
	if out.UpstreamRef == "" {
		t.Fatal("Submit: running without an upstream reference")
	}
	deadline := time.Now().Add(CallLimit / 2)
	for out.State == vendor.JobRunning {
		if time.Now().After(deadline) {
			t.Fatalf("the job still runs after %v", CallLimit/2)
		}
		time.Sleep(min(max(out.PollAfter, 5*time.Millisecond), 50*time.Millisecond))
		p := *req
		p.UpstreamRef = out.UpstreamRef
		if out, err = j.Poll(Ctx(t), &p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Failed checks an outcome is the upstream's refusal with status.
func Failed(t *testing.T, out *vendor.JobOutcome, err error, status int) {
	t.Helper()
	if err != nil {
		t.Fatalf("error %v, want a %d outcome", err, status)
	}
	if out.State != vendor.JobFailed || out.Error == nil || out.Error.Status != status || out.Error.Message == "" {
		t.Fatalf("outcome state %d error %+v, want failed with the upstream's %d and message", out.State, out.Error, status)
	}
	if len(out.Units) != 0 || len(out.Files) != 0 {
		t.Fatalf("a failure delivers units %+v, %d files", out.Units, len(out.Files))
	}
}

// WantFailure checks err is a *vendor.Failure of kind.
func WantFailure(t *testing.T, err error, kind vendor.FailureKind) {
	t.Helper()
	var f *vendor.Failure
	if !errors.As(err, &f) || f.Kind != kind {
		t.Fatalf("error %v (%T), want a *vendor.Failure of kind %d", err, err, kind)
	}
}

// Keys lists an object's member names, in order.
func Keys(r gjson.Result) string {
	var ks []string
	r.ForEach(func(k, _ gjson.Result) bool {
		ks = append(ks, k.String())
		return true
	})
	return strings.Join(ks, ",")
}

// OverGRPC serves impl over the real gRPC transport of plugins/vendor, in
// process, and returns the host side: the same interfaces, every call
// crossing protobuf and gRPC. Configure it like the vendor itself.
func OverGRPC(t *testing.T, impl vendor.Vendor) vendor.Vendor {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		vendor.PluginName: &vendor.GRPCPlugin{Impl: impl},
	})
	raw, err := client.Dispense(vendor.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	v := raw.(vendor.Vendor)
	t.Cleanup(func() {
		if c, ok := v.(io.Closer); ok {
			_ = c.Close()
		}
		_ = client.Close()
	})
	return v
}

// Describes checks v's Describe names the family and returns its spec.
func Describes(t *testing.T, v vendor.Vendor, name string, spec vendor.FamilySpec) {
	t.Helper()
	d, err := v.Describe(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != name {
		t.Errorf("name %q, want %q", d.Name, name)
	}
	if !slices.Contains(d.Families, spec.Name) {
		t.Errorf("families %v lack %q", d.Families, spec.Name)
	}
	i := slices.IndexFunc(d.Specs, func(f vendor.FamilySpec) bool { return f.Name == spec.Name })
	if i < 0 {
		t.Fatalf("no %q family spec in %+v", spec.Name, d.Specs)
	}
	if !reflect.DeepEqual(d.Specs[i], spec) {
		t.Fatalf("spec %+v\nwant %+v", d.Specs[i], spec)
	}
}

// Case is a request body (and files, and the earlier tasks it names as
// the gateway resolved them) of a suite.
type Case struct {
	Desc  string
	Body  string
	Files []vendor.JobFile
	Refs  []vendor.JobRef
}

// Hold is a body and the units Validate holds for it.
type Hold struct {
	Desc string
	Body string
	Want []vendor.Units
}

// Target is a plugin under a family's suite.
type Target struct {
	// Name is the plugin's name in Describe.
	Name string
	// New returns the vendor under test, configured with Channel ("main"
	// when empty).
	New     func(t *testing.T) vendor.Vendor
	Channel string
	// Model is the model the requests name.
	Model vendor.JobModel
}

// Suite is a family's conformance cases against one plugin.
type Suite struct {
	Target
	Spec vendor.FamilySpec
	// Operation of the requests; Async for a family whose creates are
	// always tasks.
	Operation string
	Async     bool
	// Refusals are bodies Validate refuses with 400 invalid_request.
	Refusals []Case
	// Holds are bodies and the units they hold.
	Holds []Hold
	// Good is a body that succeeds; Check checks its outcome (units
	// included). Its prompt-like field takes the sim's markers as
	// Marked(extra) writes them.
	Good  Case
	Check func(t *testing.T, req *vendor.JobRequest, out *vendor.JobOutcome)
	// Marked is Good with a marker ([sim:...]) in the field the
	// upstream reads markers from.
	Marked func(marker string) Case
}

// Request is a request of the suite for body and files.
func (s *Suite) Request(c Case) *vendor.JobRequest {
	req := &vendor.JobRequest{Family: s.Spec.Name, Operation: s.Operation, Channel: s.Channel, Model: s.Model,
		Body: []byte(c.Body), Files: c.Files, Refs: c.Refs, RequestID: "req-conformance", Timeout: CallLimit / 2,
		TaskID: s.Spec.TaskPrefix + "conformance", Submitted: time.Unix(1767225600, 0)}
	req.Async = s.Async || gjson.Get(c.Body, "async").Bool()
	return req
}

// Run runs the suite's cases as subtests of t.
func (s *Suite) Run(t *testing.T) {
	t.Helper()
	if s.Channel == "" {
		s.Channel = "main"
	}
	v := s.New(t)
	j := Jobs(t, v)
	t.Run("describe", func(t *testing.T) { Describes(t, v, s.Name, s.Spec) })
	t.Run("validate_refusals", func(t *testing.T) {
		for _, c := range s.Refusals {
			t.Run(c.Desc, func(t *testing.T) {
				plan, err := j.Validate(Ctx(t), s.Request(c))
				if err != nil {
					t.Fatal(err)
				}
				if plan.Error == nil || plan.Error.Status != 400 || plan.Error.Code != "invalid_request" || plan.Error.Message == "" {
					t.Fatalf("plan %+v, want a 400 invalid_request refusal", plan)
				}
				if len(plan.Hold) != 0 {
					t.Fatalf("a refusal holds %+v", plan.Hold)
				}
			})
		}
	})
	t.Run("hold", func(t *testing.T) {
		for _, h := range s.Holds {
			t.Run(h.Desc, func(t *testing.T) {
				plan, err := j.Validate(Ctx(t), s.Request(Case{Body: h.Body, Refs: s.Good.Refs}))
				if err != nil || plan.Error != nil {
					t.Fatalf("%+v %v", plan, err)
				}
				if !reflect.DeepEqual(plan.Hold, h.Want) {
					t.Fatalf("hold %+v, want %+v", plan.Hold, h.Want)
				}
			})
		}
	})
	t.Run("record", func(t *testing.T) {
		if !s.Spec.Record {
			t.Skip("the family's tasks are not records")
		}
		req := s.Request(s.Good)
		plan, err := j.Validate(Ctx(t), req)
		if err != nil || plan.Error != nil {
			t.Fatalf("%+v %v", plan, err)
		}
		if !s.Async && !req.Async && !s.recorded() {
			return
		}
		r := gjson.ParseBytes(plan.Record)
		if !r.IsObject() || r.Get("id").Str != req.TaskID {
			t.Fatalf("the record %s does not carry the task id %s", plan.Record, req.TaskID)
		}
		if c := r.Get("created_at"); c.Exists() && c.Type == gjson.Number && c.Int() != req.Submitted.Unix() {
			t.Fatalf("created_at %s, want %d", c.Raw, req.Submitted.Unix())
		}
	})
	t.Run("succeeds", func(t *testing.T) {
		req := s.Request(s.Good)
		out, err := Execute(t, j, req)
		if err != nil {
			t.Fatal(err)
		}
		if out.State != vendor.JobSucceeded || out.Error != nil {
			t.Fatalf("outcome %+v", out)
		}
		s.Check(t, req, out)
	})
	t.Run("upstream_error", func(t *testing.T) {
		for _, status := range []int{400, 429, 500, 503} {
			t.Run(strconv.Itoa(status), func(t *testing.T) {
				out, err := Execute(t, j, s.Request(s.Marked("[sim:error="+strconv.Itoa(status)+"]")))
				Failed(t, out, err, status)
			})
		}
	})
	t.Run("job_failure_at_its_end", func(t *testing.T) {
		out, err := Execute(t, j, s.Request(s.Marked("[sim:fail=502,latency=20ms]")))
		Failed(t, out, err, 502)
	})
	t.Run("unknown_channel", func(t *testing.T) {
		req := s.Request(s.Good)
		req.Channel = "familytest-unknown-channel"
		_, err := j.Run(Ctx(t), req)
		WantFailure(t, err, vendor.FailureConfig)
		_, err = j.Submit(Ctx(t), req)
		var f *vendor.Failure
		if !errors.As(err, &f) {
			t.Fatalf("Submit: %v (%T), want a *vendor.Failure", err, err)
		}
	})
	t.Run("hang_timeout", func(t *testing.T) {
		req := s.Request(s.Marked("[sim:hang]"))
		req.Timeout = HangTimeout
		start := time.Now()
		_, err := j.Run(Ctx(t), req)
		WantFailure(t, err, vendor.FailureTimeout)
		if d := time.Since(start); d > HangLimit {
			t.Fatalf("a %v timeout took %v", HangTimeout, d)
		}
	})
	t.Run("upstream_job", func(t *testing.T) {
		req := s.Request(s.Marked("[sim:latency=1h]"))
		plan, err := j.Validate(Ctx(t), req)
		if err != nil || plan.Error != nil {
			t.Fatalf("%+v %v", plan, err)
		}
		if !plan.UpstreamJob {
			t.Skip("the plugin runs this family synchronously")
		}
		out, err := j.Submit(Ctx(t), req)
		if err != nil || out.State != vendor.JobRunning || out.UpstreamRef == "" {
			t.Fatalf("submit %+v %v", out, err)
		}
		req.UpstreamRef = out.UpstreamRef
		out, err = j.Poll(Ctx(t), req)
		if err != nil || out.State != vendor.JobRunning || out.PollAfter <= 0 || len(out.Units) != 0 {
			t.Fatalf("poll %+v %v", out, err)
		}
		req.UpstreamRef = "familytest-no-such-job"
		out, err = j.Poll(Ctx(t), req)
		var f *vendor.Failure
		if err == nil && out.State != vendor.JobFailed || err != nil && !errors.As(err, &f) {
			t.Fatalf("poll of an unknown job: %+v %v", out, err)
		}
	})
}

func (s *Suite) recorded() bool {
	for _, r := range s.Spec.Routes {
		if r.Kind == vendor.RouteCreate && r.Recorded {
			return true
		}
	}
	return false
}

// Wrap puts a vendor behind a transport (or none).
type Wrap func(t *testing.T, v vendor.Vendor) vendor.Vendor

// Transports runs fn twice: behind the in-process transport
// (vendor.InProcess, as the gateway runs a built-in vendor for a channel
// with transport = "in-process") and behind the real gRPC transport
// (OverGRPC), so both behave alike.
func Transports(t *testing.T, fn func(t *testing.T, wrap Wrap)) {
	t.Helper()
	t.Run("in_process", func(t *testing.T) {
		fn(t, func(_ *testing.T, v vendor.Vendor) vendor.Vendor { return vendor.InProcess(v, nil) })
	})
	t.Run("grpc", func(t *testing.T) { fn(t, OverGRPC) })
}
