package pipeline

import (
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/english"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
	"github.com/tollgate-gw/tollgate/store"
)

// How a call's model is found, or why it is not: the errors name what a
// person can do next (the near ids, the endpoint that serves the model).

// chatRoute is where chat models are served (the other three protocols
// too; this is the one every client speaks).
const chatRoute = "POST /v1/chat/completions"

// UnknownModel is model_not_found for id, with the ids this key may use
// that are near it, and where the whole list is (GET /v1/models lists
// what the key may call, so only those are suggested).
func UnknownModel(cfg *config.Config, k *store.Key, id string) *apierr.Error {
	var ids []string
	for i := range cfg.Models {
		m := &cfg.Models[i]
		if Allowed(k, m) {
			ids = append(append(ids, m.ID), m.Aliases...)
		}
	}
	msg := "the model '" + id + "' does not exist; "
	if near := config.Nearest(id, ids, 3); len(near) > 0 {
		msg += "did you mean '" + strings.Join(near, "' or '") + "'? "
	}
	return apierr.New(apierr.ModelNotFound, msg+"GET /v1/models lists the models this key can call")
}

// familyRoutes maps each family to the route that creates its calls,
// from the families the plugins describe, and each model a route implies
// (avatar registration's) to that route, under "model:" and its id.
func familyRoutes(specs []*vendor.FamilySpec) map[string]string {
	out := map[string]string{config.DefaultFamily: chatRoute}
	for _, sp := range specs {
		for _, rt := range sp.Routes {
			if rt.Kind != vendor.RouteCreate {
				continue
			}
			if rt.Model != "" {
				out["model:"+rt.Model] = rt.Method + " " + rt.Path
			} else if _, ok := out[sp.Name]; !ok {
				out[sp.Name] = rt.Method + " " + rt.Path
			}
		}
	}
	return out
}

// otherFamily is the spec's 503 no_channel_available for a model of
// another family than the endpoint's (which serves the families here),
// naming the endpoint that serves it.
func otherFamily(routes map[string]string, id string, m *config.Model, here []string) *apierr.Error {
	fam := m.Family
	if fam == "" {
		fam = config.DefaultFamily
	}
	msg := "the model '" + id + "' is " + english.A(fam+" model") + " and has no channel on this endpoint (it serves " +
		strings.Join(here, ", ") + " models)"
	if rt := routes["model:"+m.ID]; rt != "" {
		msg += "; call it with " + rt
	} else if rt := routes[fam]; rt != "" {
		msg += "; call it with " + rt
	}
	return apierr.New(apierr.NoChannelAvailable, msg)
}
