package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// The organization's agents (the spec's Agent interface): its owners and
// admins make and publish agents, issue agent keys with spend caps and
// answer key requests; any member sees the published agents and asks for
// a key. Every change goes through core/admin's operations.

// agentsData is the agents page.
type agentsData struct {
	Agents   []agentRow
	Requests []requestRow
	Models   []string
	Bases    []store.KnowledgeBase
	Form     agentForm
	Created  *createdKey
	// Mine are the visitor's own requests (anyone but an admin).
	Mine []requestRow
}

type agentRow struct {
	store.Agent
	Keys int
}

type requestRow struct {
	store.KeyRequest
	Agent string
}

// agentForm is an agent's form as sent.
type agentForm struct {
	ID, Name, Model, SystemPrompt, Temperature string
	KnowledgeBases                             []string
	WebSearch, ImageGeneration, Published      bool
}

func formOf(a store.Agent) agentForm {
	f := agentForm{ID: a.ID, Name: a.Name, Model: a.Model, SystemPrompt: a.SystemPrompt, KnowledgeBases: a.KnowledgeBases,
		WebSearch: a.WebSearch, ImageGeneration: a.ImageGeneration, Published: a.Published}
	if a.Temperature != nil {
		f.Temperature = strconv.FormatFloat(*a.Temperature, 'f', -1, 64)
	}
	return f
}

func (c *Console) agentsData(ctx context.Context, v *visit) (*agentsData, error) {
	as, err := c.o.Store.ListAgents(ctx, v.User.AccountID)
	if err != nil {
		return nil, err
	}
	d := &agentsData{Models: c.chatModels(), Form: agentForm{Published: true}}
	if d.Bases, err = c.o.Bases.ReadableBases(ctx, v.User.AccountID); err != nil {
		return nil, err
	}
	ks, err := c.o.Store.ListKeys(ctx, v.User.AccountID)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, a := range as {
		names[a.ID] = a.Name
		if !v.orgAdmin() && !a.Published {
			continue
		}
		n := 0
		for _, k := range ks {
			if k.AgentID == a.ID {
				n++
			}
		}
		d.Agents = append(d.Agents, agentRow{Agent: a, Keys: n})
	}
	rs, err := c.o.Store.ListKeyRequests(ctx, v.User.AccountID)
	if err != nil {
		return nil, err
	}
	for _, kr := range rs {
		row := requestRow{KeyRequest: kr, Agent: names[kr.AgentID]}
		if v.orgAdmin() && kr.Status == store.KeyRequestPending {
			d.Requests = append(d.Requests, row)
		}
		if kr.Requester == v.User.Email {
			d.Mine = append(d.Mine, row)
		}
	}
	slices.Reverse(d.Mine)
	return d, nil
}

// chatModels are the models an agent may be locked to.
func (c *Console) chatModels() []string {
	var out []string
	for _, m := range c.o.Config.Models {
		if m.Family == "" || m.Family == "chat" {
			out = append(out, m.ID)
		}
	}
	return out
}

func (c *Console) agentsPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	d, err := c.agentsData(r.Context(), v)
	if err != nil {
		return err
	}
	vw := view{Section: "agents", Title: "Agents", Data: d}
	if r.URL.Query().Get("requested") != "" {
		vw.Notice = "Your request was sent to the organization's admins. Once approved, the key is on your keys page."
	}
	return c.render(w, v, http.StatusOK, "agents", "", vw)
}

// needOrgAdmin refuses someone who does not run the organization's agents.
func needOrgAdmin(v *visit) error {
	if !v.orgAdmin() {
		return apierr.New(apierr.PermissionDenied, "only the organization's owners and admins manage its agents")
	}
	return nil
}

// agentSpec reads an agent's form into the admin API's spec.
func agentSpec(r *http.Request) (agentForm, admin.AgentSpec, error) {
	f := agentForm{
		ID: r.PathValue("id"), Name: r.PostFormValue("name"), Model: r.PostFormValue("model"),
		SystemPrompt: r.PostFormValue("system_prompt"), Temperature: strings.TrimSpace(r.PostFormValue("temperature")),
		KnowledgeBases: r.PostForm["kb"], WebSearch: r.PostFormValue("web_search") == "on",
		ImageGeneration: r.PostFormValue("image_generation") == "on", Published: r.PostFormValue("published") == "on",
	}
	kbs := append([]string{}, f.KnowledgeBases...)
	spec := admin.AgentSpec{Name: &f.Name, Model: &f.Model, SystemPrompt: &f.SystemPrompt, KnowledgeBases: &kbs,
		WebSearch: &f.WebSearch, ImageGeneration: &f.ImageGeneration, Published: &f.Published}
	var temp *float64
	if f.Temperature != "" {
		t, err := strconv.ParseFloat(f.Temperature, 64)
		if err != nil {
			return f, spec, apierr.Newf(apierr.InvalidRequest, "temperature must be a number from 0 to 2, or empty for none; got %q", f.Temperature)
		}
		temp = &t
	}
	spec.Temperature = &temp
	return f, spec, nil
}

