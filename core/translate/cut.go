package translate

import (
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// CutAnswer rewrites a complete upstream answer (in protocol upstream) for
// a client of protocol client as an answer stopped at max tokens: its text
// cut to keep characters, the tool calls that no longer fit dropped, the
// finish reason a length stop and the usage u. The gateway cuts an
// upstream's answer that ran past the limit it sent there. The two
// protocols may be the same: the answer is then read and written again by
// that protocol's own side (fields the intermediate form does not carry,
// thinking among them, are lost with the part cut away).
func CutAnswer(client, upstream protocol.ID, body []byte, keep int64, u protocol.Usage, o ResponseOptions) ([]byte, error) {
	from, to := sideOf(client), sideOf(upstream)
	if from == nil || to == nil {
		return nil, invalid("unknown protocol")
	}
	root, err := answerRoot(body, o.Checked)
	if err != nil {
		return nil, err
	}
	a, err := to.read(root)
	if err != nil {
		return nil, err
	}
	text, n := cutRaw(a.text, keep)
	a.text = text
	left := keep - n
	calls := a.calls[:0]
	for _, c := range a.calls {
		size := int64(utf8.RuneCountInString(c.args))
		if size > left {
			break
		}
		left -= size
		calls = append(calls, c)
	}
	a.calls, a.finish, a.usage = calls, finishLength, usageOf(u)
	return from.write(a, o, len(body)), nil
}

// cutRaw cuts raw, the inside of a JSON string (escapes kept), to at most
// n characters, never inside an escape or a character; it returns the cut
// text and how many characters it holds.
func cutRaw(raw []byte, n int64) ([]byte, int64) {
	var count int64
	for i := 0; i < len(raw); {
		if count == n {
			return raw[:i], count
		}
		size := 1
		switch {
		case raw[i] == '\\' && i+1 < len(raw) && raw[i+1] == 'u':
			size = 6
			// A surrogate pair is one character.
			if i+12 <= len(raw) && isHighSurrogate(raw[i+2:i+6]) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				size = 12
			}
		case raw[i] == '\\':
			size = 2
		case raw[i] >= utf8.RuneSelf:
			_, size = utf8.DecodeRune(raw[i:])
		}
		i = min(i+size, len(raw))
		count++
	}
	return raw, count
}

// isHighSurrogate reports whether hex (four hex digits) is D800 to DBFF.
func isHighSurrogate(hex []byte) bool {
	return len(hex) == 4 && (hex[0] == 'd' || hex[0] == 'D') && (hex[1] >= '8' && hex[1] <= '9' || hex[1] >= 'a' && hex[1] <= 'b' || hex[1] >= 'A' && hex[1] <= 'B')
}

// usageOf is a reported usage in the intermediate form.
func usageOf(u protocol.Usage) usage {
	return usage{input: u.InputTokens, output: u.OutputTokens, cached: u.CachedTokens,
		cacheWrite: u.CacheWriteTokens, reasoning: u.ReasoningTokens}
}
