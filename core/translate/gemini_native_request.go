package translate

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// The generate-content protocol's request side. Google's JSON takes
// lowerCamel and snake_case names alike, so both are read.

var geminiSide = side{
	id:        protocol.GeminiNative,
	decode:    decodeGemini,
	encode:    encodeGemini,
	read:      readGemini,
	write:     writeGemini,
	newReader: func(rs *readers) reader { return &rs.gemini },
	newStream: streamFor[geminiWriter],
}

// camel normalises a snake_case field name.
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

// getAny returns a field of r in either spelling.
func getAny(r gjson.Result, camelName, snakeName string) gjson.Result {
	if v := r.Get(camelName); v.Exists() {
		return v
	}
	return r.Get(snakeName)
}

func decodeGemini(root gjson.Result, t target, c *conv) error {
	w := &c.warn
	err := eachField(root, func(k, v gjson.Result) error {
		switch camel(k.Str) {
		case "model":
			c.model = strings.TrimPrefix(v.Str, "models/")
		case "contents":
			return geminiContentsIn(v, c, t, w)
		case "systemInstruction":
			eachElement(v.Get("parts"), func(p gjson.Result) bool {
				if s := inner(p.Get("text")); s != "" {
					c.system = append(c.system, s)
				}
				return true
			})
		case "generationConfig":
			geminiGenerationIn(v, k.Str, c, t, w)
		case "tools":
			eachElement(v, func(tl gjson.Result) bool {
				tl.ForEach(func(tk, tv gjson.Result) bool {
					if camel(tk.Str) != "functionDeclarations" {
						w.add("tools." + tk.Str)
						return true
					}
					eachElement(tv, func(fd gjson.Result) bool {
						tt := tool{name: inner(fd.Get("name")), desc: stringRaw(fd.Get("description"))}
						if p := getAny(fd, "parametersJsonSchema", "parameters_json_schema"); isObject(p) {
							tt.params = p.Raw
						} else if p := fd.Get("parameters"); isObject(p) {
							tt.params = string(appendJSONSchema(nil, p, 0))
						}
						c.tools = append(c.tools, tt)
						return true
					})
					return true
				})
				return true
			})
		case "toolConfig":
			fcc := getAny(v, "functionCallingConfig", "function_calling_config")
			if !isObject(fcc) {
				break
			}
			names := getAny(fcc, "allowedFunctionNames", "allowed_function_names")
			switch fcc.Get("mode").Str {
			case "AUTO":
				c.choice.mode = "auto"
			case "NONE":
				c.choice.mode = "none"
			case "ANY":
				if n := names.Array(); len(n) == 1 && n[0].Type == gjson.String {
					c.choice = toolChoice{mode: "tool", name: inner(n[0])}
					return nil
				}
				c.choice.mode = "required"
			default:
				w.add(k.Str + ".functionCallingConfig.mode")
				return nil
			}
			if present(names) {
				w.add(k.Str + ".functionCallingConfig.allowedFunctionNames")
			}
		default:
			w.add(k.Str)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return nil
}

func geminiGenerationIn(v gjson.Result, name string, c *conv, t target, w *warnings) {
	mime := ""
	v.ForEach(func(k, f gjson.Result) bool {
		if !present(f) {
			return true
		}
		switch camel(k.Str) {
		case "maxOutputTokens":
			c.maxTokens = f.Int()
		case "temperature":
			c.temperature = f.Raw
		case "topP":
			c.topP = f.Raw
		case "topK":
			if t.can(featTopK) {
				c.topK = f.Raw
			} else {
				w.add(name + "." + k.Str)
			}
		case "presencePenalty", "frequencyPenalty":
			switch {
			case !t.can(featPenalty):
				w.add(name + "." + k.Str)
			case camel(k.Str) == "presencePenalty":
				c.presence = f.Raw
			default:
				c.frequency = f.Raw
			}
		case "seed":
			if t.can(featSeed) {
				c.seed = f.Raw
			} else {
				w.add(name + "." + k.Str)
			}
		case "stopSequences":
			if t.can(featStop) {
				c.stop = appendStops(c.stop[:0], f)
			} else {
				w.add(name + "." + k.Str)
			}
		case "candidateCount":
			if f.Int() != 1 {
				w.add(name + "." + k.Str)
			}
		case "responseMimeType":
			mime = f.Str
			switch {
			case mime == "text/plain":
			case mime == "application/json" && t.can(featJSON):
				if c.format.kind == "" {
					c.format.kind = "json_object"
				}
			default:
				w.add(name + "." + k.Str)
			}
		case "responseSchema", "responseJsonSchema":
			if !t.can(featJSON) || !isObject(f) {
				w.add(name + "." + k.Str)
				break
			}
			c.format.kind = "json_schema"
			if camel(k.Str) == "responseJsonSchema" {
				c.format.schema = f.Raw
			} else {
				c.format.schema = string(appendJSONSchema(nil, f, 0))
			}
		case "responseModalities":
			if f.Raw != `["TEXT"]` {
				w.add(name + "." + k.Str)
			}
		case "thinkingConfig":
			if !t.can(featReasoning) {
				w.add(name + "." + k.Str)
				break
			}
			f.ForEach(func(tk, tv gjson.Result) bool {
				switch camel(tk.Str) {
				case "thinkingBudget":
					c.budget = tv.Int()
					c.effort = effortOfGemini(c.budget)
				case "thinkingLevel":
					c.effort = strings.ToLower(tv.Str)
				default:
					if present(tv) {
						w.add(name + "." + k.Str + "." + tk.Str)
					}
				}
				return true
			})
		default:
			w.add(name + "." + k.Str)
		}
		return true
	})
}

// pendingCall is a model functionCall not yet answered.
type pendingCall struct {
	name, id string // plain
}

// geminiContentsIn reads contents. Calls without an id get "call_<n>" in
// request order; a functionResponse without an id answers the oldest
// unanswered call of its name.
func geminiContentsIn(v gjson.Result, c *conv, t target, w *warnings) error {
	var (
		err     error
		pending []pendingCall
		n       int
	)
	eachElement(v, func(content gjson.Result) bool {
		m := msg{role: roleUser}
		switch role := content.Get("role").Str; role {
		case "model":
			m.role = roleAssistant
		case "user", "", "function":
		default:
			err = invalid("the content role %q cannot be translated", role)
			return false
		}
		eachElement(content.Get("parts"), func(p gjson.Result) bool {
			var kind string
			thought := false
			p.ForEach(func(pk, pv gjson.Result) bool {
				switch ck := camel(pk.Str); ck {
				case "text", "inlineData", "fileData", "functionCall", "functionResponse":
					kind = ck
				case "thought":
					thought = pv.Type == gjson.True
				default:
					if present(pv) {
						w.add("contents.parts." + pk.Str)
					}
				}
				return true
			})
			if thought {
				w.add("contents.parts.thought")
				return true
			}
			switch kind {
			case "text":
				if s := inner(p.Get("text")); s != "" {
					m.parts = c.addPart(m.parts, part{text: s})
				}
			case "inlineData", "fileData":
				if m.role == roleAssistant {
					w.add("contents.parts." + kind)
					return true
				}
				var pt part
				pt, err = geminiMediaIn(p, kind, t)
				m.parts = append(m.parts, pt)
			case "functionCall":
				fc := getAny(p, "functionCall", "function_call")
				name := fc.Get("name").Str
				id := fc.Get("id").Str
				if id == "" {
					id = syntheticCallID(n)
				}
				n++
				pending = append(pending, pendingCall{name: name, id: id})
				args := "{}"
				if a := fc.Get("args"); isObject(a) {
					args = a.Raw
				}
				m.parts = append(m.parts, part{kind: kindCall, id: rawOf(id), name: rawOf(name), args: args})
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
				m.parts = append(m.parts, part{kind: kindResult, id: rawOf(id), name: rawOf(name), plain: true,
					content: []part{{text: rawOf(toolResultText(fr.Get("response")))}}})
			}
			return err == nil
		})
		if err == nil && len(m.parts) > 0 {
			c.msgs = append(c.msgs, m)
		}
		return err == nil
	})
	return err
}

// toolResultText renders a functionResponse.response for a text result:
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

// geminiMediaIn reads inlineData or fileData.
func geminiMediaIn(p gjson.Result, kind string, t target) (part, error) {
	if kind == "inlineData" {
		d := getAny(p, "inlineData", "inline_data")
		mime := getAny(d, "mimeType", "mime_type").Str
		data := d.Get("data").Str
		switch {
		case strings.HasPrefix(mime, "image/"):
			return part{kind: kindMedia, m: media{kind: mediaImage, mime: mime, data: data}}, nil
		case mime == "application/pdf":
			return part{kind: kindMedia, m: media{kind: mediaPDF, mime: mime, data: data}}, nil
		case (mime == "audio/wav" || mime == "audio/mp3" || mime == "audio/mpeg") && t.can(featAudio):
			format := "wav"
			if mime != "audio/wav" {
				format = "mp3"
			}
			return part{kind: kindMedia, m: media{kind: mediaAudio, mime: mime, data: data, format: format}}, nil
		}
		return part{}, invalid("inline data of type %q cannot be sent to this model's upstream", mime)
	}
	d := getAny(p, "fileData", "file_data")
	mime := getAny(d, "mimeType", "mime_type").Str
	uri := getAny(d, "fileUri", "file_uri").Str
	if isHTTPURL(uri) {
		if mime == "" {
			mime = mimeFromURL(uri)
		}
		switch {
		case mime == "" || strings.HasPrefix(mime, "image/"):
			return part{kind: kindMedia, m: media{kind: mediaImage, mime: mime, url: uri}}, nil
		case mime == "application/pdf" && t.can(featPDFURL):
			return part{kind: kindMedia, m: media{kind: mediaPDF, mime: mime, url: uri}}, nil
		}
	}
	return part{}, invalid("only images at http(s) URLs can be sent to this model's upstream as fileData")
}

func encodeGemini(c *conv, opts RequestOptions, sizeHint int) ([]byte, error) {
	// generate-content matches a result to its call by name: through the
	// call id seen earlier, else the result's own name.
	names := map[string]string{}
	tw := turnWriter{
		text:  appendTextPart,
		media: geminiMediaOut,
		call: func(b []byte, p part) []byte {
			names[p.id] = p.name
			b = append(b, `{"functionCall":{"name":"`...)
			b = append(b, p.name...)
			b = append(b, `","args":`...)
			b = append(b, argsObject(p.args)...)
			// Gemini 3 refuses a function call in history without the
			// thought signature it came with, which no other protocol
			// carries; Google's documented stand-in for history from
			// another model skips that check.
			return append(b, `},"thoughtSignature":"skip_thought_signature_validator"}`...)
		},
		result: func(b, rest []byte, p part) ([]byte, []byte, error) {
			name, ok := names[p.id]
			if !ok {
				name = p.name
			}
			if name == "" {
				return nil, nil, invalid("the tool result for %q answers no earlier tool call", unescape(p.id))
			}
			b = append(b, `{"functionResponse":{"name":"`...)
			b = append(b, name...)
			b = append(b, `","response":`...)
			b = appendToolResponse(b, bstr(appendTexts(nil, p.content, `\n`)))
			b = append(b, "}}"...)
			// A response holds no media: they follow in the turn.
			for _, cp := range p.content {
				if cp.kind == kindMedia {
					rest = geminiMediaOut(sep(rest), cp.m)
				}
			}
			return b, rest, nil
		},
	}
	system, turns, err := buildTurns(c, tw)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, sizeHint+256)
	b = append(b, `{"contents":`...)
	b = appendTurns(b, turns, "model", "parts")
	if len(system) > 0 {
		b = append(key(b, "systemInstruction"), `{"parts":[`...)
		b = append(b, system...)
		b = append(b, "]}"...)
	}
	var gen []byte
	for _, f := range [...]struct{ name, raw string }{
		{"temperature", c.temperature}, {"topP", c.topP}, {"topK", c.topK},
	} {
		if f.raw != "" {
			gen = keyRaw(gen, f.name, f.raw)
		}
	}
	if len(c.stop) > 0 {
		gen = appendRawList(key(gen, "stopSequences"), c.stop)
	}
	if c.presence != "" {
		gen = keyRaw(gen, "presencePenalty", c.presence)
	}
	if c.frequency != "" {
		gen = keyRaw(gen, "frequencyPenalty", c.frequency)
	}
	if c.seed != "" {
		gen = keyRaw(gen, "seed", c.seed)
	}
	switch c.format.kind {
	case "json_object":
		gen = keyStr(gen, "responseMimeType", "application/json")
	case "json_schema":
		gen = keyStr(gen, "responseMimeType", "application/json")
		if c.format.schema != "" {
			gen = appendGeminiSchema(key(gen, "responseSchema"), gjson.Parse(c.format.schema), 0)
		}
	}
	if mt := maxTokensOr(c, opts); mt > 0 {
		gen = keyInt(gen, "maxOutputTokens", mt)
	}
	if c.effort != "" {
		budget := c.budget
		if budget <= 0 {
			budget = geminiBudget(c.effort)
		}
		gen = append(key(gen, "thinkingConfig"), `{"thinkingBudget":`...)
		gen = append(strconv.AppendInt(gen, budget, 10), '}')
	}
	if len(gen) > 0 {
		b = append(key(b, "generationConfig"), '{')
		b = append(append(b, gen...), '}')
	}
	if len(c.tools) > 0 {
		b = append(key(b, "tools"), `[{"functionDeclarations":[`...)
		for _, t := range c.tools {
			b = append(sep(b), `{"name":"`...)
			b = append(b, t.name...)
			b = append(b, '"')
			if t.desc != "" {
				b = keyRaw(b, "description", t.desc)
			}
			if t.params != "" {
				if p := gjson.Parse(t.params); !emptyObjectSchema(p) {
					b = appendGeminiSchema(key(b, "parameters"), p, 0)
				}
			}
			b = append(b, '}')
		}
		b = append(b, "]}]"...)
		b = appendGeminiToolConfig(b, c.choice)
	}
	return append(b, '}'), nil
}

func appendTextPart(b []byte, raw string) []byte {
	b = append(b, `{"text":"`...)
	b = append(b, raw...)
	return append(b, `"}`...)
}

func appendGeminiToolConfig(b []byte, tc toolChoice) []byte {
	var mode string
	switch tc.mode {
	case "auto":
		mode = "AUTO"
	case "none":
		mode = "NONE"
	case "required", "tool":
		mode = "ANY"
	default:
		return b
	}
	b = append(key(b, "toolConfig"), `{"functionCallingConfig":{"mode":"`...)
	b = append(b, mode...)
	b = append(b, '"')
	if tc.mode == "tool" {
		b = append(key(b, "allowedFunctionNames"), `["`...)
		b = append(b, tc.name...)
		b = append(b, `"]`...)
	}
	return append(b, "}}"...)
}

// appendToolResponse writes a tool result (raw string inside) as a
// functionResponse.response object: a JSON object result stays as it is,
// anything else is wrapped as {"content": text}.
func appendToolResponse(b []byte, raw string) []byte {
	if s := strings.TrimSpace(unescape(raw)); strings.HasPrefix(s, "{") && gjson.Valid(s) {
		return append(b, s...)
	}
	b = append(b, `{"content":"`...)
	b = append(b, raw...)
	return append(b, `"}`...)
}

// geminiMediaOut writes inlineData, or fileData for a URL.
func geminiMediaOut(b []byte, m media) []byte {
	if m.url != "" {
		b = append(b, `{"fileData":{`...)
		if m.mime != "" {
			b = keyStr(b, "mimeType", m.mime)
		}
		b = keyStr(b, "fileUri", m.url)
		return append(b, "}}"...)
	}
	b = append(b, `{"inlineData":{"mimeType":`...)
	b = appendStr(b, m.mime)
	b = append(b, `,"data":`...)
	b = appendStr(b, m.data)
	return append(b, "}}"...)
}