// checkBases refuses a knowledge base the account cannot read: the agent
// could never use it (its calls would be refused).
func (c *Console) checkBases(ctx context.Context, v *visit, ids []string) error {
	bases, err := c.o.Bases.ReadableBases(ctx, v.User.AccountID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !slices.ContainsFunc(bases, func(b store.KnowledgeBase) bool { return b.ID == id }) {
			return apierr.Newf(apierr.InvalidRequest, "knowledge base %q is not one your account may read", id)
		}
	}
	return nil
}

func (c *Console) createAgent(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOrgAdmin(v); err != nil {
		return err
	}
	ctx := r.Context()
	f, spec, err := agentSpec(r)
	if err == nil {
		err = c.checkBases(ctx, v, f.KnowledgeBases)
	}
	var a store.Agent
	if err == nil {
		a, err = c.o.Admin.CreateAgent(ctx, v.User.AccountID, spec)
	}
	if err != nil {
		e := apierr.As(err)
		if e.Status >= 500 {
			return err
		}
		d, derr := c.agentsData(ctx, v)
		if derr != nil {
			return derr
		}
		d.Form = f
		return c.render(w, v, e.Status, "agents", "", view{Section: "agents", Title: "Agents", Data: d, Problem: sentence(e.Message)})
	}
	c.redirect(w, r, Prefix+"agents/"+a.ID+"?created=1")
	return nil
}

// agentData is one agent's page: its form, its keys, the form to issue one.
type agentData struct {
	Agent   store.Agent
	Form    agentForm
	Keys    []keyRow
	Models  []string
	Bases   []store.KnowledgeBase
	Created *createdKey
}

// agentOf reads an agent of the visitor's account that is not deleted.
func (c *Console) agentOf(ctx context.Context, v *visit, id string) (store.Agent, error) {
	a, err := c.o.Store.GetAgent(ctx, id)
	if err == nil && (a.AccountID != v.User.AccountID || a.DeletedAt != nil) {
		err = store.ErrNotFound
	}
	return a, err
}

func (c *Console) agentData(r *http.Request, v *visit, a store.Agent) (*agentData, error) {
	ctx := r.Context()
	d := &agentData{Agent: a, Form: formOf(a), Models: c.chatModels()}
	var err error
	if d.Bases, err = c.o.Bases.ReadableBases(ctx, v.User.AccountID); err != nil {
		return nil, err
	}
	ks, err := c.o.Store.ListKeys(ctx, v.User.AccountID)
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		if k.AgentID != a.ID {
			continue
		}
		row, err := c.keyRow(r, v, k, map[string]string{})
		if err != nil {
			return nil, err
		}
		d.Keys = append(d.Keys, row)
	}
	return d, nil
}

func (c *Console) agentPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOrgAdmin(v); err != nil {
		return err
	}
	a, err := c.agentOf(r.Context(), v, r.PathValue("id"))
	if err != nil {
		return err
	}
	d, err := c.agentData(r, v, a)
	if err != nil {
		return err
	}
	vw := view{Section: "agents", Title: a.Name, Data: d, Back: Prefix + "agents/" + a.ID}
	if r.URL.Query().Get("created") != "" {
		vw.Notice = "Agent created. Issue it a key below, or let members ask for one."
	}
	return c.render(w, v, http.StatusOK, "agent", "", vw)
}

