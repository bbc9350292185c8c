package openaicompat_test

import (
	"strconv"
	"testing"

	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/openaicompat"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestSim(t *testing.T) {
	vt.CheckSim(t, vt.SimCase{New: func() vendor.Vendor { return openaicompat.New() }, Protocol: "openai_chat", Model: "llama3.1:8b",
		Body: func(prompt string, stream bool) []byte {
			return []byte(`{"model":"llama3.1:8b","stream":` + strconv.FormatBool(stream) +
				`,"messages":[{"role":"user","content":` + strconv.Quote(prompt) + `}]}`)
		}})
}
