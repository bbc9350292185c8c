// Package denylist is an example of an integrator's pipeline stage: it
// refuses prompts that contain a denied phrase, with the spec's error shape
// for the client's protocol, before any money is held.
//
// Wire it by registering the factory and naming it in the config:
//
//	reg := pipeline.NewRegistry()
//	reg.Register("prompt-denylist", denylist.New)
//
//	pipeline {
//	  stages = ["auth", "allowlist", "prompt-denylist", "idempotency",
//	            "precharge", "translate", "dispatch", "settle", "log"]
//	}
//	stage "prompt-denylist" {
//	  settings = { phrases = "secret project, internal only" }
//	}
package denylist

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/pipeline"
)

// Stage refuses a call whose body contains one of its phrases.
type Stage struct {
	phrases [][]byte // lower-case
}

// New builds the stage from its settings: `phrases`, comma-separated.
func New(_ *pipeline.Deps, settings map[string]string) (pipeline.Stage, error) {
	s := &Stage{}
	for _, p := range strings.Split(settings["phrases"], ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			s.phrases = append(s.phrases, []byte(p))
		}
	}
	if len(s.phrases) == 0 {
		return nil, errors.New(`settings.phrases is required: a comma-separated list of denied phrases`)
	}
	return s, nil
}

// Name is the stage's name in the config.
func (s *Stage) Name() string { return "prompt-denylist" }

// Serve looks for the phrases in the client's body, case-insensitively.
func (s *Stage) Serve(_ context.Context, c *pipeline.Call) error {
	body := bytes.ToLower(c.Body)
	for _, p := range s.phrases {
		if bytes.Contains(body, p) {
			return apierr.Newf(apierr.InvalidRequest, "the request contains a denied phrase (%q) and was refused", p)
		}
	}
	return nil
}

var _ pipeline.Stage = (*Stage)(nil)
