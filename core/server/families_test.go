package server

import (
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/plugins/family/video"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// Families that declare a route alike share it (one registration, every
// family on it); a family that declares it differently is refused, both
// named.
func TestGroupRoutes(t *testing.T) {
	v := video.Spec()
	clip := video.Spec()
	clip.Name, clip.PriceUnit = "clip", "per_call"
	groups, err := GroupRoutes([]*vendor.FamilySpec{&v, &clip})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != len(v.Routes) {
		t.Fatalf("%d groups for %d routes", len(groups), len(v.Routes))
	}
	for _, g := range groups {
		if len(g.decls) != 2 || g.decls[0].Spec.Name != "video" || g.decls[1].Spec.Name != "clip" {
			t.Fatalf("%s %s: %+v", g.method, g.path, g.decls)
		}
	}
	bad := video.Spec()
	bad.Name = "motion"
	bad.Routes[0].Async = vendor.AsyncField
	_, err = GroupRoutes([]*vendor.FamilySpec{&v, &bad})
	if err == nil || !strings.Contains(err.Error(), "video") || !strings.Contains(err.Error(), "motion") ||
		!strings.Contains(err.Error(), "POST /v1/videos/generations") {
		t.Fatalf("a conflict: %v", err)
	}
}
