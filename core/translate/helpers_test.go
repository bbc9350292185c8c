package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/sse"
)

var testResp = ResponseOptions{
	Model:        "client-model",
	RequestID:    "req123",
	Created:      time.Unix(1754000000, 0),
	IncludeUsage: true,
}

func mustLookup(t testing.TB, from, to protocol.ID) Translator {
	t.Helper()
	tr, ok := Lookup(from, to)
	if !ok {
		t.Fatalf("no translator %s -> %s", from, to)
	}
	if tr.From() != from || tr.To() != to {
		t.Fatalf("translator reports %s -> %s", tr.From(), tr.To())
	}
	return tr
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadEvents(t testing.TB, name string) []protocol.Event {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(readFixture(t, name)))
	var evs []protocol.Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// runStream feeds events through a new stream and calls End.
func runStream(t testing.TB, tr Translator, evs []protocol.Event, o ResponseOptions) []protocol.Event {
	t.Helper()
	var out []protocol.Event
	emit := func(ev protocol.Event) error {
		if ev.Name == "" && !isDone(ev.Data) || ev.Name != "" {
			if !json.Valid(ev.Data) {
				t.Fatalf("emitted invalid JSON: %s", ev.Data)
			}
		}
		// The stream reuses its buffer: keep a copy.
		out = append(out, protocol.Event{Name: ev.Name, Data: bytes.Clone(ev.Data)})
		return nil
	}
	s := tr.NewStream(o)
	for _, ev := range evs {
		if err := s.Event(ev, emit); err != nil {
			t.Fatalf("Event(%s): %v", ev.Data, err)
		}
	}
	if err := s.End(emit); err != nil {
		t.Fatalf("End: %v", err)
	}
	return out
}

// reqCase is one request mapping case: want maps gjson paths of the
// output to their expected raw JSON.
type reqCase struct {
	desc string
	body string
	opts RequestOptions
	want map[string]string
	warn []string
	err  string
}

func runRequestCases(t *testing.T, tr Translator, cases []reqCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			out, warns, err := tr.Request([]byte(tc.body), tc.opts)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("want error %q, got body %s", tc.err, out)
				}
				var ae *apierr.Error
				if !errors.As(err, &ae) || ae.Code != apierr.InvalidRequest || ae.Status != 400 {
					t.Fatalf("error %v is not invalid_request", err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %q does not mention %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Request: %v", err)
			}
			if !json.Valid(out) {
				t.Fatalf("invalid JSON: %s", out)
			}
			for path, want := range tc.want {
				got := gjson.GetBytes(out, path)
				if want == "<absent>" {
					if got.Exists() {
						t.Errorf("%s present: %s", path, got.Raw)
					}
					continue
				}
				if compact(got.Raw) != compact(want) {
					t.Errorf("%s = %s, want %s\nbody: %s", path, got.Raw, want, out)
				}
			}
			if !slices.Equal(warns, tc.warn) {
				t.Errorf("warnings = %q, want %q", warns, tc.warn)
			}
		})
	}
}

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// checkPaths asserts gjson paths of a JSON document.
func checkPaths(t *testing.T, doc []byte, want map[string]string) {
	t.Helper()
	if !json.Valid(doc) {
		t.Fatalf("invalid JSON: %s", doc)
	}
	for path, w := range want {
		if got := gjson.GetBytes(doc, path); compact(got.Raw) != compact(w) {
			t.Errorf("%s = %s, want %s\ndoc: %s", path, got.Raw, w, doc)
		}
	}
}

func TestLookupAndHeader(t *testing.T) {
	t.Parallel()
	n := 0
	for _, from := range protocol.All {
		for _, to := range protocol.All {
			tr, ok := Lookup(from, to)
			if from == to {
				if ok {
					t.Errorf("Lookup(%s, %s) found a translator for a native call", from, to)
				}
				continue
			}
			n++
			mustLookup(t, from, to)
			if got, want := HeaderValue(from, to), string(from)+"_to_"+string(to); got != want || tr == nil {
				t.Errorf("HeaderValue = %q, want %q", got, want)
			}
		}
	}
	if n != 12 {
		t.Errorf("%d pairs, want 12", n)
	}
	if HeaderValue(protocol.OpenAIChat, protocol.AnthropicMessages) != "openai_chat_to_anthropic_messages" {
		t.Error("header value of the spec's first pair")
	}
	if _, ok := Lookup("openai_chat", "nope"); ok {
		t.Error("Lookup of an unknown protocol")
	}
}

func TestAppendStr(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "q\"uote\\", "ctl\n\r\t\x01\x1f", "ünï€😀", "bad\xffutf8", "\u2028"} {
		t.Run(s, func(t *testing.T) {
			b := appendStr(nil, s)
			var got string
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			want := strings.ToValidUTF8(s, "\uFFFD")
			if got != want {
				t.Errorf("round trip %q -> %q", s, got)
			}
		})
	}
}

// isDone reports whether data is the [DONE] sentinel.
func isDone(data []byte) bool {
	return strings.TrimRight(string(data), " \r\n") == "[DONE]"
}
