package codec

import (
	"github.com/tollgate-gw/tollgate/core/protocol"
)

// responses is the responses-style codec (POST /v1/responses).
type responses struct{}

func (responses) Protocol() protocol.ID { return protocol.OpenAIResponses }

const (
	respModel = iota
	respInput
	respInstructions
	respPrevious
	respMaxOutput
	respReasoning
	respTemperature
	respTopP
	respFStream
	respTools
)

func (responses) Inspect(body []byte) (Request, error) {
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
		case "model":
			if err = d.mark(respModel, name); err == nil {
				r.Model, err = requireModel(raw)
			}
		case "input":
			if err = d.mark(respInput, name); err == nil {
				err = respInspectInput(s, vs, raw, &r)
			}
		case "instructions":
			if err = d.mark(respInstructions, name); err == nil {
				if !isNull(raw) && !isString(raw) {
					err = invalid("the field \"instructions\" must be a string")
				}
				r.InputBytes += rawLen(raw)
			}
		case "previous_response_id":
			if err = d.mark(respPrevious, name); err == nil && !isNull(raw) {
				if !isString(raw) {
					err = invalid("the field \"previous_response_id\" must be a string")
				}
				r.PreviousResponseID = true
			}
		case "max_output_tokens":
			if err = d.mark(respMaxOutput, name); err == nil {
				r.MaxTokens, err = positiveInt(raw, name)
			}
		case "reasoning":
			if err = d.mark(respReasoning, name); err == nil {
				err = respReasoningValid(raw)
			}
		case "temperature":
			if err = d.mark(respTemperature, name); err == nil {
				err = numberIn(raw, name, 0, 2)
			}
		case "top_p":
			if err = d.mark(respTopP, name); err == nil {
				err = numberIn(raw, name, 0, 1)
			}
		case "stream":
			if err = d.mark(respFStream, name); err == nil {
				r.Stream, err = boolField(raw, name)
			}
		case "tools":
			if err = d.mark(respTools, name); err == nil {
				err = respInspectTools(s, vs, raw, &r)
			}
		}
		if err != nil {
			return Request{}, err
		}
	}
	if it.bad {
		return Request{}, malformed()
	}
	if !d.has(respModel) {
		return Request{}, invalid("the field \"model\" is required")
	}
	if !d.has(respInput) {
		return Request{}, invalid("the field \"input\" is required: a string or an array of input items")
	}
	return r, nil
}

func respInspectInput(s string, vs int, raw string, r *Request) error {
	if isString(raw) {
		r.InputBytes += int64(len(raw))
		return nil
	}
	if !isArray(raw) {
		return invalid("the field \"input\" must be a string or an array of input items")
	}
	r.InputBytes += int64(len(raw))
	it := elems(s, vs)
	for n := 0; ; n++ {
		_, is, ie, ok := it.next()
		if !ok {
			return nil
		}
		if !isObject(s[is:ie]) {
			return invalid("input[%d] must be an object (an input item)", n)
		}
		role, content, output := "", "", ""
		fields := members(s, is)
		for {
			k, fs, fe, ok := fields.next()
			if !ok {
				break
			}
			switch keyName(k) {
			case "role":
				role = s[fs:fe]
			case "content":
				content = s[fs:fe]
			case "output":
				output = s[fs:fe]
			}
		}
		if role != "" && !strIs(role, "user") && !strIs(role, "assistant") &&
			!strIs(role, "system") && !strIs(role, "developer") {
			return invalid("the field \"input[%d].role\" must be one of user, assistant, system, developer (got %s)", n, quoteShort(role))
		}
		if !r.HasImages {
			r.HasImages = (isArray(content) && partsHave(content, "input_image")) ||
				(isArray(output) && partsHave(output, "input_image"))
		}
	}
}

func respReasoningValid(raw string) error {
	if isNull(raw) {
		return nil
	}
	if !isObject(raw) {
		return invalid("the field \"reasoning\" must be an object")
	}
	eff := field(raw, "effort")
	if eff == "" || isNull(eff) {
		return nil
	}
	for _, v := range [...]string{"minimal", "low", "medium", "high", "none", "xhigh"} {
		if strIs(eff, v) {
			return nil
		}
	}
	return invalid("the field \"reasoning.effort\" must be one of none, minimal, low, medium, high, xhigh (got %s)", quoteShort(eff))
}

