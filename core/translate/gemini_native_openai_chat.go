package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// geminiToChat lets generate-content clients reach completions upstreams
// (enabled per model by translate_from).
type geminiToChat struct{}

func (geminiToChat) From() protocol.ID { return protocol.GeminiNative }
func (geminiToChat) To() protocol.ID   { return protocol.OpenAIChat }

// camel normalises a snake_case field name (the REST API takes both forms).
func camel(s string) string {
	if strings.IndexByte(s, '_') < 0 {
		return s
	}
	var b strings.Builder
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_':
			up = true
		case up && c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
			up = false
		default:
			b.WriteByte(c)
			up = false
		}
	}
	return b.String()
}

// getAny returns field name (camelCase) of r in either spelling.
func getAny(r gjson.Result, camelName, snakeName string) gjson.Result {
	if v := r.Get(camelName); v.Exists() {
		return v
	}
	return r.Get(snakeName)
}

func (geminiToChat) Request(body []byte, opts RequestOptions) ([]byte, []string, error) {
	root, err := parseBody(body)
	if err != nil {
		return nil, nil, err
	}
	var (
		w          warnings
		c          = chatBody{model: opts.Model}
		tools      []byte
		toolConfig gjson.Result
		firstErr   error
	)
	root.ForEach(func(k, v gjson.Result) bool {
		if !present(v) {
			return true
		}
		switch camel(k.Str) {
		case "model":
			if c.model == "" {
				c.model = strings.TrimPrefix(v.Str, "models/")
			}
		case "contents":
			firstErr = geminiContentsToChat(v, &c, &w)
		case "systemInstruction":
			v.Get("parts").ForEach(func(_, p gjson.Result) bool {
				c.system = appendSystemText(c.system, inner(p.Get("text")))
				return true
			})
		case "generationConfig":
			geminiGenerationToChat(v, k.Str, &c, &w)
		case "tools":
			v.ForEach(func(_, t gjson.Result) bool {
				t.ForEach(func(tk, tv gjson.Result) bool {
					if camel(tk.Str) != "functionDeclarations" {
						w.add("tools." + tk.Str)
						return true
					}
					tv.ForEach(func(_, fd gjson.Result) bool {
						tools = append(sep(tools), `{"type":"function","function":{"name":`...)
						tools = append(tools, rawString(fd.Get("name"))...)
						if d := fd.Get("description"); d.Type == gjson.String {
							tools = keyRaw(tools, "description", d.Raw)
						}
						if p := getAny(fd, "parametersJsonSchema", "parameters_json_schema"); isObject(p) {
							tools = keyRaw(tools, "parameters", p.Raw)
						} else if p := fd.Get("parameters"); isObject(p) {
							tools = appendJSONSchema(key(tools, "parameters"), p, 0)
						} else {
							tools = append(tools, `,"parameters":{"type":"object","properties":{}}`...)
						}
						tools = append(tools, "}}"...)
						return true
					})
					return true
				})
				return true
			})
		case "toolConfig":
			toolConfig = v
		default:
			w.add(k.Str)
		}
		return firstErr == nil
	})
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if len(tools) > 0 {
		c.extra = append(key(c.extra, "tools"), '[')
		c.extra = append(append(c.extra, tools...), ']')
		c.extra = appendChatToolChoiceFromGemini(c.extra, toolConfig, &w)
	}
	return c.build(opts, len(body)), w, nil
}

func appendChatToolChoiceFromGemini(b []byte, tc gjson.Result, w *warnings) []byte {
	fcc := getAny(tc, "functionCallingConfig", "function_calling_config")
	if !isObject(fcc) {
		return b
	}
	names := getAny(fcc, "allowedFunctionNames", "allowed_function_names")
	switch fcc.Get("mode").Str {
	case "AUTO":
		b = keyStr(b, "tool_choice", "auto")
	case "NONE":
		b = keyStr(b, "tool_choice", "none")
	case "ANY":
		if n := names.Array(); len(n) == 1 && n[0].Type == gjson.String {
			b = append(key(b, "tool_choice"), `{"type":"function","function":{"name":`...)
			b = append(b, n[0].Raw...)
			return append(b, "}}"...)
		}
		b = keyStr(b, "tool_choice", "required")
	default:
		w.add("toolConfig.functionCallingConfig.mode")
		return b
	}
	if present(names) {
		w.add("toolConfig.functionCallingConfig.allowedFunctionNames")
	}
	return b
}

