package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/billing"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/console"
	"github.com/tollgate-gw/tollgate/core/kbapi"
	"github.com/tollgate-gw/tollgate/core/metrics"
	"github.com/tollgate-gw/tollgate/core/routes"
	"github.com/tollgate-gw/tollgate/core/server"
	"github.com/tollgate-gw/tollgate/core/users"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// docs/reference.md is the one reference for every endpoint. This test
// holds it to the route table of every listener: the API's (server.New),
// the admin API's (admin.NewHandler, on the API's listener or on
// admin_listen), the console's (console { listen }) and the operations
// listener's (metrics_listen: /metrics). Every route served has a section, every section is served, and every section says
// what a reader needs. Adding a route? Add to docs/reference.md:
//
//	### `METHOD /path/{param}`
//
//	What it does.
//
//	- Auth: ...
//	- Bills: ...
//	- Errors: ...
//
// (admin routes: Body, Answer, Errors). Routes registered in server.New and
// admin.NewHandler are seen here, and so are optional mounts: every
// handler field of server.Options is set below. A route served by
// something this test does not build must be added to mounted.
var mounted []routeTable

type routeTable interface{ Patterns() []string }

// A section heading names one or more routes: ### `GET /a`, `GET /b`.
var (
	headingRe = regexp.MustCompile("^### (.*)$")
	routeRe   = regexp.MustCompile("`([A-Z]+) (/[^`]*)`")
	paramRe   = regexp.MustCompile(`\{[^}]*\}`)
)

// fieldsOf are the lines each section must have.
var fieldsOf = map[string][]string{
	"public":     {"- Auth:", "- Bills:", "- Errors:"},
	"admin":      {"- Body:", "- Answer:", "- Errors:"},
	"console":    {"- Auth:", "- Answer:"},
	"operations": {"- Auth:", "- Bills:", "- Errors:"},
}

// The parts of docs/reference.md that hold route sections.
const (
	partPublic     = "Public API"
	partAdmin      = "Admin API"
	partConsole    = "Console"
	partOperations = "Operations listener"
)

type section struct {
	heading string
	routes  [][2]string // method, path
	text    string
	part    string
}

func TestReferenceCoversEveryRoute(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := parseReference(t, string(doc))
	srv, adm := fullServer(t)
	con := consoleRoutes(t)
	ops := metrics.New(metrics.Sources{}, hclog.NewNullLogger()).Routes()

	// Every section: served, and complete.
	covered := map[string]bool{}
	adminCovered := map[string]bool{}
	consoleCovered := map[string]bool{}
	opsCovered := map[string]bool{}
	for _, s := range sections {
		kind := map[string]string{partPublic: "public", partAdmin: "admin", partConsole: "console", partOperations: "operations"}[s.part]
		for _, f := range fieldsOf[kind] {
			if !strings.Contains(s.text, "\n"+f) {
				t.Errorf("docs/reference.md: %s lacks a %q line", s.heading, f)
			}
		}
		admin := s.part == partAdmin
		for _, r := range s.routes {
			method, path := r[0], paramRe.ReplaceAllString(r[1], "x1")
			if s.part == partOperations {
				p := ops.Match(method, path)
				if p == "" {
					t.Errorf("docs/reference.md documents %s %s, which the operations listener does not serve", r[0], r[1])
				}
				opsCovered[p] = true
				continue
			}
			if s.part == partConsole {
				cp := con.Match(method, path)
				if cp == "" || !strings.HasPrefix(r[1], "/console/") {
					t.Errorf("docs/reference.md documents %s %s, which the console does not serve", r[0], r[1])
				}
				consoleCovered[cp] = true
				covered[srv.Match(method, path)] = true
				continue
			}
			p := srv.Match(method, path)
			switch {
			case p == "":
				t.Errorf("docs/reference.md documents %s %s, which is not served", r[0], r[1])
			case admin != strings.HasPrefix(r[1], "/admin/v1/"):
				t.Errorf("docs/reference.md: %s %s is in the wrong part (admin routes go under ## Admin API)", r[0], r[1])
			case admin:
				covered[p] = true
				ap := adm.Match(method, path)
				if ap == "" {
					t.Errorf("docs/reference.md documents %s %s, which the admin API does not serve", r[0], r[1])
				}
				adminCovered[ap] = true
			default:
				covered[p] = true
			}
		}
	}

	// Every route: documented.
	check := func(table string, patterns []string, seen map[string]bool) {
		for _, p := range patterns {
			if !seen[p] {
				t.Errorf("%s serves %q, but docs/reference.md has no section for it; add one:\n\n%s", table, p, template(p))
			}
		}
	}
	check("the server", srv.Patterns(), covered)
	check("the admin API", adm.Patterns(), adminCovered)
	check("the console", con.Patterns(), consoleCovered)
	check("the operations listener", ops.Patterns(), opsCovered)
	for _, m := range mounted {
		for _, p := range m.Patterns() {
			if !slices.ContainsFunc(sections, func(s section) bool { return strings.Contains(s.heading, strings.TrimSpace(p)) }) {
				t.Errorf("a mounted route %q has no section in docs/reference.md; add one:\n\n%s", p, template(p))
			}
		}
	}
}

