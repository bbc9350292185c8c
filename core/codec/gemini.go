package codec

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// gemini is the generate-content codec (POST /v1beta/models/{model}:
// generateContent and :streamGenerateContent). The model and streaming are
// in the path; Google's JSON accepts both lowerCamel and snake_case field
// names, so both are read.
type gemini struct{}

func (gemini) Protocol() protocol.ID { return protocol.GeminiNative }

const (
	gemContents = iota
	gemSystem
	gemConfig
)

func (gemini) Inspect(body []byte) (Request, error) {
	s, start, err := openBody(body)
	if err != nil {
		return Request{}, err
	}
	var (
		r Request
		d seen
	)
	it := members(s, start)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			break
		}
		raw := s[vs:ve]
		switch name := keyName(k); name {
		case "contents":
			if err = d.mark(gemContents, name); err == nil {
				err = gemInspectContents(s, vs, raw, &r)
			}
		case "systemInstruction", "system_instruction":
			if err = d.mark(gemSystem, "systemInstruction"); err == nil {
				if !isNull(raw) && !isObject(raw) {
					err = invalid("the field %q must be a Content object: {\"parts\": [{\"text\": \"...\"}]}", name)
				}
				r.InputBytes += rawLen(raw)
			}
		case "generationConfig", "generation_config":
			if err = d.mark(gemConfig, "generationConfig"); err == nil {
				r.MaxTokens, err = gemInspectConfig(raw, name)
			}
		}
		if err != nil {
			return Request{}, err
		}
	}
	if it.bad {
		return Request{}, malformed()
	}
	if !d.has(gemContents) {
		return Request{}, invalid("the field \"contents\" is required: a non-empty array of {role, parts}")
	}
	return r, nil
}

func gemInspectContents(s string, vs int, raw string, r *Request) error {
	if !isArray(raw) {
		return invalid("the field \"contents\" must be a non-empty array of {role, parts}")
	}
	r.InputBytes += int64(len(raw))
	it := elems(s, vs)
	n := 0
	for {
		_, cs, ce, ok := it.next()
		if !ok {
			break
		}
		if !isObject(s[cs:ce]) {
			return invalid("contents[%d] must be an object with parts", n)
		}
		role, parts, partsAt := "", "", 0
		fields := members(s, cs)
		for {
			k, fs, fe, ok := fields.next()
			if !ok {
				break
			}
			switch keyName(k) {
			case "role":
				role = s[fs:fe]
			case "parts":
				parts, partsAt = s[fs:fe], fs
			}
		}
		if role != "" && !isNull(role) && !strIs(role, "user") && !strIs(role, "model") {
			return invalid("the field \"contents[%d].role\" must be \"user\" or \"model\" (got %s)", n, quoteShort(role))
		}
		if !isArray(parts) || skipWS(parts, 1) == len(parts)-1 {
			return invalid("the field \"contents[%d].parts\" must be a non-empty array of parts", n)
		}
		if err := gemInspectParts(s, partsAt, n, r); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return invalid("the field \"contents\" must be a non-empty array of {role, parts}")
	}
	return nil
}

// gemInspectParts checks that each part is an object and looks for inline
// or file data with an image MIME type.
func gemInspectParts(s string, ps int, n int, r *Request) error {
	it := elems(s, ps)
	for j := 0; ; j++ {
		_, vs, ve, ok := it.next()
		if !ok {
			return nil
		}
		part := s[vs:ve]
		if !isObject(part) {
			return invalid("contents[%d].parts[%d] must be an object", n, j)
		}
		if r.HasImages {
			continue
		}
		fields := members(s, vs)
		for {
			k, fs, fe, ok := fields.next()
			if !ok {
				break
			}
			switch keyName(k) {
			case "inlineData", "inline_data", "fileData", "file_data":
				if blob := s[fs:fe]; isObject(blob) && gemIsImage(blob) {
					r.HasImages = true
				}
			}
		}
	}
}

func gemIsImage(blob string) bool {
	mt := field(blob, "mimeType")
	if mt == "" {
		mt = field(blob, "mime_type")
	}
	return isString(mt) && strings.HasPrefix(strValue(mt), "image/")
}

