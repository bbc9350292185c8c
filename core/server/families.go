package server

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/tasksapi"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// routeDecls are the families' declarations of one method and path.
type routeDecls struct {
	method, path string
	decls        []pipeline.JobRoute
}

// GroupRoutes gathers the families' routes by method and path, in the
// order they first appear. Several families may declare one route when
// its shape agrees (vendor.SameShape); a disagreement names both families.
func GroupRoutes(specs []*vendor.FamilySpec) ([]routeDecls, error) {
	var out []routeDecls
	at := map[string]int{}
	var problems []string
	for _, spec := range specs {
		for _, rt := range spec.Routes {
			k := rt.Method + " " + rt.Path
			i, seen := at[k]
			if !seen {
				at[k] = len(out)
				out = append(out, routeDecls{method: rt.Method, path: rt.Path, decls: []pipeline.JobRoute{{Spec: spec, Route: rt}}})
				continue
			}
			first := out[i].decls[0]
			if why := vendor.SameShape(first.Spec, &first.Route, spec, &rt); why != "" {
				problems = append(problems, "the "+first.Spec.Name+" and "+spec.Name+" families declare "+k+" differently ("+why+")")
				continue
			}
			out[i].decls = append(out[i].decls, pipeline.JobRoute{Spec: spec, Route: rt})
		}
	}
	if len(problems) > 0 {
		return out, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

// families registers the routes the families' plugins declared, each
// once: creates run through the job chain (the model's family picks the
// spec), polls, lists, deletes and reads through the read chain.
func (s *Server) families(specs []*vendor.FamilySpec, linkBase func() string) {
	groups, err := GroupRoutes(specs)
	if err != nil {
		// The gateway refuses such plugins at start; whatever else built
		// this server serves the first declaration of each route.
		s.log.Error("family routes disagree; the first declaration of each serves", "error", err)
	}
	for _, g := range groups {
		first := g.decls[0]
		var kind pipeline.Kind
		var h http.HandlerFunc
		switch first.Route.Kind {
		case vendor.RouteCreate:
			kind, h = pipeline.KindJob, s.serveJob(g.decls, linkBase)
		case vendor.RoutePoll, vendor.RouteList, vendor.RouteDelete:
			kind, h = pipeline.KindRead, s.read(s.gated(first, s.taskRoute(g.decls)), readOpts{})
		case vendor.RouteRead:
			kind, h = pipeline.KindRead, s.read(s.gated(first, s.familyRead(first)), readOpts{})
		default:
			s.log.Warn("a family route of unknown kind is not served", "family", first.Spec.Name, "path", g.path, "kind", first.Route.Kind)
			continue
		}
		s.handle(g.method, g.path, kind, h)
		names := make([]string, len(g.decls))
		for i, d := range g.decls {
			names[i] = d.Spec.Name
		}
		s.routes[len(s.routes)-1].Family = strings.Join(names, ",")
	}
}

// taskRoute serves a poll, list or delete route for every family on it.
func (s *Server) taskRoute(decls []pipeline.JobRoute) readHandler {
	first := decls[0]
	rt := tasksapi.Route{Families: map[string]*vendor.FamilySpec{},
		Prefix: first.Spec.BillingOf(&first.Route).TaskPrefix, List: first.Spec.ListOf(&first.Route)}
	for _, d := range decls {
		rt.Families[d.Spec.Name] = d.Spec
	}
	var h tasksapi.Handler
	switch first.Route.Kind {
	case vendor.RoutePoll:
		h = s.tasks.Poll(rt)
	case vendor.RouteDelete:
		h = s.tasks.Delete(rt)
	default:
		if op := first.Route.Operation; op != "" {
			rt.Merge = func(r *http.Request) ([]byte, error) {
				out, err := s.askFamily(r, first, op)
				if err != nil {
					return nil, err
				}
				return out.Body, nil
			}
		}
		h = s.tasks.List(rt)
	}
	return func(_ context.Context, c *pipeline.Call) error {
		return h(c.W, c.Request, c.Key)
	}
}

// gated refuses a key whose allowlist lacks the route's gate model.
func (s *Server) gated(d pipeline.JobRoute, h readHandler) readHandler {
	if d.Route.Gate == "" {
		return h
	}
	return func(ctx context.Context, c *pipeline.Call) error {
		if err := pipeline.CheckGate(s.cfg, c.Key, d.Spec, d.Route.Gate); err != nil {
			return err
		}
		return h(ctx, c)
	}
}

// familyRead answers a free read route from the family's plugin.
func (s *Server) familyRead(d pipeline.JobRoute) readHandler {
	return func(_ context.Context, c *pipeline.Call) error {
		out, err := s.askFamily(c.Request, d, d.Route.Operation)
		if err != nil {
			return err
		}
		status := out.Status
		if status == 0 {
			status = http.StatusOK
		}
		h := c.W.Header()
		h.Set("Content-Type", "application/json")
		for k, v := range out.Headers {
			h.Set(k, v)
		}
		c.W.WriteHeader(status)
		_, _ = c.W.Write(out.Body)
		return nil
	}
}

// askFamily asks a family's plugin a read (vendor.JobReader): on the
// route's model (its own, else the family's first configured one), on the
// model's first channel of the family; the query parameters are the body.
func (s *Server) askFamily(r *http.Request, d pipeline.JobRoute, op string) (*vendor.JobOutcome, error) {
	model := d.Route.Model
	if model == "" {
		for i := range s.cfg.Models {
			if s.cfg.Models[i].Family == d.Spec.Name {
				model = s.cfg.Models[i].ID
				break
			}
		}
	}
	m, ok := s.cfg.Model(model)
	switch {
	case !ok && d.Route.Model != "":
		return nil, pipeline.Refusal(apierr.Newf(apierr.ModelNotFound, "the model '%s', which this endpoint runs, is not served here", model),
			d.Spec.Refusals.NotFound)
	case !ok:
		return nil, apierr.Newf(apierr.NoChannelAvailable, "no %s model is configured", d.Spec.Name)
	}
	for _, ch := range s.cfg.ChannelsFor(m.ID) {
		if !slices.Contains(ch.Families, d.Spec.Name) {
			continue
		}
		rd, ok := s.vendors[ch.Vendor].(vendor.JobReader)
		if !ok {
			continue
		}
		q := map[string]string{}
		for k, vs := range r.URL.Query() {
			q[k] = vs[0]
		}
		body, _ := json.Marshal(q) // strings always marshal
		upstream, _ := ch.UpstreamModel(m.ID)
		out, err := rd.Read(r.Context(), &vendor.JobRequest{Family: d.Spec.Name, Operation: op, Channel: ch.Name,
			Model: vendor.JobModel{ID: m.ID, Upstream: upstream, Settings: m.FamilySettings(), Tiers: m.Price.Tiers()},
			Body:  body, RequestID: requestID(r)})
		if err != nil {
			if errors.Is(err, vendor.ErrNoJobs) {
				continue
			}
			return nil, apierr.New(apierr.UpstreamUnreachable, "the upstream could not be reached")
		}
		if e := out.Error; e != nil && e.Code != "" {
			ae := apierr.New(e.Code, e.Message) // the family's own refusal (a bad query, an operator's file)
			if e.Status != 0 {
				ae.Status = e.Status
			}
			return nil, ae
		} else if e != nil {
			return nil, apierr.FromUpstream(e.Status, e.Message)
		}
		return out, nil
	}
	return nil, apierr.Newf(apierr.NoChannelAvailable, "no channel of the model '%s' answers this route", m.ID)
}

// serveJob runs a family's create through the job chain. A multipart body
// is left unread: the job stage streams its files to the file store, once
// the key is known, as other bodies are read.
func (s *Server) serveJob(decls []pipeline.JobRoute, linkBase func() string) http.HandlerFunc {
	first := decls[0].Route
	limit := first.MaxBody
	if limit <= 0 {
		limit = MaxChatBody
	}
	return func(w http.ResponseWriter, r *http.Request) {
		c := &pipeline.Call{
			ID: requestID(r), Start: s.now(), Kind: pipeline.KindJob, Protocol: protocol.OpenAIChat,
			Billed: true, Request: r, Pattern: r.Pattern,
			Job: &pipeline.Job{Routes: decls},
		}
		c.W = s.writer(c, w)
		if linkBase != nil {
			c.Job.LinkBase = linkBase()
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" && first.Multipart {
			if r.ContentLength > limit {
				c.BodyErr = tooLarge(limit)
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			s.chains.Run(r.Context(), c)
			return
		}
		s.runWithBody(w, r, c, limit)
	}
}
