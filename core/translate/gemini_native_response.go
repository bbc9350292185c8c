package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The generate-content protocol's answer side.

// geminiFinish maps a finishReason; calls says a function was called.
func geminiFinish(s string, calls bool) string {
	switch s {
	case "":
		return ""
	case "MAX_TOKENS":
		return finishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT":
		return finishFilter
	}
	if calls {
		return finishTools
	}
	return finishStop
}

// finishReason maps a finish reason to a finishReason.
func finishReason(s string) string {
	switch s {
	case finishLength:
		return "MAX_TOKENS"
	case finishFilter:
		return "SAFETY"
	}
	return "STOP"
}

func readGeminiUsage(u gjson.Result, into *usage) {
	if !isObject(u) {
		return
	}
	var prompt, toolPrompt, candidates, cached, thoughts int64
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "promptTokenCount":
			prompt = v.Int()
		case "toolUsePromptTokenCount":
			toolPrompt = v.Int()
		case "candidatesTokenCount":
			candidates = v.Int()
		case "cachedContentTokenCount":
			cached = v.Int()
		case "thoughtsTokenCount":
			thoughts = v.Int()
		}
		return true
	})
	*into = usage{input: prompt + toolPrompt, output: candidates + thoughts, cached: cached, reasoning: thoughts}
}

func appendGeminiUsage(b []byte, u usage) []byte {
	b = append(b, `{"promptTokenCount":`...)
	b = strconv.AppendInt(b, u.input, 10)
	b = append(b, `,"candidatesTokenCount":`...)
	b = strconv.AppendInt(b, max(u.output-u.reasoning, 0), 10)
	b = append(b, `,"totalTokenCount":`...)
	b = strconv.AppendInt(b, u.input+u.output, 10)
	if u.cached > 0 {
		b = keyInt(b, "cachedContentTokenCount", u.cached)
	}
	if u.reasoning > 0 {
		b = keyInt(b, "thoughtsTokenCount", u.reasoning)
	}
	return append(b, '}')
}

// geminiCall reads a functionCall; n numbers calls without an id.
func geminiCall(fc gjson.Result, n int) call {
	c := call{name: inner(fc.Get("name")), id: inner(fc.Get("id")), args: "{}"}
	if c.id == "" {
		c.id = syntheticCallID(n)
	}
	if a := fc.Get("args"); isObject(a) {
		c.args = a.Raw
	}
	return c
}

// geminiError reads the error object of a failed answer or chunk.
func geminiError(e gjson.Result) *apierr.Error {
	if code := int(e.Get("code").Int()); code >= 400 && code <= 599 {
		return apierr.FromUpstream(code, strings.Clone(e.Get("message").Str))
	}
	return upstreamStreamError(e.Get("status").Str, e.Get("message").Str)
}

func readGemini(r gjson.Result) (*answer, error) {
	if e := r.Get("error"); isObject(e) {
		return nil, geminiError(e)
	}
	a := &answer{}
	cand := r.Get("candidates.0")
	eachElement(cand.Get("content.parts"), func(p gjson.Result) bool {
		if p.Get("thought").Type == gjson.True {
			return true
		}
		if t := p.Get("text"); t.Type == gjson.String {
			a.text = append(a.text, inner(t)...)
		}
		if fc := getAny(p, "functionCall", "function_call"); isObject(fc) {
			a.calls = append(a.calls, geminiCall(fc, len(a.calls)))
		}
		return true
	})
	readGeminiUsage(r.Get("usageMetadata"), &a.usage)
	a.finish = geminiFinish(cand.Get("finishReason").Str, len(a.calls) > 0)
	if a.finish == "" {
		a.finish = finishStop
		if present(r.Get("promptFeedback.blockReason")) {
			a.finish = finishFilter
		}
	}
	return a, nil
}

// appendFunctionCallPart writes a functionCall part; id and name are raw
// insides. The id lets a client that echoes it be matched exactly.
func appendFunctionCallPart(b []byte, id, name, args string) []byte {
	b = append(b, `{"functionCall":{"id":"`...)
	b = append(b, id...)
	b = append(b, `","name":"`...)
	b = append(b, name...)
	b = append(b, `","args":`...)
	b = append(b, argsObject(args)...)
	return append(b, "}}"...)
}

// appendGeminiChunk writes a GenerateContentResponse around parts.
func appendGeminiChunk(b []byte, o ResponseOptions, parts []byte, finish string, u *usage) []byte {
	b = append(b, `{"candidates":[{"content":{"role":"model","parts":[`...)
	b = append(b, parts...)
	b = append(b, "]}"...)
	if finish != "" {
		b = keyStr(b, "finishReason", finish)
	}
	b = append(b, `,"index":0}]`...)
	if u != nil {
		b = appendGeminiUsage(key(b, "usageMetadata"), *u)
	}
	b = keyStr(b, "modelVersion", o.Model)
	b = keyStr(b, "responseId", o.RequestID)
	return append(b, '}')
}

