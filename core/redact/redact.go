// Package redact masks what an operator keeps to himself in text that
// reaches a client: URLs, key material, the channels' configured keys and
// hosts, and upstream line (channel) names. The log row's error fields and
// an upstream error's message passed through to the client go through the
// same Redactor (spec: call logs, error_message "redacted"; PRODUCT.md §7:
// "as in the log row").
//
// It is a foundation package: it imports nothing of the gateway.
package redact

import (
	"regexp"
	"sort"
	"strings"
)

// Patterns of secrets and addresses. They are compiled once and never
// modified.
var (
	reURL    = regexp.MustCompile(`(?i)\b(?:https?|wss?)://[^\s"'<>]+`)
	reBearer = regexp.MustCompile(`(?i)\bbearer\s+[^\s"',;]+`)
	reSKKey  = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{6,}`)
	// key=value style secrets: api_key=..., "token": "...", password: ...
	reAssign = regexp.MustCompile(`(?i)\b(api[_-]?key|access[_-]?token|token|secret|password|authorization)("?\s*[:=]\s*"?)[^\s"',;&]+`)
	reHex    = regexp.MustCompile(`\b[0-9a-fA-F]{32,}\b`)
	// Long runs of the base64 alphabets; kept only if they mix letters and
	// digits (see maskLongToken), so long plain words survive.
	reB64 = regexp.MustCompile(`[A-Za-z0-9+/_\-]{32,}={0,2}`)
)

// Masks put in place of what is hidden.
const (
	Secret  = "[redacted]"
	Host    = "[host]"
	Channel = "[channel]"
)

// MinSecret is the shortest configured secret masked exactly: shorter
// values cannot be told from ordinary words.
const MinSecret = 4

// wholeSecret is the length from which a configured secret is masked
// wherever it appears, not only as a whole token.
const wholeSecret = 16

// Options are the operator's own values to mask, beyond the patterns.
type Options struct {
	// Channels are upstream line names, masked as "[channel]"
	// (case-insensitive, whole words).
	Channels []string
	// Secrets are exact values masked as "[redacted]" (case-sensitive),
	// such as the channels' api_key values, whether or not they look like
	// keys. A value of 16 characters or more is masked wherever it appears;
	// a shorter one as a whole token; one under MinSecret is ignored.
	Secrets []string
	// Hosts are host names or host:port pairs (the channels' base_url
	// hosts), masked as "[host]" (case-insensitive, whole names).
	Hosts []string
}

// Redactor masks secrets, URLs and channel names. It is immutable and safe
// for concurrent use; a nil *Redactor masks the patterns only.
type Redactor struct {
	channels *regexp.Regexp // nil when no names are configured
	secrets  []string       // longest first
	hosts    []string       // lower case, longest first
}

// New returns a Redactor for the given options.
func New(o Options) *Redactor {
	r := &Redactor{
		secrets: uniqueLongestFirst(o.Secrets, MinSecret, false),
		hosts:   uniqueLongestFirst(o.Hosts, 1, true),
	}
	names := make([]string, 0, len(o.Channels))
	for _, n := range uniqueLongestFirst(o.Channels, 1, false) {
		names = append(names, regexp.QuoteMeta(n))
	}
	if len(names) > 0 {
		// Longest first, so "openai-main" wins over "openai".
		r.channels = regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_\-.])(` + strings.Join(names, "|") + `)($|[^A-Za-z0-9_\-])`)
	}
	return r
}

// Channels returns a Redactor masking the given channel names only.
func Channels(names []string) *Redactor { return New(Options{Channels: names}) }

func uniqueLongestFirst(in []string, minLen int, lower bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		s = strings.TrimSpace(s)
		if lower {
			s = strings.ToLower(s)
		}
		if len(s) < minLen || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Redact returns s with the configured secrets and hosts, key material,
// URLs and channel names masked.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	if r != nil {
		// The operator's exact values first, before a pattern rewrites
		// part of one and hides it from the exact match.
		for _, v := range r.secrets {
			s = replaceExact(s, v, Secret, len(v) < wholeSecret, false)
		}
		for _, h := range r.hosts {
			s = replaceExact(s, h, Host, true, true)
		}
	}
	s = reURL.ReplaceAllString(s, "[url]")
	s = reBearer.ReplaceAllString(s, "Bearer "+Secret)
	s = reSKKey.ReplaceAllString(s, "sk-"+Secret)
	s = reAssign.ReplaceAllStringFunc(s, maskAssignment)
	s = reHex.ReplaceAllString(s, Secret)
	s = reB64.ReplaceAllStringFunc(s, maskLongToken)
	if r != nil && r.channels != nil {
		// Adjacent names share a separator, so a second pass catches the
		// ones the first pass's match consumed.
		for i := 0; i < 2; i++ {
			s = r.channels.ReplaceAllString(s, "${1}"+Channel+"${3}")
		}
	}
	return s
}

// replaceExact replaces each occurrence of v in s by mask. With whole, an
// occurrence counts only when no identifier character touches it (for a
// host, no label character either: "api.example.com" is not inside
// "xapi.example.com" nor "api.example.com.evil"). fold matches ASCII case-
// insensitively; v is then lower case.
func replaceExact(s, v, mask string, whole, fold bool) string {
	hay := s
	if fold {
		hay = asciiLower(s)
	}
	if !strings.Contains(hay, v) {
		return s
	}
	var b strings.Builder
	last := 0
	for off := 0; off <= len(hay)-len(v); {
		i := strings.Index(hay[off:], v)
		if i < 0 {
			break
		}
		i += off
		end := i + len(v)
		if whole && !(boundaryBefore(hay, i, fold) && boundaryAfter(hay, end, fold)) {
			off = i + 1
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(mask)
		last, off = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func boundaryBefore(s string, i int, host bool) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	return !identByte(c) && !(host && c == '.')
}

func boundaryAfter(s string, end int, host bool) bool {
	if end == len(s) {
		return true
	}
	c := s[end]
	if host && c == '.' {
		// A sentence's full stop ends the name; another label does not.
		return end+1 == len(s) || !identByte(s[end+1])
	}
	return !identByte(c)
}

func identByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// asciiLower lowers ASCII letters only, so byte offsets stay those of s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// maskAssignment masks the value of name=value, except a "Bearer" value,
// whose token the bearer pattern has already masked.
func maskAssignment(m string) string {
	sub := reAssign.FindStringSubmatchIndex(m)
	value := m[sub[5]:]
	if strings.EqualFold(value, "bearer") || value == Secret {
		return m
	}
	return m[:sub[5]] + Secret
}

func maskLongToken(tok string) string {
	var letter, digit bool
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	if letter && digit {
		return Secret
	}
	return tok
}
