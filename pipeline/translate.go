package pipeline

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/translate"
)

// Route is how a call reaches its upstreams: the candidate channels, each
// with the protocol spoken to it, in the order dispatch tries them, and the
// attempt being made.
type Route struct {
	// Candidates are the channels that can serve the call, ordered as
	// PRODUCT.md §7 says: priority first, then within a priority the
	// client's own protocol before a translated one, then weight.
	Candidates []Candidate
	// Protocol, Translator and Warnings are those of the current attempt
	// (the first after translate, the serving or last one after dispatch).
	Protocol   protocol.ID
	Translator translate.Translator // nil when the client's protocol is spoken
	Warnings   []string

	body      []byte
	bodyModel string
	built     []builtBody
}

// Candidate is one channel and the protocol the call speaks to it.
type Candidate struct {
	Channel    *config.Channel
	Protocol   protocol.ID
	Translator translate.Translator // nil for the client's own protocol
}

// builtBody is an upstream body built for one protocol and upstream model.
type builtBody struct {
	key      bodyKey
	body     []byte
	warnings []string
}

type bodyKey struct {
	protocol protocol.ID
	model    string
	tools    string // a native responses body depends on the channel's tools
}

// translateStage picks, per channel of the model, the protocol the call
// speaks to it: the client's own when the channel speaks it; otherwise a
// gateway-side translation (completions-style clients reach every upstream
// protocol by default; the other clients where the model's translate_from
// lists their protocol).
type translateStage struct {
	cfg *config.Config
}

func newTranslate(d *Deps, _ map[string]string) (Stage, error) {
	return &translateStage{cfg: d.Config}, nil
}

func (s *translateStage) Name() string { return "translate" }

func (s *translateStage) Serve(_ context.Context, c *Call) error {
	chans := chatChannels(c.own.chans[:0], s.cfg, c.Model.ID)
	cands := candidates(c.own.cands[:0], c.Protocol, c.Model, chans)
	if len(cands) == 0 {
		return apierr.Newf(apierr.NoChannelAvailable,
			"the model '%s' has no channel serving the %s protocol", c.ModelID, c.Protocol)
	}
	r := &c.own.route
	*r = Route{Candidates: orderFor(c, cands), built: c.own.built[:0]}
	if err := checkBuiltinTools(c, r); err != nil {
		return err
	}
	// Build the first body now, so a request no candidate can take is
	// refused before any upstream is called. A candidate whose protocol
	// cannot carry the request is dropped; the first such error is the
	// answer when none can.
	var first error
	kept := r.Candidates[:0]
	for _, cand := range r.Candidates {
		if len(kept) == 0 {
			if err := r.prepare(c, cand); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
		}
		kept = append(kept, cand)
	}
	if len(kept) == 0 {
		return first
	}
	r.Candidates = kept
	c.Route = r
	return nil
}

// candidates pairs each channel with the protocol a client of protocol p
// speaks to it, appended to out; channels the client cannot reach are
// left out.
func candidates(out []Candidate, p protocol.ID, m *config.Model, chans []*config.Channel) []Candidate {
	translated := p == protocol.OpenAIChat || slices.Contains(m.TranslateFrom, string(p))
	for _, ch := range chans {
		if slices.Contains(ch.Protocols, string(p)) {
			out = append(out, Candidate{Channel: ch, Protocol: p})
			continue
		}
		if !translated {
			continue
		}
		// The channel's first protocol: operators list their preferred
		// one first.
		for _, up := range ch.Protocols {
			if tr, ok := translate.Lookup(p, protocol.ID(up)); ok {
				out = append(out, Candidate{Channel: ch, Protocol: protocol.ID(up), Translator: tr})
				break
			}
		}
	}
	return out
}

// Reachable reports whether a client of protocol p reaches model m: some
// chat channel of m speaks p, or p may be translated (a completions client
// always; another when m's translate_from lists it) and m has a chat
// channel, since every pair of protocols has a translator.
func Reachable(cfg *config.Config, m *config.Model, p protocol.ID) bool {
	return len(candidates(nil, p, m, chatChannels(nil, cfg, m.ID))) > 0
}

