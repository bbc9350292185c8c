package logsapi

import (
	"regexp"
	"sort"
	"strings"
)

// Patterns of secrets and addresses masked in error_code and error_message.
// They are compiled once and never modified.
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

// Redactor masks URLs, key material and upstream channel names in the
// error fields shown to clients (spec: call logs rule 9). It is immutable
// and safe for concurrent use.
type Redactor struct {
	channels *regexp.Regexp // nil when no names are configured
}

// NewRedactor returns a Redactor masking the given upstream channel names
// (case-insensitive, whole words) as "[channel]".
func NewRedactor(channelNames []string) *Redactor {
	names := make([]string, 0, len(channelNames))
	for _, n := range channelNames {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, regexp.QuoteMeta(n))
		}
	}
	r := &Redactor{}
	if len(names) == 0 {
		return r
	}
	// Longest first, so "openai-main" wins over "openai".
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	r.channels = regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_\-.])(` + strings.Join(names, "|") + `)($|[^A-Za-z0-9_\-])`)
	return r
}

// Redact returns s with secrets, URLs and channel names masked.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	s = reURL.ReplaceAllString(s, "[url]")
	s = reBearer.ReplaceAllString(s, "Bearer [redacted]")
	s = reSKKey.ReplaceAllString(s, "sk-[redacted]")
	s = reAssign.ReplaceAllStringFunc(s, maskAssignment)
	s = reHex.ReplaceAllString(s, "[redacted]")
	s = reB64.ReplaceAllStringFunc(s, maskLongToken)
	if r != nil && r.channels != nil {
		// Adjacent names share a separator, so a second pass catches the
		// ones the first pass's match consumed.
		for i := 0; i < 2; i++ {
			s = r.channels.ReplaceAllString(s, "${1}[channel]${3}")
		}
	}
	return s
}

// maskAssignment masks the value of name=value, except a "Bearer" value,
// whose token the bearer pattern has already masked.
func maskAssignment(m string) string {
	sub := reAssign.FindStringSubmatchIndex(m)
	value := m[sub[5]:]
	if strings.EqualFold(value, "bearer") || value == "[redacted]" {
		return m
	}
	return m[:sub[5]] + "[redacted]"
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
		return "[redacted]"
	}
	return tok
}