func gemInspectConfig(raw, name string) (int64, error) {
	if isNull(raw) {
		return 0, nil
	}
	if !isObject(raw) {
		return 0, invalid("the field %q must be an object", name)
	}
	var max int64
	it := members(raw, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return max, nil
		}
		v := raw[vs:ve]
		var err error
		switch kn := keyName(k); kn {
		case "maxOutputTokens", "max_output_tokens":
			max, err = positiveInt(v, name+"."+kn)
		case "temperature":
			err = numberIn(v, name+"."+kn, 0, 2)
		case "topP", "top_p":
			err = numberIn(v, name+"."+kn, 0, 1)
		}
		if err != nil {
			return 0, err
		}
	}
}

func (gemini) Rewrite(body []byte, o RewriteOptions) ([]byte, error) {
	s, start, err := openForRewrite(body)
	if err != nil {
		return nil, err
	}
	if o.MaxTokens <= 0 {
		return body, nil
	}
	var e edits
	found := false
	it := members(s, start)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			break
		}
		kn := keyName(k)
		if kn != "generationConfig" && kn != "generation_config" {
			continue
		}
		found = true
		switch raw := s[vs:ve]; {
		case isObject(raw):
			name, alias := "maxOutputTokens", "max_output_tokens"
			if kn == "generation_config" {
				name, alias = alias, name
			}
			if err := setNested(&e, s, vs, name, alias, intVal(o.MaxTokens)); err != nil {
				return nil, err
			}
		default:
			e.replace(vs, ve, gemConfigVal(o.MaxTokens))
		}
	}
	if it.bad {
		return nil, malformed()
	}
	if !found {
		e.insert(&it, start, "generationConfig", gemConfigVal(o.MaxTokens))
	}
	return e.apply(body), nil
}

// gemConfigVal is a fresh generationConfig holding only maxOutputTokens.
func gemConfigVal(n int64) val {
	b := make([]byte, 0, 48)
	b = append(b, `{"maxOutputTokens":`...)
	b = appendInt(b, n)
	b = append(b, '}')
	return rawVal(string(b))
}

func (gemini) Usage(body []byte) protocol.Usage {
	return gemUsage(field(str(body), "usageMetadata"))
}

// gemUsage maps usageMetadata: output is candidates plus thoughts; input
// includes the tool-use prompt tokens, which Google bills as input.
func gemUsage(u string) protocol.Usage {
	var out protocol.Usage
	if !isObject(u) {
		return out
	}
	out.Reported = true
	it := members(u, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			break
		}
		raw := u[vs:ve]
		switch keyName(k) {
		case "promptTokenCount", "toolUsePromptTokenCount":
			out.InputTokens += count(raw)
		case "candidatesTokenCount":
			out.OutputTokens += count(raw)
		case "thoughtsTokenCount":
			n := count(raw)
			out.OutputTokens += n
			out.ReasoningTokens = n
		case "cachedContentTokenCount":
			out.CachedTokens = count(raw)
		}
	}
	return out
}

func (gemini) OutputChars(body []byte) int64 {
	n, _ := gemCandidates(field(str(body), "candidates"), nil)
	return n
}

// gemCandidates counts the generated characters of a candidates array and
// reports whether any candidate has a finishReason. A non-nil c gets
// candidate 0's parts and finish reason, read in the same walk.
func gemCandidates(cands string, c *Chunk) (chars int64, finished bool) {
	if !isArray(cands) {
		return 0, false
	}
	it := elems(cands, 0)
	for first := c != nil; ; first = false {
		_, cs, ce, ok := it.next()
		if !ok {
			return chars, finished
		}
		cand := cands[cs:ce]
		if !isObject(cand) {
			continue
		}
		fields := members(cand, 0)
		for {
			k, vs, ve, ok := fields.next()
			if !ok {
				break
			}
			raw := cand[vs:ve]
			switch keyName(k) {
			case "content":
				if parts := field(raw, "parts"); isArray(parts) {
					if first {
						chars += gemParts(parts, c)
					} else {
						chars += gemParts(parts, nil)
					}
				}
			case "finishReason", "finish_reason":
				if isString(raw) && len(raw) > 2 {
					finished = true
				}
				if first {
					c.Finish = strValue(raw)
				}
			}
		}
	}
}

