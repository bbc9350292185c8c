package syncso_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/familytest"
	"github.com/tollgate-gw/tollgate/plugins/family/lipsync/lipsynctest"
	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/syncso"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

const key = "sync-test-key"

func configured(t *testing.T, v vendor.Vendor, base string, settings map[string]string) vendor.Vendor {
	t.Helper()
	if err := v.Configure(t.Context(), vendor.Config{AllowPrivateURLs: true,
		Channels: []vendor.Channel{{Name: "main", BaseURL: base, APIKey: key, Settings: settings}}}); err != nil {
		t.Fatal(err)
	}
	return v
}

// The plugin passes the lip-sync family's suite against an in-test
// server speaking sync.so's wire, in process and over gRPC.
func TestLipsyncConformance(t *testing.T) {
	base := vendorsim.Serve(t, vendorsim.Options{APIKey: key})
	familytest.Transports(t, func(t *testing.T, wrap familytest.Wrap) {
		lipsynctest.Run(t, lipsynctest.Target{Target: familytest.Target{Name: syncso.Name,
			New: func(t *testing.T) vendor.Vendor {
				return configured(t, wrap(t, syncso.New()), base, map[string]string{syncso.SettingPollAfter: "20ms"})
			},
			Model: vendor.JobModel{ID: "dh-lipsync", Upstream: "lipsync-2", Settings: map[string]string{"max_duration": "10"}}}})
	})
}

// What goes over the wire: the generation's create with x-api-key, the
// upstream's model, the two inputs and the options; then its reads. The
// video is a link the gateway fetches (no key sent), and the output's
// seconds settle.
func TestWire(t *testing.T) {
	var rec vendorsim.Recorder
	base := vendorsim.Serve(t, vendorsim.Options{APIKey: key, Record: rec.Record})
	v := configured(t, syncso.New(), base+"/", map[string]string{syncso.SettingSyncMode: "cut_off", syncso.SettingPollAfter: "10ms"})
	j := v.(vendor.Jobs)
	req := &vendor.JobRequest{Family: "lipsync", Operation: video.OpGenerations, Channel: "main", Async: true, TaskID: "vid_1",
		Model: vendor.JobModel{ID: "dh-lipsync-pro", Upstream: "lipsync-2-pro"}, Timeout: familytest.CallLimit,
		Body: []byte(`{"model":"dh-lipsync-pro","source_video_url":"https://cdn.example/v.mp4?m=[sim:seconds=6.2]","audio_url":"https://cdn.example/a.wav","duration":9,"options":{"temperature":0.5}}`)}
	out, err := familytest.Execute(t, j, req)
	if err != nil || out.State != vendor.JobSucceeded {
		t.Fatalf("%+v %v", out, err)
	}
	if len(out.Files) != 1 || !strings.HasPrefix(out.Files[0].URL, base+"/sync-files/") || len(out.Files[0].Header) != 0 ||
		len(out.Units) != 1 || out.Units[0].Count != 7 {
		t.Fatalf("files %+v units %+v", out.Files, out.Units)
	}
	calls := rec.Requests()
	create := calls[0]
	var body map[string]any
	_ = json.Unmarshal(create.Body, &body)
	if create.Method != "POST" || create.Path != "/v2/generate" || create.Header.Get("X-Api-Key") != key ||
		create.Header.Get("Content-Type") != "application/json" || body["model"] != "lipsync-2-pro" ||
		gjson.GetBytes(create.Body, `input.#(type=="video").url`).Str != "https://cdn.example/v.mp4?m=[sim:seconds=6.2]" ||
		gjson.GetBytes(create.Body, `input.#(type=="audio").url`).Str != "https://cdn.example/a.wav" ||
		gjson.GetBytes(create.Body, "options.sync_mode").Str != "cut_off" || gjson.GetBytes(create.Body, "options.temperature").Num != 0.5 {
		t.Fatalf("create %+v %s", create, create.Body)
	}
	last := calls[len(calls)-1]
	if last.Method != "GET" || !strings.HasPrefix(last.Path, "/v2/generate/") || last.Header.Get("X-Api-Key") != key || len(last.Body) != 0 {
		t.Fatalf("read %+v", last)
	}
	// A wrong key is the upstream's 401, its message passed on.
	bad := configured(t, syncso.New(), base, nil)
	if err := bad.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: base, APIKey: "wrong"}}}); err != nil {
		t.Fatal(err)
	}
	out, err = bad.(vendor.Jobs).Submit(t.Context(), req)
	familytest.Failed(t, out, err, 401)
	// A channel without a key, or with protocols, is refused at start.
	for _, ch := range []vendor.Channel{{Name: "c", BaseURL: base}, {Name: "c", BaseURL: base, APIKey: "k", Protocols: []string{"openai_chat"}}} {
		if err := syncso.New().Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{ch}}); err == nil {
			t.Fatalf("channel %+v accepted", ch)
		}
	}
	// A private link is refused unless the operator allows it.
	priv := syncso.New()
	if err := priv.Configure(t.Context(), vendor.Config{Channels: []vendor.Channel{{Name: "main", BaseURL: base, APIKey: key}}}); err != nil {
		t.Fatal(err)
	}
	r2 := *req
	r2.Body = []byte(`{"source_video_url":"http://10.1.2.3/v.mp4","audio_url":"https://cdn.example/a.wav","duration":3}`)
	if plan, err := priv.Validate(t.Context(), &r2); err != nil || plan.Error == nil || !strings.Contains(plan.Error.Message, "private") {
		t.Fatalf("%+v %v", plan, err)
	}
}