func geminiGenerationToChat(v gjson.Result, name string, c *chatBody, w *warnings) {
	var schema gjson.Result
	jsonSchema := false
	mime := ""
	v.ForEach(func(k, f gjson.Result) bool {
		if !present(f) {
			return true
		}
		switch camel(k.Str) {
		case "maxOutputTokens":
			c.maxToken = f.Int()
		case "temperature":
			c.extra = keyRaw(c.extra, "temperature", f.Raw)
		case "topP":
			c.extra = keyRaw(c.extra, "top_p", f.Raw)
		case "presencePenalty":
			c.extra = keyRaw(c.extra, "presence_penalty", f.Raw)
		case "frequencyPenalty":
			c.extra = keyRaw(c.extra, "frequency_penalty", f.Raw)
		case "seed":
			c.extra = keyRaw(c.extra, "seed", f.Raw)
		case "stopSequences":
			if s := appendStopArray(nil, f); len(s) > 0 {
				c.extra = append(key(c.extra, "stop"), s...)
			}
		case "candidateCount":
			if f.Int() != 1 {
				w.add(name + "." + k.Str)
			}
		case "responseMimeType":
			mime = f.Str
			if mime != "application/json" && mime != "text/plain" {
				w.add(name + "." + k.Str)
			}
		case "responseSchema":
			schema = f
		case "responseJsonSchema":
			schema, jsonSchema = f, true
		case "responseModalities":
			if f.Raw != `["TEXT"]` {
				w.add(name + "." + k.Str)
			}
		default:
			w.add(name + "." + k.Str)
		}
		return true
	})
	switch {
	case isObject(schema):
		c.extra = append(key(c.extra, "response_format"), `{"type":"json_schema","json_schema":{"name":"response","schema":`...)
		if jsonSchema {
			c.extra = append(c.extra, schema.Raw...)
		} else {
			c.extra = appendJSONSchema(c.extra, schema, 0)
		}
		c.extra = append(c.extra, "}}"...)
	case mime == "application/json":
		c.extra = append(key(c.extra, "response_format"), `{"type":"json_object"}`...)
	}
}

// pendingCall is a model functionCall not yet answered.
type pendingCall struct {
	name, id string
}

// geminiContentsToChat converts contents. Calls without an id get
// "call_<n>" in request order; a functionResponse without an id answers
// the oldest unanswered call of its name.
func geminiContentsToChat(v gjson.Result, c *chatBody, w *warnings) error {
	var (
		err     error
		pending []pendingCall
		n       int
		text    []byte
		calls   []byte
		parts   []byte
		m       []byte
	)
	v.ForEach(func(_, content gjson.Result) bool {
		role := content.Get("role").Str
		text, calls, parts = text[:0], calls[:0], parts[:0]
		content.Get("parts").ForEach(func(_, p gjson.Result) bool {
			var kind string
			p.ForEach(func(pk, pv gjson.Result) bool {
				switch ck := camel(pk.Str); ck {
				case "text", "inlineData", "fileData", "functionCall", "functionResponse":
					kind = ck
				case "thought":
				default:
					if present(pv) {
						w.add("contents.parts." + pk.Str)
					}
				}
				return true
			})
			if p.Get("thought").Type == gjson.True {
				w.add("contents.parts.thought")
				return true
			}
			switch kind {
			case "text":
				t := p.Get("text")
				if role == "model" {
					text = append(text, inner(t)...)
				} else if t.Str != "" {
					parts = append(sep(parts), `{"type":"text","text":`...)
					parts = append(append(parts, rawString(t)...), '}')
				}
			case "inlineData", "fileData":
				if role == "model" {
					w.add("contents.parts." + kind)
					return true
				}
				parts, err = chatPartFromGeminiMedia(parts, p, kind)
			case "functionCall":
				fc := getAny(p, "functionCall", "function_call")
				name := fc.Get("name").Str
				id := fc.Get("id").Str
				if id == "" {
					id = syntheticCallID(n)
				}
				n++
				pending = append(pending, pendingCall{name: name, id: id})
				args := fc.Get("args")
				argsText := "{}"
				if isObject(args) {
					argsText = args.Raw
				}
				calls = append(sep(calls), `{"id":`...)
				calls = appendStr(calls, id)
				calls = append(calls, `,"type":"function","function":{"name":`...)
				calls = appendStr(calls, name)
				calls = appendStr(append(calls, `,"arguments":`...), argsText)
				calls = append(calls, "}}"...)
			case "functionResponse":
				fr := getAny(p, "functionResponse", "function_response")
				name := fr.Get("name").Str
				id := fr.Get("id").Str
				found := -1
				for i, pc := range pending {
					if (id != "" && pc.id == id) || (id == "" && pc.name == name) {
						found = i
						break
					}
				}
				if found < 0 {
					if id == "" {
						err = invalid("the functionResponse %q answers no earlier functionCall", name)
						return false
					}
				} else {
					id = pending[found].id
					pending = append(pending[:found], pending[found+1:]...)
				}
				m = append(m[:0], `{"role":"tool","tool_call_id":`...)
				m = appendStr(m, id)
				m = append(m, `,"content":`...)
				m = appendStr(m, toolResultText(fr.Get("response")))
				c.message(append(m, '}'))
			}
			return err == nil
		})
		if err != nil {
			return false
		}
		switch role {
		case "model":
			if len(text) == 0 && len(calls) == 0 {
				return true
			}
			m = append(m[:0], `{"role":"assistant","content":`...)
			if len(text) > 0 || len(calls) == 0 {
				m = append(append(append(m, '"'), text...), '"')
			} else {
				m = append(m, "null"...)
			}
			if len(calls) > 0 {
				m = append(append(append(m, `,"tool_calls":[`...), calls...), ']')
			}
			c.message(append(m, '}'))
		case "user", "", "function":
			if len(parts) > 0 {
				m = append(m[:0], `{"role":"user","content":[`...)
				m = append(m, parts...)
				c.message(append(m, "]}"...))
			}
		default:
			err = invalid("the content role %q cannot be translated", role)
		}
		return err == nil
	})
	return err
}