// gemParts counts text (thoughts included) and function-call argument
// characters of a parts array; a non-nil c gets each part that is not a
// thought.
func gemParts(parts string, c *Chunk) int64 {
	var n int64
	it := elems(parts, 0)
	for {
		_, ps, pe, ok := it.next()
		if !ok {
			return n
		}
		p := parts[ps:pe]
		if !isObject(p) {
			continue
		}
		var text, call string
		thought := false
		fields := members(p, 0)
		for {
			k, vs, ve, ok := fields.next()
			if !ok {
				break
			}
			raw := p[vs:ve]
			switch keyName(k) {
			case "text":
				n += countChars(raw)
				text = raw
			case "functionCall", "function_call":
				if args := field(raw, "args"); isObject(args) {
					n += int64(utf8.RuneCountInString(args))
				}
				call = raw
			case "thought":
				thought = raw == "true"
			}
		}
		if c == nil || thought {
			continue
		}
		if isString(text) {
			c.Parts = append(c.Parts, Part{Text: inside(text)})
		}
		if isObject(call) {
			args := field(call, "args")
			if !isObject(args) {
				args = ""
			}
			c.Parts = append(c.Parts, Part{Call: true, ID: inside(field(call, "id")), Name: inside(field(call, "name")), Args: args})
		}
	}
}

func (gemini) ErrorMessage(body []byte) string { return errorMessage(body) }

func (gemini) NewStream() Stream { return &gemStream{} }

// gemStream tracks a streamGenerateContent (alt=sse) stream: every chunk
// is a GenerateContentResponse with cumulative usageMetadata; the last
// carries a finishReason. A prompt blocked by promptFeedback ends it too.
type gemStream struct {
	usage  protocol.Usage
	chars  int64
	done   bool
	broken bool
	respID string // the first chunk's responseId, raw, for a stop
	c      Chunk  // what the last event says
}

func (st *gemStream) Observe(ev protocol.Event) bool {
	c := &st.c
	c.reset(ev)
	i, bad := eventObject(ev.Data)
	if i < 0 {
		st.broken = st.broken || bad
		return true
	}
	c.Object = true
	s := str(ev.Data)
	it := members(s, i)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return true
		}
		raw := s[vs:ve]
		switch keyName(k) {
		case "candidates":
			// The last candidates member is the one a translator reads.
			c.Parts, c.Finish = c.Parts[:0], ""
			chars, finished := gemCandidates(raw, c)
			st.chars += chars
			st.done = st.done || finished
		case "usageMetadata", "usage_metadata":
			if isObject(raw) {
				st.usage = gemUsage(raw)
				c.Usage, c.HasUsage = st.usage, true
			}
		case "promptFeedback", "prompt_feedback":
			br := field(raw, "blockReason")
			if isString(br) && len(br) > 2 {
				st.done = true
			}
			if br == "" {
				br = field(raw, "block_reason")
			}
			c.Blocked = br != "" && !isNull(br)
		case "error":
			c.Error = ""
			if isObject(raw) {
				c.Error = raw
			}
		case "responseId":
			if st.respID == "" && isString(raw) {
				st.respID = keep(raw)
			}
		}
	}
}

// Stop ends the stream as a generate-content stream stopped by max
// tokens: a last chunk with finishReason MAX_TOKENS and the usage.
func (st *gemStream) Stop(o StopOptions, emit func(protocol.Event) error) error {
	w := stopWriter{emit: emit}
	u := o.Usage
	b := append(w.b[:0], `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":`...)
	b = strconv.AppendInt(b, u.InputTokens, 10)
	b = append(b, `,"candidatesTokenCount":`...)
	b = strconv.AppendInt(b, u.OutputTokens, 10)
	b = append(b, `,"totalTokenCount":`...)
	b = strconv.AppendInt(b, u.InputTokens+u.OutputTokens, 10)
	if u.CachedTokens > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = strconv.AppendInt(b, u.CachedTokens, 10)
	}
	b = append(b, `},"modelVersion":`...)
	b = appendQuoted(b, o.Model)
	if st.respID != "" {
		b = append(append(b, `,"responseId":`...), st.respID...)
	}
	w.send("", append(b, '}'))
	return w.err
}

func (st *gemStream) Chunk() *Chunk { return &st.c }

func (st *gemStream) Usage() protocol.Usage { return st.usage }
func (st *gemStream) OutputChars() int64    { return st.chars }
func (st *gemStream) Complete() bool        { return st.done }
func (st *gemStream) Broken() bool          { return st.broken }
