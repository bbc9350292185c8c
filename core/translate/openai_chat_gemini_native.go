package translate

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// chatToGemini lets completions clients reach generate-content upstreams.
type chatToGemini struct{}

func (chatToGemini) From() protocol.ID { return protocol.OpenAIChat }
func (chatToGemini) To() protocol.ID   { return protocol.GeminiNative }

func (chatToGemini) Request(body []byte, opts RequestOptions) ([]byte, []string, error) {
	root, err := parseBody(body)
	if err != nil {
		return nil, nil, err
	}
	var (
		w          warnings
		system     []byte
		contents   turns
		gen        []byte // generationConfig fields
		maxTokens  int64
		tools      []byte
		toolChoice gjson.Result
		firstErr   error
	)
	root.ForEach(func(k, v gjson.Result) bool {
		if !present(v) {
			return true
		}
		switch k.Str {
		case "model", "stream", "stream_options":
			// The model goes in the URL; streaming is the URL's method; usage
			// is always reported by generate-content.
		case "messages":
			system, contents, firstErr = chatMessagesToGemini(v, &w)
		case "max_tokens", "max_completion_tokens":
			maxTokens = v.Int()
		case "temperature":
			gen = keyRaw(gen, "temperature", v.Raw)
		case "top_p":
			gen = keyRaw(gen, "topP", v.Raw)
		case "presence_penalty":
			gen = keyRaw(gen, "presencePenalty", v.Raw)
		case "frequency_penalty":
			gen = keyRaw(gen, "frequencyPenalty", v.Raw)
		case "seed":
			gen = keyRaw(gen, "seed", v.Raw)
		case "stop":
			if s := appendStopArray(nil, v); len(s) > 0 {
				gen = append(key(gen, "stopSequences"), s...)
			}
		case "response_format":
			switch v.Get("type").Str {
			case "json_object":
				gen = keyStr(gen, "responseMimeType", "application/json")
			case "json_schema":
				gen = keyStr(gen, "responseMimeType", "application/json")
				if s := v.Get("json_schema.schema"); isObject(s) {
					gen = appendGeminiSchema(key(gen, "responseSchema"), s, 0)
				}
			case "text":
			default:
				w.add(k.Str)
			}
		case "tools":
			tools, firstErr = chatToolsToGemini(v, &w)
		case "tool_choice":
			toolChoice = v
		case "n":
			if v.Int() != 1 {
				w.add(k.Str)
			}
		default:
			w.add(k.Str)
		}
		return firstErr == nil
	})
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if len(contents) == 0 {
		return nil, nil, invalid("the conversation has no user or assistant message to send")
	}
	if maxTokens <= 0 {
		maxTokens = opts.MaxTokens
	}
	if maxTokens > 0 {
		gen = keyInt(gen, "maxOutputTokens", maxTokens)
	}
	out := make([]byte, 0, len(body)+256)
	out = append(out, `{"contents":[`...)
	for i, c := range contents {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"role":"`...)
		out = append(out, c.role...)
		out = append(out, `","parts":[`...)
		out = append(out, c.blocks...)
		out = append(out, "]}"...)
	}
	out = append(out, ']')
	if len(system) > 0 {
		out = append(key(out, "systemInstruction"), `{"parts":[`...)
		out = append(out, system...)
		out = append(out, "]}"...)
	}
	if len(gen) > 0 {
		out = append(key(out, "generationConfig"), '{')
		out = append(out, gen...)
		out = append(out, '}')
	}
	if len(tools) > 0 {
		out = append(key(out, "tools"), `[{"functionDeclarations":[`...)
		out = append(out, tools...)
		out = append(out, "]}]"...)
		out = appendGeminiToolConfig(out, toolChoice)
	}
	out = append(out, '}')
	return out, w, nil
}

