package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/store"
)

// One retrieval round (PRODUCT.md §7 Agents): the top pages for the
// latest user message, within a character budget.
const (
	retrievalPages = 5
	retrievalChars = 6000
)

// agentPath is the one route an agent key may call (spec: Agent interface).
const agentPath = "/v1/chat/completions"

// agentStage serves agent keys, right after auth, on every kind of call:
// any route but POST /v1/chat/completions is refused with 403 (logs,
// knowledge base, media, polls, balance, models: everything), so an agent
// key never falls back to an unrestricted one. On that route it turns the
// client's body into the agent's request: the model locked, the client's
// tools and conversation id dropped, the agent's system prompt first, its
// temperature unless the client set one, its built-in tools where they
// apply, and one retrieval round over its knowledge bases. The rest of the
// chain reads c.Body, so it sees the agent's request: the allowlist its
// model, precharge its size, translate and dispatch its body. Other keys
// pass untouched.
type agentStage struct {
	cfg   *config.Config
	store store.Store
	kb    Retriever
}

func newAgent(d *Deps, settings map[string]string) (Stage, error) {
	for k := range settings {
		return nil, fmt.Errorf("the agent stage takes no settings (got %q): agents are set through the admin API", k)
	}
	return &agentStage{cfg: d.Config, store: d.Store, kb: d.Retriever}, nil
}

func (s *agentStage) Name() string { return "agent" }

// agentKey reports whether k is an agent key: of kind agent, or bound to
// an agent whatever its kind says.
func agentKey(k *store.Key) bool {
	return k != nil && (k.Kind == store.KindAgent || k.AgentID != "")
}

func denied(msg string) *apierr.Error { return apierr.New(apierr.PermissionDenied, msg) }

func (s *agentStage) Serve(ctx context.Context, c *Call) error {
	k := c.Key
	if !agentKey(k) {
		return nil
	}
	if c.Kind != KindChat || c.Protocol != protocol.OpenAIChat || c.Request.Method != http.MethodPost || c.Request.URL.Path != agentPath {
		return denied("an agent key can call only POST " + agentPath + "; " + c.Request.Method + " " + c.Request.URL.Path + " is refused")
	}
	if k.AgentID == "" {
		return denied("this agent key is bound to no agent; issue agent keys with POST /admin/v1/agents/{id}/keys")
	}
	a, err := s.store.GetAgent(ctx, k.AgentID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return denied("the agent of this key does not exist")
	case err != nil:
		return apierr.Internal(err)
	case a.DeletedAt != nil:
		return denied("the agent of this key was deleted")
	case a.AccountID != k.AccountID:
		return denied("the agent of this key belongs to another organization")
	case !a.Published:
		return denied("the agent of this key is not published")
	}
	c.Agent = &a
	c.ModelID = a.Model // the row names the agent's model, refused calls too
	if c.BodyErr != nil {
		return c.BodyErr
	}
	body, err := stripAgentBody(c.Body)
	if err != nil {
		return err
	}
	msgs := gjson.GetBytes(body, "messages").Array()
	m, known := s.cfg.Model(a.Model)
	if known {
		// An unknown model is left to the allowlist: model_not_found,
		// registry first (PRODUCT.md §7).
		org, err := s.store.GetOrganization(ctx, a.AccountID)
		if err != nil {
			return apierr.Internal(err)
		}
		if !orgAllows(org, m) {
			e := apierr.Newf(apierr.ModelNotAllowed, "the agent's model '%s' is not in the organization's allowlist", a.Model)
			e.Status, e.Type = http.StatusForbidden, "permission_error" // errors rule 10
			return e
		}
		if !m.Caps.Vision && slices.ContainsFunc(msgs, hasImage) {
			return apierr.Newf(apierr.ModelNoVision, "the agent's model '%s' does not take images; send text only", a.Model)
		}
	}
	pages, err := s.retrieve(ctx, &a, msgs)
	if err != nil {
		return err
	}
	stream := gjson.GetBytes(body, "stream").Bool()
	out, err := agentRequest(body, msgs, &a, pages, s.builtinTools(&a, m, known, stream))
	if err != nil {
		return apierr.Internal(err)
	}
	for _, p := range pages {
		c.AgentPages = append(c.AgentPages, p.ID)
	}
	c.ClientBody, c.Body = c.Body, out
	return nil
}