// toolResultText renders a functionResponse.response for a tool message:
// {"content": "text"} gives the text, anything else its JSON.
func toolResultText(r gjson.Result) string {
	if isObject(r) {
		n := 0
		r.ForEach(func(_, _ gjson.Result) bool { n++; return n < 2 })
		if c := r.Get("content"); n == 1 && c.Type == gjson.String {
			return c.Str
		}
		return r.Raw
	}
	if r.Type == gjson.String {
		return r.Str
	}
	return r.Raw
}

// chatPartFromGeminiMedia converts inlineData or fileData.
func chatPartFromGeminiMedia(parts []byte, p gjson.Result, kind string) ([]byte, error) {
	if kind == "inlineData" {
		d := getAny(p, "inlineData", "inline_data")
		mime := getAny(d, "mimeType", "mime_type").Str
		data := d.Get("data").Str
		switch {
		case strings.HasPrefix(mime, "image/"):
			parts = append(sep(parts), `{"type":"image_url","image_url":{"url":`...)
			parts = appendStr(parts, "data:"+mime+";base64,"+data)
			return append(parts, "}}"...), nil
		case mime == "application/pdf":
			parts = append(sep(parts), `{"type":"file","file":{"filename":"document.pdf","file_data":`...)
			parts = appendStr(parts, "data:"+mime+";base64,"+data)
			return append(parts, "}}"...), nil
		case mime == "audio/wav" || mime == "audio/mp3" || mime == "audio/mpeg":
			format := "wav"
			if mime != "audio/wav" {
				format = "mp3"
			}
			parts = append(sep(parts), `{"type":"input_audio","input_audio":{"data":`...)
			parts = appendStr(parts, data)
			parts = append(parts, `,"format":"`...)
			parts = append(parts, format...)
			return append(parts, `"}}`...), nil
		}
		return nil, invalid("inline data of type %q cannot be sent to this model's upstream", mime)
	}
	d := getAny(p, "fileData", "file_data")
	mime := getAny(d, "mimeType", "mime_type").Str
	uri := getAny(d, "fileUri", "file_uri").Str
	if !isHTTPURL(uri) || (mime != "" && !strings.HasPrefix(mime, "image/")) {
		return nil, invalid("only images at http(s) URLs can be sent to this model's upstream as fileData")
	}
	parts = append(sep(parts), `{"type":"image_url","image_url":{"url":`...)
	parts = appendStr(parts, uri)
	return append(parts, "}}"...), nil
}

