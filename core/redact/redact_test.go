package redact

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	r := Channels([]string{"openai-main", "azure-eu"})
	tests := []struct {
		desc, in, want string
	}{
		{desc: "empty", in: "", want: ""},
		{desc: "plain text untouched", in: "model overloaded, try again later", want: "model overloaded, try again later"},
		{desc: "url", in: "POST https://api.example.com/v1/chat?key=abc failed", want: "POST [url] failed"},
		{desc: "tollgate key", in: "bad key sk-tollgate-" + strings.Repeat("ab", 32), want: "bad key sk-[redacted]"},
		{desc: "bearer", in: "header Authorization: Bearer abc.def", want: "header Authorization: Bearer [redacted]"},
		{desc: "assignment", in: `{"api_key": "xyz123"}`, want: `{"api_key": "[redacted]"}`},
		{desc: "long hex", in: "sig " + strings.Repeat("0f", 20) + " end", want: "sig [redacted] end"},
		{desc: "long base64 mixing letters and digits", in: "tok AbCdEf0123456789AbCdEf0123456789xyz== end", want: "tok [redacted] end"},
		{desc: "long plain word kept", in: "supercalifragilisticexpialidociousness", want: "supercalifragilisticexpialidociousness"},
		{desc: "channel name", in: "channel openai-main returned 500", want: "channel [channel] returned 500"},
		{desc: "channel name any case, adjacent", in: "tried OPENAI-MAIN,azure-eu", want: "tried [channel],[channel]"},
		{desc: "channel name inside a word kept", in: "myopenai-mainframe", want: "myopenai-mainframe"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := r.Redact(tc.in); got != tc.want {
				t.Fatalf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// The operator's own values are masked exactly, even when no pattern
// would recognise them.
func TestRedactConfiguredValues(t *testing.T) {
	r := New(Options{
		Channels: []string{"line-a"},
		Secrets:  []string{"plain words key", "hunter2x", "abc", "upstream-key-that-is-long"},
		Hosts:    []string{"Upstream.Internal.corp", "upstream.internal.corp:8443", "10.0.0.7"},
	})
	tests := []struct {
		desc, in, want string
	}{
		{desc: "a key with spaces", in: "invalid key: plain words key.", want: "invalid key: [redacted]."},
		{desc: "a short key as a token", in: "key hunter2x rejected", want: "key [redacted] rejected"},
		{desc: "a short key inside a word kept", in: "xhunter2xy", want: "xhunter2xy"},
		{desc: "a key under the minimum ignored", in: "abc def", want: "abc def"},
		{desc: "a long key anywhere", in: "k=xupstream-key-that-is-longy", want: "k=x[redacted]y"},
		{desc: "a long key, case matters", in: "UPSTREAM-KEY-THAT-IS-LONG", want: "UPSTREAM-KEY-THAT-IS-LONG"},
		{desc: "host with port", in: "dial upstream.internal.corp:8443: refused", want: "dial [host]: refused"},
		{desc: "host any case, sentence end", in: "cannot reach UPSTREAM.internal.CORP.", want: "cannot reach [host]."},
		{desc: "host as a label of another name kept", in: "api.upstream.internal.corp.example", want: "api.upstream.internal.corp.example"},
		{desc: "ip host", in: "connect 10.0.0.7:99 failed", want: "connect [host]:99 failed"},
		{desc: "ip inside another ip kept", in: "110.0.0.75", want: "110.0.0.75"},
		{desc: "url with the host", in: "see http://upstream.internal.corp:8443/v1/x", want: "see [url]"},
		{desc: "everything at once", in: "line-a (10.0.0.7) said: bad key hunter2x", want: "[channel] ([host]) said: bad key [redacted]"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := r.Redact(tc.in); got != tc.want {
				t.Fatalf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	var none *Redactor
	if got := none.Redact("sk-abcdefghij at https://x.y"); got != "sk-[redacted] at [url]" {
		t.Fatalf("nil redactor: %q", got)
	}
}