// prepare makes cand the current attempt: it builds (or reuses) the body
// for its protocol and upstream model and sets the translation headers
// the client will see.
func (r *Route) prepare(c *Call, cand Candidate) error {
	upstreamModel, _ := cand.Channel.UpstreamModel(c.Model.ID)
	k := bodyKey{protocol: cand.Protocol, model: upstreamModel}
	if cand.Translator == nil && cand.Protocol == protocol.OpenAIResponses {
		k.tools = strings.Join(cand.Channel.Tools, ",")
	}
	var b *builtBody
	for i := range r.built {
		if r.built[i].key == k {
			b = &r.built[i]
			break
		}
	}
	if b == nil {
		body, warnings, err := buildBody(c, cand, upstreamModel)
		if err != nil {
			return err
		}
		r.built = append(r.built, builtBody{key: k, body: body, warnings: warnings})
		b = &r.built[len(r.built)-1]
	}
	r.Protocol, r.Translator, r.Warnings = cand.Protocol, cand.Translator, b.warnings
	r.body, r.bodyModel = b.body, upstreamModel
	h := c.W.Header()
	if cand.Translator != nil {
		h["X-Protocol-Translation"] = translate.HeaderValues(c.Protocol, cand.Protocol)
	} else {
		h.Del("X-Protocol-Translation")
	}
	if len(b.warnings) > 0 {
		h.Set("X-Protocol-Warning", strings.Join(b.warnings, "; "))
	} else {
		h.Del("X-Protocol-Warning")
	}
	return nil
}

// buildBody builds the upstream body of one candidate.
func buildBody(c *Call, cand Candidate, upstreamModel string) ([]byte, []string, error) {
	if cand.Translator == nil {
		out, err := c.Codec.Rewrite(c.Body, codec.RewriteOptions{
			Model:       upstreamModel,
			MaxTokens:   c.WireMax,
			StreamUsage: c.Stream && c.Protocol == protocol.OpenAIChat,
		})
		if err != nil || c.Protocol != protocol.OpenAIResponses {
			return out, nil, err
		}
		if out, err = normalizeResponsesInput(out); err != nil {
			return nil, nil, err
		}
		return dropUnservedResponsesFields(out, c.Model, cand.Channel)
	}
	out, warnings, err := cand.Translator.Request(c.Body, translate.RequestOptions{
		Model: upstreamModel, MaxTokens: c.WireMax, Stream: c.Stream, Reasoning: c.Model.Caps.Reasoning,
		Checked: sameBytes(c.own.inspected, c.Body),
	})
	if err != nil {
		return nil, nil, err
	}
	// Betas are Anthropic's: no other upstream gets the header.
	if cand.Protocol != protocol.AnthropicMessages && c.Request.Header.Get("Anthropic-Beta") != "" {
		warnings = append([]string{"anthropic-beta"}, warnings...)
	}
	return out, warnings, nil
}

// checkBuiltinTools applies the completions-style built-in tool rules: a
// built-in tool needs stream: true (checked first), then the model's caps and
// at least one channel must support it.
func checkBuiltinTools(c *Call, r *Route) error {
	if c.Protocol != protocol.OpenAIChat || len(c.Req.BuiltinTools) == 0 {
		return nil
	}
	if !c.Stream {
		return apierr.Newf(apierr.InvalidRequest, "the built-in tool '%s' requires stream: true", c.Req.BuiltinTools[0])
	}
	for _, tool := range c.Req.BuiltinTools {
		if !slices.Contains(c.Model.Caps.Tools, tool) {
			return apierr.Newf(apierr.ToolNotSupported, "the model '%s' does not support the built-in tool '%s'", c.ModelID, tool)
		}
		supported := false
		for _, cand := range r.Candidates {
			if ch := cand.Channel; len(ch.Tools) == 0 || slices.Contains(ch.Tools, tool) {
				supported = true
				break
			}
		}
		if !supported {
			return apierr.Newf(apierr.ToolNotSupported, "no channel of the model '%s' supports the built-in tool '%s'", c.ModelID, tool)
		}
	}
	return nil
}

