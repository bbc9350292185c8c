package pipeline

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/codec"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/store"
)

// allowlist reads the body by the client protocol's rules, resolves the
// model in the registry, then checks the key's allowlist (registry first:
// an unknown model is model_not_found even for a restricted key).
type allowlistStage struct {
	cfg    *config.Config
	files  FileHost
	routes map[string]string // family -> the route that serves it
}

func newAllowlist(d *Deps, _ map[string]string) (Stage, error) {
	return &allowlistStage{cfg: d.Config, files: d.Files, routes: familyRoutes(d.Families)}, nil
}

func (s *allowlistStage) Name() string { return "allowlist" }

func (s *allowlistStage) Serve(ctx context.Context, c *Call) error {
	if c.Job != nil {
		return s.admitJob(ctx, c)
	}
	if c.BodyErr != nil {
		return c.BodyErr
	}
	if c.Protocol == protocol.AnthropicMessages {
		if err := CheckAnthropicVersion(c.Request.Header.Get("Anthropic-Version")); err != nil {
			return err
		}
	}
	c.Codec = codec.For(c.Protocol)
	if c.Codec == nil {
		return apierr.Newf(apierr.InternalError, "no codec for protocol %s", c.Protocol)
	}
	req, err := c.Codec.Inspect(c.Body)
	if err != nil {
		return err
	}
	c.Req, c.own.inspected = req, c.Body
	if req.PreviousResponseID {
		return apierr.New(apierr.InvalidRequest, "previous_response_id is not supported: conversation state is not stored, so send the full history in input on every turn")
	}
	if req.Model != "" {
		c.ModelID = req.Model
	}
	c.Stream = req.Stream || c.StreamPath
	if c.ModelID == "" {
		return apierr.New(apierr.InvalidRequest, "model is required")
	}
	m, ok := s.cfg.Model(c.ModelID)
	if !ok {
		return UnknownModel(s.cfg, c.Key, c.ModelID)
	}
	c.Model = m
	if !Allowed(c.Key, m) {
		return apierr.Newf(apierr.ModelNotAllowed, "this key is not allowed to use the model '%s'", c.ModelID)
	}
	if m.Family != "" && m.Family != config.DefaultFamily {
		return otherFamily(s.routes, c.ModelID, m, []string{config.DefaultFamily})
	}
	return nil
}

// CheckAnthropicVersion accepts the messages protocol's version header as
// the vendor's API does: required on raw calls, a date from 2023-06-01 on
// (the official clients send 2023-06-01).
func CheckAnthropicVersion(v string) error {
	if v == "" {
		return apierr.New(apierr.InvalidRequest, "anthropic-version: header is required (use 2023-06-01)")
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil || d.Before(firstAnthropicVersion) {
		return apierr.Newf(apierr.InvalidRequest, "anthropic-version: %q is not a valid version (use 2023-06-01)", v)
	}
	return nil
}

var firstAnthropicVersion = time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC)

// Allowed reports whether k may use m (by its id or any alias).
func Allowed(k *store.Key, m *config.Model) bool {
	if k == nil || !k.RestrictModels {
		return true
	}
	for _, id := range k.AllowedModels {
		if id == m.ID {
			return true
		}
		for _, a := range m.Aliases {
			if id == a {
				return true
			}
		}
	}
	return false
}