func appendGeminiToolConfig(b []byte, tc gjson.Result) []byte {
	mode, name := "", ""
	switch {
	case tc.Type == gjson.String:
		switch tc.Str {
		case "auto":
			mode = "AUTO"
		case "none":
			mode = "NONE"
		case "required":
			mode = "ANY"
		}
	case isObject(tc):
		if n := tc.Get("function.name"); n.Type == gjson.String {
			mode, name = "ANY", n.Raw
		}
	}
	if mode == "" {
		return b
	}
	b = append(key(b, "toolConfig"), `{"functionCallingConfig":{"mode":"`...)
	b = append(b, mode...)
	b = append(b, '"')
	if name != "" {
		b = append(key(b, "allowedFunctionNames"), '[')
		b = append(b, name...)
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

func chatToolsToGemini(v gjson.Result, w *warnings) ([]byte, error) {
	var out []byte
	var err error
	v.ForEach(func(_, t gjson.Result) bool {
		typ := t.Get("type").Str
		if typ != "function" {
			w.add("tools." + typ)
			return true
		}
		fn := t.Get("function")
		name := fn.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = invalid("every function tool needs a name")
			return false
		}
		out = sep(out)
		out = append(out, `{"name":`...)
		out = append(out, name.Raw...)
		if d := fn.Get("description"); d.Type == gjson.String {
			out = keyRaw(out, "description", d.Raw)
		}
		if p := fn.Get("parameters"); isObject(p) && !emptyObjectSchema(p) {
			out = appendGeminiSchema(key(out, "parameters"), p, 0)
		}
		out = append(out, '}')
		if s := fn.Get("strict"); present(s) {
			w.add("tools.function.strict")
		}
		return true
	})
	return out, err
}

// chatMessagesToGemini builds systemInstruction parts and contents. Gemini
// calls carry no ids, so a tool result is matched to its call's name
// through the tool_call_id seen in an earlier assistant message.
func chatMessagesToGemini(v gjson.Result, w *warnings) ([]byte, turns, error) {
	var (
		system   []byte
		contents turns
		part     []byte
		names    map[string]string
		err      error
	)
	v.ForEach(func(_, m gjson.Result) bool {
		role := m.Get("role").Str
		m.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "role", "content", "tool_calls", "tool_call_id":
			case "name":
				if role != "tool" && present(f) {
					w.add("messages.name")
				}
			default:
				if present(f) {
					w.add("messages." + k.Str)
				}
			}
			return true
		})
		content := m.Get("content")
		switch role {
		case "system", "developer":
			err = eachTextPart(content, func(raw string) {
				system = sep(system)
				system = append(system, `{"text":"`...)
				system = append(system, raw...)
				system = append(system, `"}`...)
			})
		case "user":
			err = eachChatPart(content, w, func(p gjson.Result) error {
				part, err = geminiPart(part[:0], p)
				if err == nil && len(part) > 0 {
					contents.add("user", part)
				}
				return err
			})
		case "assistant":
			err = eachTextPart(content, func(raw string) {
				part = append(part[:0], `{"text":"`...)
				part = append(part, raw...)
				part = append(part, `"}`...)
				contents.add("model", part)
			})
			m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				fn := tc.Get("function")
				args, ok := jsonObjectString(fn.Get("arguments").Str)
				if !ok {
					err = invalid("the arguments of tool call %s are not a JSON object", tc.Get("id").Str)
					return false
				}
				if names == nil {
					names = make(map[string]string)
				}
				names[tc.Get("id").Str] = fn.Get("name").Str
				part = append(part[:0], `{"functionCall":{"name":`...)
				part = append(part, rawString(fn.Get("name"))...)
				part = keyRaw(part, "args", args)
				part = append(part, "}}"...)
				contents.add("model", part)
				return true
			})
		case "tool":
			id := m.Get("tool_call_id").Str
			name, ok := names[id]
			if !ok {
				name = m.Get("name").Str
			}
			if name == "" {
				err = invalid("the tool message for %q answers no earlier tool call", id)
				return false
			}
			var text []byte
			err = eachTextPart(content, func(raw string) { text = append(text, raw...) })
			part = append(part[:0], `{"functionResponse":{"name":`...)
			part = appendStr(part, name)
			part = append(part, `,"response":`...)
			part = appendToolResponse(part, bstr(text))
			part = append(part, "}}"...)
			contents.add("user", part)
		default:
			err = invalid("the message role %q cannot be translated", role)
		}
		return err == nil
	})
	return system, contents, err
}

// appendToolResponse writes a tool result (raw string inside) as a Gemini
// functionResponse.response object: a JSON object result stays as it is,
// anything else is wrapped as {"content": text}.
func appendToolResponse(b []byte, raw string) []byte {
	if s := unescape(raw); strings.HasPrefix(strings.TrimSpace(s), "{") && gjson.Valid(s) {
		return append(b, strings.TrimSpace(s)...)
	}
	b = append(b, `{"content":"`...)
	b = append(b, raw...)
	return append(b, `"}`...)
}

// geminiPart converts one user content part (or a plain string) to a part.
func geminiPart(b []byte, p gjson.Result) ([]byte, error) {
	if p.Type == gjson.String {
		b = append(b, `{"text":`...)
		b = append(b, p.Raw...)
		return append(b, '}'), nil
	}
	switch typ := p.Get("type").Str; typ {
	case "text":
		t := p.Get("text")
		if t.Type != gjson.String || t.Str == "" {
			return b, nil
		}
		b = append(b, `{"text":`...)
		b = append(b, t.Raw...)
		return append(b, '}'), nil
	case "image_url":
		return geminiMedia(b, p.Get("image_url.url").Str, "")
	case "file":
		fd := p.Get("file.file_data").Str
		if fd == "" {
			return nil, invalid("a file part must carry file_data; file ids cannot be sent to this model's upstream")
		}
		if !strings.HasPrefix(fd, "data:") {
			fd = "data:application/pdf;base64," + fd
		}
		return geminiMedia(b, fd, "")
	case "input_audio":
		a := p.Get("input_audio")
		return geminiMedia(b, "data:audio/"+a.Get("format").Str+";base64,"+a.Get("data").Str, "")
	default:
		return nil, invalid("a %q content part cannot be sent to this model's upstream", typ)
	}
}

