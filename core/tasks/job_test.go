package tasks

import (
	"bytes"
	"encoding/gob"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// A job round-trips with its prices, and a job an earlier version wrote as
// gob still reads.
func TestJobEncoding(t *testing.T) {
	j := Job{
		Request: vendor.JobRequest{Family: "video", Channel: "c", Body: []byte(`{"prompt":"p"}`), TaskID: "vid_1",
			Submitted: time.Unix(1700000000, 0).UTC(), Files: []vendor.JobFile{{Field: "image", URL: "http://127.0.0.1/files/x", Size: 3}}},
		UpstreamJob: true, LinkBase: "https://gw",
		Price:      &config.Price{PerSecond: money.MustParse("0.07"), PerSecondByResolution: map[string]money.Nano{"720p": money.MustParse("0.11")}},
		Alternates: []Alternate{{Channel: "b", Vendor: "sim", Upstream: "u"}},
	}
	b, err := j.Encode()
	if err != nil || b[0] != '{' {
		t.Fatalf("%s %v", b, err)
	}
	got, err := DecodeJob(b)
	if err != nil || !reflect.DeepEqual(got, j) {
		t.Fatalf("%+v %v\nwant %+v", got, err, j)
	}
	var old bytes.Buffer
	if err := gob.NewEncoder(&old).Encode(&j); err != nil {
		t.Fatal(err)
	}
	got, err = DecodeJob(old.Bytes())
	if err != nil || got.Request.TaskID != "vid_1" || got.Price.PerSecond != money.MustParse("0.07") {
		t.Fatalf("gob: %+v %v", got, err)
	}
}
