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

// Route is how a call reaches its upstream: the protocol spoken upstream,
// the translator (nil when the client's protocol is spoken natively), the
// candidate channels, and the body prepared for them.
type Route struct {
	Protocol   protocol.ID
	Translator translate.Translator
	Channels   []*config.Channel
	Warnings   []string

	body      []byte
	bodyModel string
}

// translateStage picks the upstream protocol: the client's own when some
// channel speaks it; otherwise a gateway-side translation (completions-style
// clients reach messages and generate-content upstreams by default; the
// reverse paths only where the model's translate_from allows them).
type translateStage struct {
	cfg *config.Config
}

func newTranslate(d *Deps, _ map[string]string) (Stage, error) {
	return &translateStage{cfg: d.Config}, nil
}

func (s *translateStage) Name() string { return "translate" }

func (s *translateStage) Serve(_ context.Context, c *Call) error {
	chans := chatChannels(s.cfg, c.Model.ID)
	r := &Route{}
	if native := speaking(chans, c.Protocol); len(native) > 0 {
		r.Protocol, r.Channels = c.Protocol, native
	} else if target, tr := s.pickTranslation(c, chans); tr != nil {
		r.Protocol, r.Translator, r.Channels = target, tr, speaking(chans, target)
	} else {
		return apierr.Newf(apierr.NoChannelAvailable,
			"the model '%s' has no channel serving the %s protocol", c.ModelID, c.Protocol)
	}
	if err := checkBuiltinTools(c, r); err != nil {
		return err
	}
	upstreamModel, _ := r.Channels[0].UpstreamModel(c.Model.ID)
	if err := r.prepare(c, upstreamModel); err != nil {
		return err
	}
	h := c.W.Header()
	if r.Translator != nil {
		h.Set("X-Protocol-Translation", translate.HeaderValue(c.Protocol, r.Protocol))
	}
	if len(r.Warnings) > 0 {
		h.Set("X-Protocol-Warning", strings.Join(r.Warnings, "; "))
	}
	c.Route = r
	return nil
}

func (s *translateStage) pickTranslation(c *Call, chans []*config.Channel) (protocol.ID, translate.Translator) {
	if c.Protocol == protocol.OpenAIChat {
		for _, ch := range chans {
			for _, p := range ch.Protocols {
				if tr, ok := translate.Lookup(c.Protocol, protocol.ID(p)); ok {
					return protocol.ID(p), tr
				}
			}
		}
		return "", nil
	}
	if !slices.Contains(c.Model.TranslateFrom, string(c.Protocol)) || len(speaking(chans, protocol.OpenAIChat)) == 0 {
		return "", nil
	}
	if tr, ok := translate.Lookup(c.Protocol, protocol.OpenAIChat); ok {
		return protocol.OpenAIChat, tr
	}
	return "", nil
}

// prepare builds the upstream body for one upstream model id; dispatch
// calls it again only when a later channel maps the model differently.
func (r *Route) prepare(c *Call, upstreamModel string) error {
	if r.body != nil && r.bodyModel == upstreamModel {
		return nil
	}
	var out []byte
	var err error
	if r.Translator == nil {
		out, err = c.Codec.Rewrite(c.Body, codec.RewriteOptions{
			Model:       upstreamModel,
			MaxTokens:   c.WireMax,
			StreamUsage: c.Stream && c.Protocol == protocol.OpenAIChat,
		})
		if err == nil && c.Protocol == protocol.OpenAIResponses {
			out, err = normalizeResponsesInput(out)
			if err == nil {
				var dropped []string
				out, dropped, err = dropUnservedResponsesFields(out, c.Model, r.Channels[0])
				if r.body == nil {
					r.Warnings = dropped
				}
			}
		}
	} else {
		var warnings []string
		out, warnings, err = r.Translator.Request(c.Body, translate.RequestOptions{
			Model: upstreamModel, MaxTokens: c.WireMax, Stream: c.Stream, Reasoning: c.Model.Caps.Reasoning,
		})
		if err == nil && c.Stream && r.Protocol == protocol.OpenAIChat {
			out, err = codec.For(protocol.OpenAIChat).Rewrite(out, codec.RewriteOptions{StreamUsage: true})
		}
		if r.body == nil {
			r.Warnings = warnings
			// Betas are Anthropic's: no other upstream gets the header.
			if r.Protocol != protocol.AnthropicMessages && c.Request.Header.Get("anthropic-beta") != "" {
				r.Warnings = append([]string{"anthropic-beta"}, warnings...)
			}
		}
	}
	if err != nil {
		return err
	}
	r.body, r.bodyModel = out, upstreamModel
	return nil
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
		for _, ch := range r.Channels {
			if len(ch.Tools) == 0 || slices.Contains(ch.Tools, tool) {
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

// chatChannels lists the chat channels serving a model, priority first.
func chatChannels(cfg *config.Config, modelID string) []*config.Channel {
	var out []*config.Channel
	for _, ch := range cfg.ChannelsFor(modelID) {
		if len(ch.Families) == 0 || slices.Contains(ch.Families, "chat") {
			out = append(out, ch)
		}
	}
	return out
}

func speaking(chans []*config.Channel, p protocol.ID) []*config.Channel {
	var out []*config.Channel
	for _, ch := range chans {
		if slices.Contains(ch.Protocols, string(p)) {
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