func writeGemini(a *answer, o ResponseOptions, sizeHint int) []byte {
	var parts []byte
	if len(a.text) > 0 || len(a.calls) == 0 {
		parts = append(parts, `{"text":"`...)
		parts = append(parts, a.text...)
		parts = append(parts, `"}`...)
	}
	for _, c := range a.calls {
		parts = appendFunctionCallPart(sep(parts), c.id, c.name, c.args)
	}
	return appendGeminiChunk(make([]byte, 0, sizeHint+len(parts)+256), o, parts, finishReason(a.finish), &a.usage)
}

// geminiReader reads an upstream generate-content stream. A function call
// comes whole, in one part.
type geminiReader struct {
	calls int
}

func (r *geminiReader) read(c *codec.Chunk, s sink) error {
	if !c.Object {
		return errBadUpstream
	}
	if c.HasUsage {
		s.setUsage(usageOf(c.Usage))
	}
	if c.Error != "" {
		return s.fail(geminiError(gjson.Parse(c.Error)))
	}
	for _, p := range c.Parts {
		if !p.Call {
			if err := s.text(p.Text); err != nil {
				return err
			}
			continue
		}
		n := r.calls
		r.calls++
		id, args := p.ID, p.Args
		if id == "" {
			id = syntheticCallID(n)
		}
		if args == "" {
			args = "{}"
		}
		if err := s.toolStart(n, id, p.Name, string(appendEscaped(nil, args))); err != nil {
			return err
		}
		if err := s.toolEnd(n); err != nil {
			return err
		}
	}
	if f := geminiFinish(c.Finish, r.calls > 0); f != "" {
		return s.finish(f)
	}
	if c.Blocked {
		return s.finish(finishFilter)
	}
	return nil
}

// geminiWriter writes generate-content chunks for one client stream. Text
// goes out as it comes; a call goes out whole when it ends, since
// generate-content has no partial calls.
type geminiWriter struct {
	emit    func(protocol.Event) error
	o       ResponseOptions
	buf     []byte
	parts   []byte
	calls   []fnItem // by call number; args accumulate
	reason  string
	stopped bool
	failed  bool
	u       usage
	bufArr  [512]byte // buf's first storage
}

func (s *geminiWriter) init(o ResponseOptions) {
	s.o, s.buf, s.parts = o, s.bufArr[:0], make([]byte, 0, 256)
}

func (s *geminiWriter) setEmit(emit func(protocol.Event) error) { s.emit = emit }
func (s *geminiWriter) setUsage(u usage)                        { s.u = u }

func (s *geminiWriter) chunk(parts []byte, finish string, u *usage) error {
	s.buf = appendGeminiChunk(s.buf[:0], s.o, parts, finish, u)
	return s.emit(protocol.Event{Data: s.buf})
}

func (s *geminiWriter) text(raw string) error {
	if raw == "" || s.stopped {
		return nil
	}
	s.parts = appendTextPart(s.parts[:0], raw)
	return s.chunk(s.parts, "", nil)
}

func (s *geminiWriter) toolStart(i int, id, name, args string) error {
	if s.stopped || i < 0 || i > maxToolIndex || i < len(s.calls) {
		return nil
	}
	for len(s.calls) < i {
		s.calls = append(s.calls, fnItem{done: true})
	}
	s.calls = append(s.calls, fnItem{callID: strings.Clone(id), name: strings.Clone(name), args: append([]byte(nil), args...)})
	return nil
}

func (s *geminiWriter) toolArgs(i int, raw string) error {
	if i >= 0 && i < len(s.calls) && !s.calls[i].done {
		s.calls[i].args = append(s.calls[i].args, raw...)
	}
	return nil
}

func (s *geminiWriter) toolEnd(i int) error {
	if i < 0 || i >= len(s.calls) || s.calls[i].done {
		return nil
	}
	f := &s.calls[i]
	f.done = true
	s.parts = appendFunctionCallPart(s.parts[:0], f.callID, f.name, unescape(bstr(f.args)))
	return s.chunk(s.parts, "", nil)
}

func (s *geminiWriter) finish(reason string) error {
	if s.stopped {
		return nil
	}
	for i := range s.calls {
		if err := s.toolEnd(i); err != nil {
			return err
		}
	}
	s.stopped, s.reason = true, reason
	return nil
}

func (s *geminiWriter) fail(e *apierr.Error) error {
	s.failed = true
	return s.emit(protocol.Event{Data: apierr.Body(protocol.GeminiNative, e)})
}

// end sends the last chunk: the finish reason and the usage.
func (s *geminiWriter) end() error {
	if s.failed {
		return nil
	}
	if err := s.finish(finishStop); err != nil {
		return err
	}
	return s.chunk(append(s.parts[:0], `{"text":""}`...), finishReason(s.reason), &s.u)
}
