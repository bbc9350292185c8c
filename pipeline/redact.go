package pipeline

import (
	"bytes"
	"net/url"
	"slices"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/redact"
)

// RedactorFor is the gateway's one Redactor: the patterns, plus the
// config's channel names, api_key values and base_url hosts. The log
// rows' error fields and the upstream errors passed to clients both go
// through it (PRODUCT.md §7: masked "as in the log row").
func RedactorFor(cfg *config.Config) *redact.Redactor {
	var o redact.Options
	for _, ch := range cfg.Channels {
		o.Channels = append(o.Channels, ch.Name)
		o.Secrets = append(o.Secrets, ch.APIKey)
		if u, err := url.Parse(ch.BaseURL); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			o.Hosts = append(o.Hosts, u.Host, u.Hostname())
		}
	}
	slices.Sort(o.Channels)
	return redact.New(o)
}

// errorKey finds candidate error events cheaply: every error event of the
// four protocols has an "error" key (responses-style lifecycle events carry
// "error":null too, and are looked at and left alone).
var errorKey = []byte(`"error"`)

// maskErrorEvent masks the messages of an upstream error event passed to
// the client: a completions or generate-content chunk {"error":{message}},
// a messages-style event {"type":"error","error":{message}}, a
// responses-style event {"type":"error","message"} or response.failed
// {"response":{"error":{message}}}. Everything else of the event stays as
// the upstream sent it; data is returned unchanged when nothing is masked.
func maskErrorEvent(red *redact.Redactor, data []byte) []byte {
	if !bytes.Contains(data, errorKey) {
		return data
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return data
	}
	out := data
	mask := func(path string) {
		m := root.Get(path)
		if m.Type != gjson.String {
			return
		}
		if v := red.Redact(m.Str); v != m.Str {
			if b, err := sjson.SetBytes(out, path, v); err == nil {
				out = b
			}
		}
	}
	if root.Get("error").IsObject() {
		mask("error.message")
	}
	if root.Get("type").Str == "error" {
		mask("message")
	}
	if root.Get("response.error").IsObject() {
		mask("response.error.message")
	}
	return out
}