// chatFinishToGemini maps a finish_reason to a finishReason.
func chatFinishToGemini(s string) string {
	switch s {
	case "length":
		return "MAX_TOKENS"
	case "content_filter":
		return "SAFETY"
	}
	return "STOP"
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

// appendFunctionCallPart writes a functionCall part; args is the raw JSON
// string of the arguments text.
func appendFunctionCallPart(b []byte, id, name, argsInner string) []byte {
	b = append(b, `{"functionCall":{"id":`...)
	b = append(b, id...)
	b = append(b, `,"name":`...)
	b = append(b, name...)
	b = append(b, `,"args":`...)
	b = append(b, argsObject(argsInner)...)
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

func (geminiToChat) Response(body []byte, o ResponseOptions) ([]byte, error) {
	res, err := readChatCompletion(body)
	if err != nil {
		return nil, err
	}
	var parts []byte
	if res.text != "" || len(res.calls) == 0 {
		parts = append(parts, `{"text":"`...)
		parts = append(parts, res.text...)
		parts = append(parts, `"}`...)
	}
	for _, c := range res.calls {
		parts = appendFunctionCallPart(sep(parts), c.id, c.name, inner(gjson.Parse(c.args)))
	}
	return appendGeminiChunk(make([]byte, 0, len(body)+256), o, parts, chatFinishToGemini(res.finish), &res.usage), nil
}

func (geminiToChat) NewStream(o ResponseOptions) Stream {
	return &chatToGeminiStream{opts: o}
}

// chatToGeminiStream turns completions chunks into GenerateContentResponse
// chunks. Text goes out as it comes; a function call goes out whole, since
// generate-content has no partial calls.
type chatToGeminiStream struct {
	opts   ResponseOptions
	d      chatDelta
	calls  []fnItem // output unused; args accumulate
	byTool []int
	finish string
	usage  usage
}

func (s *chatToGeminiStream) flushCalls(emit func(protocol.Event) error) error {
	var parts []byte
	for i := range s.calls {
		f := &s.calls[i]
		if f.done {
			continue
		}
		f.done = true
		parts = appendFunctionCallPart(sep(parts), f.callID, f.name, bstr(f.args))
	}
	if len(parts) == 0 {
		return nil
	}
	return emit(protocol.Event{Data: appendGeminiChunk(make([]byte, 0, len(parts)+160), s.opts, parts, "", nil)})
}

func (s *chatToGeminiStream) Event(ev protocol.Event, emit func(protocol.Event) error) error {
	d := &s.d
	if err := readChatChunk(ev.Data, d); err != nil {
		return err
	}
	if d.done {
		return nil
	}
	if d.hasUsage {
		s.usage = d.usage
	}
	if d.text != "" {
		b := make([]byte, 0, len(d.text)+160)
		parts := make([]byte, 0, len(d.text)+12)
		parts = append(parts, `{"text":"`...)
		parts = append(parts, d.text...)
		parts = append(parts, `"}`...)
		if err := emit(protocol.Event{Data: appendGeminiChunk(b, s.opts, parts, "", nil)}); err != nil {
			return err
		}
	}
	for _, t := range d.tools {
		if t.index < 0 || t.index > 1<<10 {
			continue
		}
		for len(s.byTool) <= t.index {
			s.byTool = append(s.byTool, -1)
		}
		if s.byTool[t.index] < 0 {
			f := fnItem{callID: t.id, name: t.name}
			if f.callID == "" {
				f.callID = `"` + syntheticCallID(t.index) + `"`
			}
			if f.name == "" {
				f.name = `""`
			}
			s.byTool[t.index] = len(s.calls)
			s.calls = append(s.calls, f)
		}
		f := &s.calls[s.byTool[t.index]]
		if !f.done {
			f.args = append(f.args, t.args...)
		}
	}
	if d.finish != "" && s.finish == "" {
		s.finish = d.finish
		return s.flushCalls(emit)
	}
	return nil
}

func (s *chatToGeminiStream) End(emit func(protocol.Event) error) error {
	if err := s.flushCalls(emit); err != nil {
		return err
	}
	b := make([]byte, 0, 320)
	return emit(protocol.Event{Data: appendGeminiChunk(b, s.opts, []byte(`{"text":""}`), chatFinishToGemini(s.finish), &s.usage)})
}