// parseReference reads the sections of the "## Public API", "## Admin
// API", "## Console" and "## Operations listener" parts.
func parseReference(t *testing.T, doc string) []section {
	var out []section
	part := ""
	var cur *section
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			part = strings.TrimPrefix(line, "## ")
			cur = nil
			continue
		case headingRe.MatchString(line) && (part == partPublic || part == partAdmin || part == partConsole || part == partOperations):
			out = append(out, section{heading: line, part: part})
			cur = &out[len(out)-1]
			for _, m := range routeRe.FindAllStringSubmatch(line, -1) {
				cur.routes = append(cur.routes, [2]string{m[1], m[2]})
			}
			if len(cur.routes) == 0 {
				t.Errorf("docs/reference.md: heading %q names no route (want ### `METHOD /path`)", line)
			}
			continue
		}
		if cur != nil {
			cur.text += "\n" + line
		}
	}
	if len(out) < 20 {
		t.Fatalf("docs/reference.md: found %d sections; is the page there, with ## Public API and ## Admin API?", len(out))
	}
	return out
}

// template is the section to paste for a pattern.
func template(pattern string) string {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "ANY", pattern
	}
	last := "- Bills: what it charges, and whether it writes a log row"
	if strings.HasPrefix(path, "/admin/v1/") {
		last = "- Body: the JSON it takes\n    - Answer: status and JSON"
	}
	return fmt.Sprintf("    ### `%s %s`\n\n    What it does.\n\n    - Auth: the key forms it takes\n    %s\n    - Errors: status and code of each failure\n", method, path, last)
}

// consoleRoutes is the console's route table (handlers unused here).
func consoleRoutes(t *testing.T) *routes.Mux {
	t.Helper()
	c, err := console.New(console.Options{Config: config.Default(func(string) string { return "" })})
	if err != nil {
		t.Fatal(err)
	}
	return c.Routes()
}

// fullServer builds the server with every optional handler mounted, so
// each route it can serve is in its table.
func fullServer(t *testing.T) (*routes.Mux, *routes.Mux) {
	t.Helper()
	cfg := config.Default(func(string) string { return "" })
	log := hclog.NewNullLogger()
	adm := admin.NewHandler(admin.NewService(nil, nil, time.Now, config.DefaultSignupCredit), nil, "tok", log)
	// The knowledge base's routes, public and admin (handlers unused here).
	kb := new(kbapi.API)
	for _, rt := range kb.AdminRoutes() {
		adm.Handle(rt.Pattern, rt.Handler)
	}
	for _, rt := range new(users.Service).AdminRoutes() {
		adm.Handle(rt.Pattern, rt.Handler)
	}
	adm.TaskRoutes(nil)
	for _, rt := range new(billing.Service).AdminRoutes() {
		adm.Handle(rt.Pattern, rt.Handler)
	}
	o := server.Options{Config: cfg, Logger: log, Now: time.Now, Admin: adm, Knowledge: kb.Routes()}
	v := reflect.ValueOf(&o).Elem()
	handler := reflect.TypeFor[http.Handler]()
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.IsZero() || !f.CanSet() {
			continue
		}
		switch {
		case f.Kind() == reflect.Func:
			ft := f.Type()
			f.Set(reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value {
				out := make([]reflect.Value, ft.NumOut())
				for j := range out {
					out[j] = reflect.Zero(ft.Out(j))
				}
				return out
			}))
		case f.Type() == handler:
			f.Set(reflect.ValueOf(http.NotFoundHandler()))
		}
	}
	// The families' routes come from their plugins' Describe: sim serves
	// every family, so its specs hold every family route.
	d, err := sim.New(nil).Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Specs {
		o.Families = append(o.Families, &d.Specs[i])
	}
	return server.New(o).Routes(), adm.Routes()
}
