package tavily_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/vendorsim"
	"github.com/tollgate-gw/tollgate/plugins/family/search"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/tavily"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func start(t *testing.T, settings map[string]string) (*tavily.Vendor, *vendorsim.Recorder) {
	t.Helper()
	rec := &vendorsim.Recorder{}
	upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "tvly-key", Record: rec.Record})
	v := tavily.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: upURL + "/", APIKey: "tvly-key", Settings: settings})
	return v, rec
}

func searchReq(upstream, body string) *vendor.JobRequest {
	return &vendor.JobRequest{Family: search.Family, Operation: search.OpSearch, Channel: "main", Body: []byte(body),
		Model: vendor.JobModel{ID: "web", Upstream: upstream}, Timeout: 5 * time.Second, Headers: vt.ClientHeaders()}
}

// The wire: POST /search with the key in Authorization: Bearer, the
// family's query and max_results, the model's search depth over the
// client's, the client's other fields verbatim; the results' content is
// the snippet.
func TestSearchWire(t *testing.T) {
	v, rec := start(t, nil)
	out, err := v.Run(context.Background(), searchReq("advanced",
		`{"query":"toll roads","max_results":2,"search_depth":"basic","topic":"news","api_key":"client-key"}`))
	if err != nil || out.State != vendor.JobSucceeded {
		t.Fatalf("%+v %v", out, err)
	}
	got, _ := rec.Last("/search")
	b := gjson.ParseBytes(got.Body)
	if got.Method != "POST" || got.Header.Get("Authorization") != "Bearer tvly-key" || got.Header.Get("Content-Type") != "application/json" ||
		b.Get("query").Str != "toll roads" || b.Get("max_results").Int() != 2 || b.Get("search_depth").Str != "advanced" ||
		b.Get("topic").Str != "news" || b.Get("api_key").Exists() {
		t.Fatalf("upstream got %s %v %s", got.Path, got.Header, got.Body)
	}
	vt.NoClientHeaders(t, got.Header)
	res := gjson.ParseBytes(out.Body)
	if res.Get("object").Str != "search.results" || len(res.Get("results").Array()) != 2 ||
		!strings.HasPrefix(res.Get("results.0.snippet").Str, "Simulated Tavily content 1") || res.Get("results.0.content").Exists() {
		t.Fatalf("answer %s", out.Body)
	}

	// A model of another upstream id leaves the client's depth alone.
	if _, err := v.Run(context.Background(), searchReq("tavily", `{"query":"q","search_depth":"basic"}`)); err != nil {
		t.Fatal(err)
	}
	got, _ = rec.Last("/search")
	if gjson.GetBytes(got.Body, "search_depth").Str != "basic" || gjson.GetBytes(got.Body, "max_results").Int() != 5 {
		t.Fatalf("upstream got %s", got.Body)
	}
}

// key_in_body sends the key as api_key, and no Authorization header.
func TestKeyInBody(t *testing.T) {
	v, rec := start(t, map[string]string{tavily.SettingKeyInBody: "true"})
	if out, err := v.Run(context.Background(), searchReq("basic", `{"query":"q"}`)); err != nil || out.State != vendor.JobSucceeded {
		t.Fatalf("%+v %v", out, err)
	}
	got, _ := rec.Last("/search")
	if got.Header.Get("Authorization") != "" || gjson.GetBytes(got.Body, "api_key").Str != "tvly-key" {
		t.Fatalf("upstream got %v %s", got.Header, got.Body)
	}
}

// Tavily's errors pass through with their status and detail.error.
func TestSearchErrors(t *testing.T) {
	v, _ := start(t, nil)
	for _, tc := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"query":"q [sim:error=432]"}`, 432, "Simulated upstream error 432"},
		{`{"query":"q [sim:error=429]"}`, 429, "Simulated upstream error 429"},
		{`{"query":"q","search_depth":"deep"}`, 400, "Invalid search depth"},
		{`{"query":"q","unknown_knob":1}`, 400, "Unknown parameter: unknown_knob."},
	} {
		out, err := v.Run(context.Background(), searchReq("tavily", tc.body))
		if err != nil || out.State != vendor.JobFailed || out.Error.Status != tc.status || !strings.Contains(out.Error.Message, tc.msg) {
			t.Fatalf("%s: %+v %v", tc.body, out.Error, err)
		}
	}
	bad := tavily.New()
	vt.Configure(t, bad, vendor.Channel{Name: "main", BaseURL: "http://127.0.0.1:1", APIKey: "k"})
	if _, err := bad.Run(context.Background(), searchReq("tavily", `{"query":"q"}`)); vt.Kind(err) != vendor.FailureConnect {
		t.Fatalf("closed port: %v", err)
	}
}

// A wrong key is Tavily's 401, passed through.
func TestWrongKey(t *testing.T) {
	upURL := vendorsim.Serve(t, vendorsim.Options{APIKey: "tvly-key"})
	v := tavily.New()
	vt.Configure(t, v, vendor.Channel{Name: "main", BaseURL: upURL, APIKey: "tvly-wrong"})
	out, err := v.Run(context.Background(), searchReq("tavily", `{"query":"q"}`))
	if err != nil || out.Error == nil || out.Error.Status != 401 || out.Error.Message != "Unauthorized: missing or invalid API key." {
		t.Fatalf("%+v %v", out, err)
	}
}

// Channels are checked at start: a key, no chat protocols, known
// settings, a base URL.
func TestChannelChecks(t *testing.T) {
	for _, ch := range []vendor.Channel{
		{Name: "c", BaseURL: "https://api.tavily.com"},
		{Name: "c", BaseURL: "https://api.tavily.com", APIKey: "k", Protocols: []string{"openai_chat"}},
		{Name: "c", BaseURL: "https://api.tavily.com", APIKey: "k", Settings: map[string]string{"depth": "x"}},
		{Name: "c", BaseURL: "https://api.tavily.com", APIKey: "k", Settings: map[string]string{tavily.SettingKeyInBody: "maybe"}},
		{Name: "c", BaseURL: "ftp://api.tavily.com", APIKey: "k"},
	} {
		if err := tavily.New().Configure(context.Background(), vendor.Config{Channels: []vendor.Channel{ch}}); err == nil {
			t.Errorf("%+v was accepted", ch)
		}
	}
}
