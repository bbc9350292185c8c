package sim

import (
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The technical view's kind of a family's rows (the spec's video, image,
// music, audio or null) is what each family's billing says: the kind of
// its unit type where the spec names one, else none.
func TestLogKindOfEveryCreateRoute(t *testing.T) {
	kinds := map[string]string{"image": "image", "video": "video", "music": "music", "audio": "audio"}
	for _, s := range Specs() {
		for i := range s.Routes {
			rt := &s.Routes[i]
			if rt.Kind != vendor.RouteCreate {
				continue
			}
			b := s.BillingOf(rt)
			if b.LogKind != kinds[b.UnitType] {
				t.Errorf("%s %s %s: unit type %q logs kind %q, want %q", s.Name, rt.Method, rt.Path, b.UnitType, b.LogKind, kinds[b.UnitType])
			}
		}
	}
}
