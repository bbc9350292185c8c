package server

import (
	"context"
	"net/http"

	"github.com/tollgate-gw/tollgate/core/files"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/tasksapi"
	"github.com/tollgate-gw/tollgate/pipeline"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// family registers the routes a family's plugins declared: creates run
// through the job chain, polls and lists through the read chain.
func (s *Server) family(spec *vendor.FamilySpec, tlsDomains []string) {
	for _, rt := range spec.Routes {
		var kind pipeline.Kind
		var h http.HandlerFunc
		switch rt.Kind {
		case vendor.RouteCreate:
			kind, h = pipeline.KindJob, s.serveJob(spec, rt, tlsDomains)
		case vendor.RoutePoll:
			kind, h = pipeline.KindRead, s.read(taskHandler(s.tasks.Poll(spec)), readOpts{})
		case vendor.RouteList:
			kind, h = pipeline.KindRead, s.read(taskHandler(s.tasks.List(spec)), readOpts{})
		default:
			s.log.Warn("a family route of unknown kind is not served", "family", spec.Name, "path", rt.Path, "kind", rt.Kind)
			continue
		}
		s.handle(rt.Method, rt.Path, kind, h)
		s.routes[len(s.routes)-1].Family = spec.Name
	}
}

func taskHandler(h tasksapi.Handler) readHandler {
	return func(_ context.Context, c *pipeline.Call) error {
		return h(c.W, c.Request, c.Key)
	}
}

// serveJob runs a family's create through the job chain.
func (s *Server) serveJob(spec *vendor.FamilySpec, rt vendor.FamilyRoute, tlsDomains []string) http.HandlerFunc {
	limit := rt.MaxBody
	if limit <= 0 {
		limit = MaxChatBody
	}
	return func(w http.ResponseWriter, r *http.Request) {
		c := &pipeline.Call{
			ID: requestID(r), Start: s.now(), Kind: pipeline.KindJob, Protocol: protocol.OpenAIChat,
			Billed: true, Request: r, W: pipeline.NewResponseWriter(w), Pattern: r.Pattern,
			Job: &pipeline.Job{Spec: spec, Route: rt, LinkBase: files.BaseURL(s.cfg.Server.PublicURL, tlsDomains, r)},
		}
		body, err := readBody(w, r, limit)
		if err != nil {
			c.BodyErr = err // the chain still runs: a known key gets its rejected row
		}
		c.Body = body
		s.chains.Run(r.Context(), c)
	}
}
