package openai_test

import (
	"strconv"
	"testing"

	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/openai"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestSim(t *testing.T) {
	newV := func() vendor.Vendor { return openai.New() }
	t.Run("chat", func(t *testing.T) {
		vt.CheckSim(t, vt.SimCase{New: newV, Protocol: "openai_chat", Model: "gpt-4o-mini",
			Body: func(prompt string, stream bool) []byte {
				return []byte(`{"model":"gpt-4o-mini","stream":` + strconv.FormatBool(stream) +
					`,"messages":[{"role":"user","content":` + strconv.Quote(prompt) + `}]}`)
			}})
	})
	t.Run("responses", func(t *testing.T) {
		vt.CheckSim(t, vt.SimCase{New: newV, Protocol: "openai_responses", Model: "gpt-4o-mini",
			Body: func(prompt string, stream bool) []byte {
				return []byte(`{"model":"gpt-4o-mini","stream":` + strconv.FormatBool(stream) +
					`,"instructions":"","input":[{"role":"user","content":` + strconv.Quote(prompt) + `}]}`)
			}})
	})
}
