package config

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/core/translate"
)

// checkTranslateFrom refuses a translate_from that no call could use: a
// client protocol it names reaches a model only through a chat channel
// that speaks that protocol, or one a translator from it reaches. Without
// this check such a model passes the start and fails every call with 503.
func (d *decoder) checkTranslateFrom(cfg *Config, at map[string]hcl.Range) {
	for i := range cfg.Models {
		m := &cfg.Models[i]
		r, ok := at[m.ID]
		if !ok {
			continue
		}
		where := fmt.Sprintf("model %q", m.ID)
		var spoken []string
		for j := range cfg.Channels {
			ch := &cfg.Channels[j]
			if ch.served(m.ID) && (len(ch.Families) == 0 || slices.Contains(ch.Families, "chat")) {
				spoken = append(spoken, ch.Protocols...)
			}
		}
		if len(spoken) == 0 {
			d.errorf(r, where, "translate_from: no chat channel serves this model, so nothing can be translated to it (list %q in a chat channel's models)", m.ID)
			continue
		}
		for _, from := range m.TranslateFrom {
			if !reachable(protocol.ID(from), spoken) {
				d.errorf(r, where, "translate_from: no channel of this model speaks %s or a protocol the gateway translates %s to (its channels speak %v)", from, from, spoken)
			}
		}
	}
}

func reachable(from protocol.ID, spoken []string) bool {
	for _, p := range spoken {
		if _, ok := translate.Lookup(from, protocol.ID(p)); ok || protocol.ID(p) == from {
			return true
		}
	}
	return false
}
