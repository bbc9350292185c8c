package gemini_test

import (
	"strconv"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/gemini"
	vt "github.com/tollgate-gw/tollgate/plugins/httpvendor/httpvendortest"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

func TestSim(t *testing.T) {
	vt.CheckSim(t, vt.SimCase{New: func() vendor.Vendor { return gemini.New() }, Protocol: "gemini_native",
		Model: "gemini-2.5-flash", Body: func(prompt string, _ bool) []byte {
			return []byte(`{"contents":[{"role":"user","parts":[{"text":` + strconv.Quote(prompt) + `}]}]}`)
		}})
}