// stripAgentBody checks the body is a completions-style request and drops
// what an agent's client may not set: model, tools, functions and their
// choice, conversation_id (spec: Agent interface); the model is the
// agent's (agentRequest).
func stripAgentBody(body []byte) ([]byte, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, apierr.New(apierr.InvalidRequest, "the body must be a JSON object: a chat completions request with messages")
	}
	// The model is replaced (a placeholder until the agent's is set), so
	// the body reads as a whole request whatever the client put there.
	body, err := sjson.SetBytes(body, "model", "agent")
	if err != nil {
		return nil, apierr.Internal(err)
	}
	for _, f := range []string{"tools", "functions", "tool_choice", "function_call", "parallel_tool_calls", "conversation_id"} {
		if gjson.GetBytes(body, f).Exists() {
			if body, err = sjson.DeleteBytes(body, f); err != nil {
				return nil, apierr.Internal(err)
			}
		}
	}
	if _, err := codec.For(protocol.OpenAIChat).Inspect(body); err != nil {
		return nil, err
	}
	if msgs := gjson.GetBytes(body, "messages"); !msgs.IsArray() || len(msgs.Array()) == 0 {
		return nil, apierr.New(apierr.InvalidRequest, "the field \"messages\" must be a non-empty array of messages")
	}
	return body, nil
}

// orgAllows reports whether the organization allowlist admits m (by its
// id or an alias).
func orgAllows(o store.Organization, m *config.Model) bool {
	if !o.RestrictModels {
		return true
	}
	return slices.ContainsFunc(o.AllowedModels, func(id string) bool { return id == m.ID || slices.Contains(m.Aliases, id) })
}

// hasImage reports whether a message carries an image part.
func hasImage(msg gjson.Result) bool {
	found := false
	msg.Get("content").ForEach(func(_, part gjson.Result) bool {
		switch part.Get("type").String() {
		case "image_url", "input_image", "image":
			found = true
		}
		return !found
	})
	return found
}

// messageText is the text of a message: its string content, or its text
// parts joined.
func messageText(msg gjson.Result) string {
	content := msg.Get("content")
	if content.Type == gjson.String {
		return content.String()
	}
	var parts []string
	content.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String && t.String() != "" {
			parts = append(parts, t.String())
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// latestUser is the index of the last user message, -1 without one.
func latestUser(msgs []gjson.Result) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").String() == "user" {
			return i
		}
	}
	return -1
}

// retrieve runs the agent's one retrieval round: every attached base must
// still be readable by the agent's organization (403 otherwise, errors
// rule 10); the latest user message is searched over them.
func (s *agentStage) retrieve(ctx context.Context, a *store.Agent, msgs []gjson.Result) ([]RetrievedPage, error) {
	if len(a.KnowledgeBases) == 0 {
		return nil, nil
	}
	if s.kb == nil {
		return nil, denied("the agent's knowledge bases cannot be read: this gateway serves no knowledge base")
	}
	for _, id := range a.KnowledgeBases {
		ok, err := s.kb.Readable(ctx, a.AccountID, id)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		if !ok {
			return nil, denied("the agent's knowledge base '" + id + "' cannot be read by its organization")
		}
	}
	i := latestUser(msgs)
	if i < 0 {
		return nil, nil
	}
	q := strings.TrimSpace(messageText(msgs[i]))
	if q == "" {
		return nil, nil
	}
	pages, err := s.kb.Retrieve(ctx, a.AccountID, a.KnowledgeBases, q, retrievalPages)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return fitPages(pages), nil
}