func (c *Console) updateAgent(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOrgAdmin(v); err != nil {
		return err
	}
	ctx := r.Context()
	a, err := c.agentOf(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, spec, err := agentSpec(r)
	if err == nil {
		err = c.checkBases(ctx, v, f.KnowledgeBases)
	}
	if err == nil {
		a, err = c.o.Admin.UpdateAgent(ctx, a.ID, spec)
	}
	return c.agentAnswer(w, r, v, a, f, err, "Saved.", nil)
}

// agentAnswer renders the agent's page after a change: with its notice,
// or with the form as sent and the problem.
func (c *Console) agentAnswer(w http.ResponseWriter, r *http.Request, v *visit, a store.Agent, f agentForm, err error, notice string, created *createdKey) error {
	status := http.StatusOK
	vw := view{Section: "agents", Title: a.Name, Notice: notice, Back: Prefix + "agents/" + a.ID}
	if err != nil {
		e := apierr.As(err)
		if e.Status >= 500 {
			return err
		}
		status, vw.Notice, vw.Problem = e.Status, "", sentence(e.Message)
	}
	d, derr := c.agentData(r, v, a)
	if derr != nil {
		return derr
	}
	if err != nil && f.ID != "" {
		d.Form = f
	}
	d.Created = created
	vw.Data = d
	return c.render(w, v, status, "agent", "", vw)
}

// agentAction publishes, unpublishes or deletes an agent, issues one of
// its keys with a spend cap, or (for any member) asks for a key.
func (c *Console) agentAction(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	a, err := c.agentOf(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	action := r.PathValue("action")
	if action == "request" {
		if !a.Published {
			return store.ErrNotFound
		}
		if _, err := c.o.Admin.RequestAgentKey(ctx, a.ID, v.User.Email, strings.TrimSpace(r.PostFormValue("note"))); err != nil {
			return err
		}
		c.redirect(w, r, Prefix+"agents?requested=1")
		return nil
	}
	if err := needOrgAdmin(v); err != nil {
		return err
	}
	on, off := true, false
	switch action {
	case "publish", "unpublish":
		p := &on
		if action == "unpublish" {
			p = &off
		}
		a, err = c.o.Admin.UpdateAgent(ctx, a.ID, admin.AgentSpec{Published: p})
		return c.agentAnswer(w, r, v, a, agentForm{}, err, map[bool]string{true: "Published: its keys work.", false: "Unpublished: its keys are refused until you publish it again."}[a.Published], nil)
	case "delete":
		if err := c.o.Admin.DeleteAgent(ctx, a.ID); err != nil {
			return err
		}
		c.redirect(w, r, Prefix+"agents")
		return nil
	case "keys":
		limit, err := spendCap(r.PostFormValue("spend_cap"))
		if err != nil {
			return c.agentAnswer(w, r, v, a, agentForm{}, err, "", nil)
		}
		k, raw, err := c.o.Admin.IssueAgentKey(ctx, a.ID, r.PostFormValue("name"), limit)
		if err != nil {
			return c.agentAnswer(w, r, v, a, agentForm{}, err, "", nil)
		}
		return c.agentAnswer(w, r, v, a, agentForm{}, nil,
			"Key “"+k.Name+"” issued. Copy it now: it is shown this once.", &createdKey{Key: k, Raw: raw})
	}
	return store.ErrNotFound
}

// spendCap reads a spend cap field: empty for none, else a decimal.
func spendCap(s string) (*money.Nano, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	n, err := money.Parse(s)
	if err != nil || n < 0 {
		return nil, apierr.Newf(apierr.InvalidRequest, "the spend cap must be an amount of 0 or more (e.g. 25.50), or empty for none; got %q", s)
	}
	return &n, nil
}

// answerKeyRequest approves (issuing the key, with its spend cap, to the
// person who asked) or rejects a pending key request.
func (c *Console) answerKeyRequest(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOrgAdmin(v); err != nil {
		return err
	}
	ctx := r.Context()
	kr, err := c.o.Store.GetKeyRequest(ctx, r.PathValue("id"))
	if err == nil && kr.AccountID != v.User.AccountID {
		err = store.ErrNotFound
	}
	if err != nil {
		return err
	}
	switch r.PathValue("action") {
	case "approve":
		limit, err := spendCap(r.PostFormValue("spend_cap"))
		if err != nil {
			return err
		}
		// The key belongs to the person who asked, when they sign in here.
		owner := ""
		if u, err := c.o.Store.UserByEmail(ctx, kr.Requester); err == nil && u.AccountID == v.User.AccountID {
			owner = u.ID
		}
		_, k, raw, err := c.o.Admin.ApproveKeyRequest(ctx, kr.ID, limit, owner)
		if err != nil {
			return decided(err)
		}
		d, err := c.agentsData(ctx, v)
		if err != nil {
			return err
		}
		d.Created = &createdKey{Key: k, Raw: raw}
		notice := "Approved: key “" + k.Name + "” issued. Copy it now for them: it is shown this once."
		if owner != "" {
			notice = "Approved: key “" + k.Name + "” issued to " + kr.Requester + ", who sees it on their keys page (and may reveal it with their password)."
		}
		return c.render(w, v, http.StatusOK, "agents", "", view{Section: "agents", Title: "Agents", Data: d, Notice: notice})
	case "reject":
		if _, err := c.o.Admin.RejectKeyRequest(ctx, kr.ID); err != nil {
			return decided(err)
		}
		c.redirect(w, r, Prefix+"agents")
		return nil
	}
	return store.ErrNotFound
}

// decided says that a request was answered meanwhile.
func decided(err error) error {
	if errors.Is(err, store.ErrDecided) {
		e := apierr.New(apierr.InvalidRequest, "this key request was already answered")
		e.Status = http.StatusConflict
		return e
	}
	return err
}
