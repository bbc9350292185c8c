package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// serveCountTokens answers POST /v1/messages/count_tokens: free and fast.
// A native messages channel counts exactly; otherwise the answer is the
// pre-charge estimate (bytes / 4 of messages, system and tools).
func (s *Server) countTokens(ctx context.Context, c *pipeline.Call) error {
	const p = protocol.AnthropicMessages
	k, w, r := c.Key, c.W, c.Request
	if err := pipeline.CheckAnthropicVersion(r.Header.Get("anthropic-version")); err != nil {
		return err
	}
	body, aerr := s.readBody(w, r, MaxChatBody)
	if aerr != nil {
		return aerr
	}
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return apierr.New(apierr.InvalidRequest, "the body must be a JSON object")
	}
	modelID := gjson.GetBytes(body, "model").String()
	if modelID == "" {
		return apierr.New(apierr.InvalidRequest, "model: required")
	}
	if !gjson.GetBytes(body, "messages").IsArray() {
		return apierr.New(apierr.InvalidRequest, "messages: required, an array")
	}
	m, found := s.cfg.Model(modelID)
	if !found {
		return pipeline.UnknownModel(s.cfg, k, modelID)
	}
	if !pipeline.Allowed(k, m) {
		return apierr.Newf(apierr.ModelNotAllowed, "this key is not allowed to use the model '%s'", modelID)
	}
	for _, ch := range s.cfg.ChannelsFor(m.ID) {
		v := s.vendors[ch.Vendor]
		if v == nil || !slices.Contains(ch.Protocols, string(p)) {
			continue
		}
		upstreamModel, _ := ch.UpstreamModel(m.ID)
		upBody, err := sjson.SetBytes(body, "model", upstreamModel)
		if err != nil {
			break
		}
		resp, err := v.Chat(ctx, &vendor.ChatRequest{
			Channel: ch.Name, Protocol: string(p), Model: upstreamModel, Body: upBody,
			Headers:   map[string]string{"anthropic-beta": r.Header.Get("anthropic-beta")},
			RequestID: requestID(r), Operation: vendor.OpCountTokens,
		})
		if err == nil && resp.Status == http.StatusOK && gjson.GetBytes(resp.Body, "input_tokens").Exists() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(resp.Body)
			return nil
		}
		break // the estimate below answers when the native count fails
	}
	n := 0
	for _, field := range []string{"system", "messages", "tools"} {
		n += len(gjson.GetBytes(body, field).Raw)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"input_tokens":` + strconv.Itoa((n+3)/4) + "}"))
	return nil
}