// fitPages keeps the top pages within the character budget: each page is
// its heading and body; the last one that does not fit is cut to the
// budget's end, and a page whose heading alone does not fit is left out.
func fitPages(pages []RetrievedPage) []RetrievedPage {
	left := retrievalChars
	var out []RetrievedPage
	for _, p := range pages[:min(len(pages), retrievalPages)] {
		head := pageHeading(p)
		n := utf8.RuneCountInString(head)
		if n >= left {
			break
		}
		left -= n
		if b := []rune(p.Body); len(b) > left {
			p.Body = string(b[:left])
		}
		left -= utf8.RuneCountInString(p.Body)
		out = append(out, p)
		if left == 0 {
			break
		}
	}
	return out
}

func pageHeading(p RetrievedPage) string { return "## " + p.Title + " (" + p.ID + ")\n" }

// knowledgeMessage is the system message carrying the retrieved pages.
func knowledgeMessage(pages []RetrievedPage) string {
	var b strings.Builder
	b.WriteString("Knowledge base pages found for the user's latest message. Use them where they help; say so when they do not answer it.\n")
	for _, p := range pages {
		b.WriteString("\n")
		b.WriteString(pageHeading(p))
		b.WriteString(p.Body)
		b.WriteString("\n")
	}
	return b.String()
}

// builtinTools are the agent's built-in tools this call gets: each one the
// agent has on, on a streaming call (the spec requires stream: true for
// them, and PRODUCT.md §7 runs a non-streaming call without them), of a
// model whose caps list it and with a chat channel that does not narrow it
// away.
func (s *agentStage) builtinTools(a *store.Agent, m *config.Model, known, stream bool) []string {
	if !known || !stream {
		return nil
	}
	var out []string
	for _, t := range []struct {
		on   bool
		name string
	}{{a.WebSearch, "web_search"}, {a.ImageGeneration, "image_generation"}} {
		if !t.on || !slices.Contains(m.Caps.Tools, t.name) {
			continue
		}
		if slices.ContainsFunc(chatChannels(nil, s.cfg, m.ID), func(ch *config.Channel) bool {
			return len(ch.Tools) == 0 || slices.Contains(ch.Tools, t.name)
		}) {
			out = append(out, t.name)
		}
	}
	return out
}

// agentRequest builds the agent's request from the stripped client body:
// the agent's system prompt first (the client's system messages follow in
// their places), the retrieved pages as a system message just before the
// latest user message (the conversation's prefix stays cacheable), the
// model locked, the temperature, the built-in tools.
func agentRequest(body []byte, msgs []gjson.Result, a *store.Agent, pages []RetrievedPage, tools []string) ([]byte, error) {
	system := func(text string) (string, error) {
		b, err := json.Marshal(map[string]string{"role": "system", "content": text})
		return string(b), err
	}
	var items []string
	if a.SystemPrompt != "" {
		m, err := system(a.SystemPrompt)
		if err != nil {
			return nil, err
		}
		items = append(items, m)
	}
	at := -1
	if len(pages) > 0 {
		at = latestUser(msgs)
	}
	for i, msg := range msgs {
		if i == at {
			m, err := system(knowledgeMessage(pages))
			if err != nil {
				return nil, err
			}
			items = append(items, m)
		}
		items = append(items, msg.Raw)
	}
	out, err := sjson.SetRawBytes(body, "messages", []byte("["+strings.Join(items, ",")+"]"))
	if err == nil {
		out, err = sjson.SetBytes(out, "model", a.Model)
	}
	if t := gjson.GetBytes(out, "temperature"); err == nil && a.Temperature != nil && (!t.Exists() || t.Type == gjson.Null) {
		out, err = sjson.SetBytes(out, "temperature", *a.Temperature)
	}
	if err == nil && len(tools) > 0 {
		list := make([]map[string]string, 0, len(tools))
		for _, t := range tools {
			list = append(list, map[string]string{"type": t})
		}
		out, err = sjson.SetBytes(out, "tools", list)
	}
	return out, err
}