func respInspectTools(s string, vs int, raw string, r *Request) error {
	if isNull(raw) {
		return nil
	}
	if !isArray(raw) {
		return invalid("the field \"tools\" must be an array of tools")
	}
	it := elems(s, vs)
	for n := 0; ; n++ {
		_, ts, te, ok := it.next()
		if !ok {
			return nil
		}
		tool := s[ts:te]
		if !isObject(tool) {
			return invalid("tools[%d] must be an object with a type", n)
		}
		typ := field(tool, "type")
		if !isString(typ) || len(typ) == 2 {
			return invalid("the field \"tools[%d].type\" is required", n)
		}
		if !strIs(typ, "function") {
			r.BuiltinTools = addTool(r.BuiltinTools, strValue(typ))
		}
	}
}

func (responses) Rewrite(body []byte, o RewriteOptions) ([]byte, error) {
	return rewriteFlat(body, o.Model, "max_output_tokens", o.MaxTokens)
}

func (responses) Usage(body []byte) protocol.Usage {
	return respUsage(field(str(body), "usage"))
}

func respUsage(u string) protocol.Usage {
	var out protocol.Usage
	if !isObject(u) {
		return out
	}
	out.Reported = true
	it := members(u, 0)
	for {
		k, vs, ve, ok := it.next()
		if !ok {
			return out
		}
		raw := u[vs:ve]
		switch keyName(k) {
		case "input_tokens":
			out.InputTokens = count(raw)
		case "output_tokens":
			out.OutputTokens = count(raw)
		case "input_tokens_details":
			if isObject(raw) {
				out.CachedTokens = count(field(raw, "cached_tokens"))
			}
		case "output_tokens_details":
			if isObject(raw) {
				out.ReasoningTokens = count(field(raw, "reasoning_tokens"))
			}
		}
	}
}

func (responses) OutputChars(body []byte) int64 {
	return respOutputChars(field(str(body), "output"))
}

// respOutputChars counts the generated characters of an output array:
// message text and refusals, function and custom tool call arguments,
// reasoning summaries and reasoning text.
func respOutputChars(output string) int64 {
	if !isArray(output) {
		return 0
	}
	var n int64
	it := elems(output, 0)
	for {
		_, is, ie, ok := it.next()
		if !ok {
			return n
		}
		item := output[is:ie]
		if !isObject(item) {
			continue
		}
		typ := field(item, "type")
		switch {
		case strIs(typ, "message"):
			if c := field(item, "content"); isArray(c) {
				n += textParts(c, "text") + textParts(c, "refusal")
			}
		case strIs(typ, "function_call"):
			n += countChars(field(item, "arguments"))
		case strIs(typ, "custom_tool_call"):
			n += countChars(field(item, "input"))
		case strIs(typ, "reasoning"):
			if c := field(item, "summary"); isArray(c) {
				n += textParts(c, "text")
			}
			if c := field(item, "content"); isArray(c) {
				n += textParts(c, "text")
			}
		}
	}
}

func (responses) ErrorMessage(body []byte) string { return errorMessage(body) }

func (responses) NewStream() Stream { return &respStream{} }

// respStream tracks a responses-style stream: deltas count characters,
// response.completed (or .incomplete, .failed) ends it with usage.
type respStream struct {
	usage protocol.Usage
	chars int64
	done  bool
}

func (st *respStream) Observe(ev protocol.Event) bool {
	s := str(ev.Data)
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return true
	}
	s = s[i:]
	typ := ev.Name
	if typ == "" {
		typ = strValue(field(s, "type"))
	}
	switch typ {
	case "response.output_text.delta", "response.function_call_arguments.delta",
		"response.reasoning_summary_text.delta", "response.reasoning_text.delta",
		"response.refusal.delta", "response.custom_tool_call_input.delta":
		st.chars += countChars(field(s, "delta"))
	case "response.completed", "response.incomplete", "response.failed":
		st.done = true
		if resp := field(s, "response"); isObject(resp) {
			if u := field(resp, "usage"); isObject(u) {
				st.usage = respUsage(u)
			}
		}
	}
	return true
}

func (st *respStream) Usage() protocol.Usage { return st.usage }
func (st *respStream) OutputChars() int64    { return st.chars }
func (st *respStream) Complete() bool        { return st.done }