// geminiMedia builds inlineData from a data: URL or fileData from an
// http(s) URL.
func geminiMedia(b []byte, u, mime string) ([]byte, error) {
	if m, data, ok := dataURL(u); ok {
		b = append(b, `{"inlineData":{"mimeType":`...)
		b = appendStr(b, m)
		b = append(b, `,"data":`...)
		b = appendStr(b, data)
		return append(b, "}}"...), nil
	}
	if isHTTPURL(u) {
		if mime == "" {
			mime = mimeFromURL(u)
		}
		b = append(b, `{"fileData":{`...)
		if mime != "" {
			b = keyStr(b, "mimeType", mime)
		}
		b = keyStr(b, "fileUri", u)
		return append(b, "}}"...), nil
	}
	return nil, invalid("an image must be an http(s) URL or a base64 data: URL")
}

// geminiFinishToChat maps a finishReason; tools says a call was made.
func geminiFinishToChat(s string, tools bool) string {
	switch s {
	case "":
		return ""
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT":
		return "content_filter"
	}
	if tools {
		return "tool_calls"
	}
	return "stop"
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

func (chatToGemini) Response(body []byte, o ResponseOptions) ([]byte, error) {
	r, err := parseEvent(body)
	if err != nil {
		return nil, err
	}
	var (
		text  []byte
		calls []toolCall
		u     usage
	)
	cand := r.Get("candidates.0")
	cand.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
		if p.Get("thought").Type == gjson.True {
			return true
		}
		if t := p.Get("text"); t.Type == gjson.String {
			text = append(text, inner(t)...)
		}
		if fc := p.Get("functionCall"); isObject(fc) {
			calls = append(calls, geminiCall(fc, len(calls)))
		}
		return true
	})
	readGeminiUsage(r.Get("usageMetadata"), &u)
	finish := geminiFinishToChat(cand.Get("finishReason").Str, len(calls) > 0)
	if finish == "" {
		finish = "stop"
		if present(r.Get("promptFeedback.blockReason")) {
			finish = "content_filter"
		}
	}
	out := make([]byte, 0, len(body)+256)
	return appendChatCompletion(out, o, bstr(text), false, calls, finish, u), nil
}

// geminiCall converts a functionCall; n numbers calls without an id.
func geminiCall(fc gjson.Result, n int) toolCall {
	id := fc.Get("id")
	c := toolCall{name: rawString(fc.Get("name"))}
	if id.Type == gjson.String && id.Str != "" {
		c.id = id.Raw
	} else {
		c.id = `"` + syntheticCallID(n) + `"`
	}
	args := fc.Get("args")
	if isObject(args) {
		c.args = string(appendStr(nil, args.Raw))
	} else {
		c.args = `"{}"`
	}
	return c
}

func (chatToGemini) NewStream(o ResponseOptions) Stream {
	return &geminiToChatStream{out: newChatOut(o)}
}

// geminiToChatStream turns generate-content chunks into completions chunks.
type geminiToChatStream struct {
	out   chatOut
	tools int
}

func (s *geminiToChatStream) Event(ev protocol.Event, emit func(protocol.Event) error) error {
	r, err := parseEvent(ev.Data)
	if err != nil {
		return err
	}
	if err := s.out.role(emit); err != nil {
		return err
	}
	// One pass over the top level: these chunks come many per answer.
	var finish string
	blocked := false
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "candidates":
			cand := v.Get("0")
			cand.ForEach(func(ck, cv gjson.Result) bool {
				switch ck.Str {
				case "content":
					err = s.parts(cv.Get("parts"), emit)
				case "finishReason":
					finish = cv.Str
				}
				return err == nil
			})
		case "usageMetadata":
			readGeminiUsage(v, &s.out.usage)
		case "promptFeedback":
			blocked = present(v.Get("blockReason"))
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if f := geminiFinishToChat(finish, s.tools > 0); f != "" {
		return s.out.finish(emit, f)
	}
	if blocked {
		return s.out.finish(emit, "content_filter")
	}
	return nil
}

func (s *geminiToChatStream) parts(parts gjson.Result, emit func(protocol.Event) error) error {
	var err error
	parts.ForEach(func(_, p gjson.Result) bool {
		var text, fc gjson.Result
		thought := false
		p.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "text":
				text = v
			case "functionCall":
				fc = v
			case "thought":
				thought = v.Type == gjson.True
			}
			return true
		})
		if thought {
			return true
		}
		if text.Type == gjson.String {
			err = s.out.text(emit, inner(text))
		}
		if err == nil && isObject(fc) {
			c := geminiCall(fc, s.tools)
			err = s.out.toolStart(emit, s.tools, c.id, c.name, c.args)
			s.tools++
		}
		return err == nil
	})
	return err
}

func (s *geminiToChatStream) End(emit func(protocol.Event) error) error {
	return s.out.end(emit)
}