// chatChannels appends to out the chat channels serving a model, priority
// first.
func chatChannels(out []*config.Channel, cfg *config.Config, modelID string) []*config.Channel {
	for _, ch := range cfg.ChannelsFor(modelID) {
		if len(ch.Families) == 0 || slices.Contains(ch.Families, "chat") {
			out = append(out, ch)
		}
	}
	return out
}

// normalizeResponsesInput puts a string input into the message-array form
// and sends an omitted instructions as "" (PRODUCT.md §7: the upstream
// rejects the string form and requires the field).
func normalizeResponsesInput(body []byte) ([]byte, error) {
	var err error
	if in := gjson.GetBytes(body, "input"); in.Type == gjson.String {
		msg, _ := json.Marshal([]map[string]any{{
			"role": "user", "content": []map[string]string{{"type": "input_text", "text": in.String()}},
		}})
		if body, err = sjson.SetRawBytes(body, "input", msg); err != nil {
			return nil, err
		}
	}
	if v := gjson.GetBytes(body, "instructions"); !v.Exists() || v.Type == gjson.Null {
		if body, err = sjson.SetBytes(body, "instructions", ""); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// dropUnservedResponsesFields removes what a native responses upstream of
// this model cannot take, naming each in the warnings instead of refusing the
// call (coding agents send them on every call): built-in or unknown tool
// types missing from the model's caps or narrowed away by the channel, and
// reasoning and include for models without caps { reasoning }.
func dropUnservedResponsesFields(body []byte, m *config.Model, ch *config.Channel) ([]byte, []string, error) {
	var warnings []string
	// Warnings name fields in request order: where each field sits in the
	// body as the client sent it.
	order := map[string]int{}
	tools := gjson.GetBytes(body, "tools")
	order["tools"] = tools.Index
	if !m.Caps.Reasoning {
		for _, field := range []string{"reasoning", "include"} {
			order[field] = gjson.GetBytes(body, field).Index
		}
	}
	if tools.IsArray() {
		kept := make([]byte, 0, len(tools.Raw))
		kept = append(kept, '[')
		dropped := false
		tools.ForEach(func(_, t gjson.Result) bool {
			typ := t.Get("type").String()
			if typ == "function" || typ == "custom" || servesTool(m, ch, typ) {
				if len(kept) > 1 {
					kept = append(kept, ',')
				}
				kept = append(kept, t.Raw...)
				return true
			}
			dropped = true
			if w := "tools." + typ; !slices.Contains(warnings, w) {
				warnings = append(warnings, w)
			}
			return true
		})
		if dropped {
			var err error
			if len(kept) == 1 {
				body, err = sjson.DeleteBytes(body, "tools")
				if err == nil && gjson.GetBytes(body, "tool_choice").Exists() {
					body, err = sjson.DeleteBytes(body, "tool_choice")
				}
			} else {
				body, err = sjson.SetRawBytes(body, "tools", append(kept, ']'))
			}
			if err != nil {
				return nil, nil, err
			}
		}
	}
	if !m.Caps.Reasoning {
		for _, field := range []string{"reasoning", "include"} {
			if gjson.GetBytes(body, field).Exists() {
				var err error
				if body, err = sjson.DeleteBytes(body, field); err != nil {
					return nil, nil, err
				}
				warnings = append(warnings, field)
			}
		}
	}
	slices.SortStableFunc(warnings, func(a, b string) int {
		top := func(w string) string { f, _, _ := strings.Cut(w, "."); return f }
		return order[top(a)] - order[top(b)]
	})
	return body, warnings, nil
}

func servesTool(m *config.Model, ch *config.Channel, tool string) bool {
	return slices.Contains(m.Caps.Tools, tool) && (len(ch.Tools) == 0 || slices.Contains(ch.Tools, tool))
}
