package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// familyWords are the literals of core/ and pipeline/ that equal a media
// family's name and are not about the family, by file (from the module's
// root) and literal, each with why it stays.
var familyWords = map[[2]string]string{
	{"core/codec/messages.go", "image"}:                       "an Anthropic content block's type",
	{"core/translate/anthropic_messages_request.go", "image"}: "an Anthropic content block's type",
	{"pipeline/agent.go", "image"}:                            "an Anthropic content block's type, in an agent's request",
	{"core/server/discovery.go", "image"}:                     "the catalog's tier unit of the price field per_image (price {} is the core's schema)",
	{"core/logsapi/params.go", "image"}:                       "the logs API's unit_type filter: the spec's closed vocabulary, valid whatever plugins run (rows outlive them)",
	{"core/logsapi/params.go", "video"}:                       "the logs API's unit_type filter (as above)",
	{"core/logsapi/params.go", "music"}:                       "the logs API's unit_type filter (as above)",
	{"core/logsapi/params.go", "voice"}:                       "the logs API's unit_type filter (as above)",
	{"core/logsapi/params.go", "avatar"}:                      "the logs API's unit_type filter (as above)",
	{"core/logsapi/params.go", "search"}:                      "the logs API's unit_type filter (as above)",
	{"core/logsapi/params.go", "transcript"}:                  "the logs API's unit_type filter (as above)",
	{"core/console/logs.go", "image"}:                         "the console's unit_type filter: the logs API's vocabulary",
	{"core/console/logs.go", "video"}:                         "the console's unit_type filter (as above)",
	{"core/console/logs.go", "music"}:                         "the console's unit_type filter (as above)",
	{"core/console/logs.go", "voice"}:                         "the console's unit_type filter (as above)",
	{"core/console/logs.go", "avatar"}:                        "the console's unit_type filter (as above)",
	{"core/console/logs.go", "search"}:                        "the console's unit_type filter (as above)",
	{"core/console/logs.go", "transcript"}:                    "the console's unit_type filter (as above)",
	{"core/config/default.go", "*"}:                           "the embedded default's models: configuration data, which names families as any config file does",
}

// No media family is named as logic in core/ or pipeline/: a family is a
// plugin on the family contract, and what the gateway needs to know of it
// (its routes, billing, catalog endpoint type, banner examples...) is in
// the FamilySpec its plugins describe. A family's name is the const Family
// of its package under plugins/family; a Go string literal equal to one
// fails here unless familyWords says why it is not about the family.
func TestNoFamilyNamesInCore(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	families := familyNames(t, filepath.Join(root, "plugins", "family"))
	if len(families) < 12 {
		t.Fatalf("found only the families %v under plugins/family", families)
	}
	used := map[[2]string]bool{}
	for _, dir := range []string{"core", "pipeline"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil || !slices.Contains(families, s) {
					return true
				}
				for _, k := range [][2]string{{rel, s}, {rel, "*"}} {
					if _, ok := familyWords[k]; ok {
						used[k] = true
						return true
					}
				}
				t.Errorf("%s: the family name %q as a literal: read what the family says of itself from its FamilySpec (plugins/vendor) instead", fset.Position(lit.Pos()), s)
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for k := range familyWords {
		if !used[k] {
			t.Errorf("familyWords allows %q in %s, which no longer has it: remove the entry", k[1], k[0])
		}
	}
}

// familyNames are the values of the const Family of each package under
// dir.
func familyNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.Name != "Family" || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil && !slices.Contains(out, s) {
							out = append(out, s)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
