package integration

import (
	"math"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// The spec's pre-charge (Limits, billing rule 2) through the whole chain:
// the hold is ceil(bytes of messages / 4) input tokens plus the explicit
// max_tokens, or min(default_max_tokens, 32768) when omitted, and then the
// on-wire max_tokens is raised to the model's ceiling. The hold is read
// back from the row's technical view; the wire value from the upstream.
func TestPrechargeHoldAndWireMaxTokens(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	cfg := channelBlock("pc", up.URL, 0, "pc-big", "pc-small") + `
model "pc-big" {
  default_max_tokens = 40000
  max_output_tokens  = 64000
  price {
    input  = "1"
    output = "2"
  }
}
model "pc-small" {
  default_max_tokens = 1000
  price {
    input  = "1"
    output = "2"
  }
}
`
	g := startGateway(t, testgw.Options{Config: cfg})
	const prompt = "count the tokens of this prompt [sim:words=3]"
	messages := `[{"role":"user","content":"` + prompt + `"}]`
	inputEstimate := int64(math.Ceil(float64(len(messages)) / 4))
	perMillion := func(n, price int64) money.Nano { return money.Nano(n * price * 1000) } // price in credits per 1M tokens

	for _, tc := range []struct {
		desc, model, extra string
		holdOutput         int64 // output tokens the hold covers
		wire               int64 // max_tokens the upstream receives
	}{
		{"omitted, default above 32768: hold capped, wire raised to max_output_tokens", "pc-big", "", 32768, 64000},
		{"omitted, no max_output_tokens: hold and wire at default_max_tokens", "pc-small", "", 1000, 1000},
		{"explicit: hold and wire at the client's value", "pc-big", `"max_tokens":50`, 50, 50},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			w := newWallet(g)
			r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(w.key), `{"model":"`+tc.model+`","messages":`+messages+withExtra(tc.extra)+`}`)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			sent := lastTo(t, up, "/v1/chat/completions")
			got := gjson.GetBytes(sent.Body, "max_tokens")
			if !got.Exists() {
				got = gjson.GetBytes(sent.Body, "max_completion_tokens")
			}
			if got.Int() != tc.wire {
				t.Errorf("upstream max tokens %s, want %d: %s", got.Raw, tc.wire, sent.Body)
			}
			row := w.last(t, 1)
			id, _ := row["id"].(float64)
			view := do(t, "GET", g.URL+"/v1/logs/"+strconv.FormatInt(int64(id), 10), bearer(w.key), "")
			hold := ""
			for _, kv := range gjson.GetBytes(view.Body, "gateway").Array() {
				if kv.Get("k").String() == "hold" {
					hold = kv.Get("v").String()
				}
			}
			want := perMillion(inputEstimate, 1) + perMillion(tc.holdOutput, 2)
			if hold != want.String() {
				t.Errorf("hold %q, want %s (%d input, %d output tokens): %s", hold, want, inputEstimate, tc.holdOutput, view.Body)
			}
			w.settled(t, 1)
		})
	}
}

func withExtra(extra string) string {
	if extra == "" {
		return ""
	}
	return "," + extra
}
