// Package layering holds the import rules of docs/architecture.md: each
// package sits on a level and imports only packages of its own level or
// below (and never a sibling it has no business with). The test reads the
// real import graph with `go list`.
package layering

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tollgate-gw/tollgate/"

// Levels, lowest first. A package may import its own level and those
// below; foundation packages never import the pipeline, the store,
// plugins or the server.
const (
	foundation    = iota // pure data and codecs: money, errors, codecs, config
	pluginAPI            // the plugin boundary: public types, protocol, family rules
	plugins              // vendor implementations, run in plugin processes
	storage              // the store's roles and backends
	services             // core services over the store: tasks, files, logs, admin, plugin host
	pipelineLevel        // the chain of stages
	edge                 // the HTTP server
	root                 // composition root and binaries
	free                 // test helpers, examples: anything
)

var names = []string{"foundation", "plugin API", "plugins", "storage", "services", "pipeline", "edge", "root", "free"}

// levelOf maps a package (path inside the module) to its level; the
// longest matching prefix wins.
var levelOf = map[string]int{
	"core/money": foundation, "core/apierr": foundation, "core/protocol": foundation,
	"core/sse": foundation, "core/jsonw": foundation, "core/keys": foundation,
	"core/codec": foundation, "core/translate": foundation, "core/config": foundation,
	"core/ratelimit": foundation, "core/redact": foundation, "core/routes": foundation,
	"core/english": foundation,
	"docs":         foundation, // the embedded documentation
	"core/tracing": foundation, "core/netguard": foundation, "core/loglimit": foundation,

	"plugins/vendor": pluginAPI, "proto/": pluginAPI, "plugins/family": pluginAPI,

	"plugins/": plugins,

	"store": storage, "store/pgstore": storage,

	"core/files": services, "core/tasks": services, "core/tasksapi": services,
	"core/logsapi": services, "core/admin": services, "core/billingcompat": services,
	"plugins/host": services, "core/kb": services, "core/kbapi": services, "core/users": services,
	"core/billing": services,

	"pipeline":    pipelineLevel,
	"core/server": edge, "core/metrics": edge, "core/tlsserve": edge, "core/console": edge,
	"core/gateway": root, "cmd/": root,

	"internal/": free, "examples/": free,
	// Test and benchmark tooling.
	"cmd/tollgate-bench": free, "cmd/tollgate-soak": free, "cmd/tollgate-upstream": free, "cmd/tollgate-plugin-testcrash": free,
	"plugins/httpvendor/httpvendortest": free,
}

func level(pkg string) (int, bool) {
	best, lvl := -1, 0
	for prefix, l := range levelOf {
		match := pkg == prefix || strings.HasPrefix(pkg, strings.TrimSuffix(prefix, "/")+"/")
		if match && len(prefix) > best {
			best, lvl = len(prefix), l
		}
	}
	return lvl, best >= 0
}

// plugins may use the HTTP machinery and conformance helpers beside them,
// but one vendor never imports another vendor's package.
func allowedSibling(from, to string) bool {
	shared := []string{"plugins/httpvendor", "plugins/conformance"}
	for _, s := range shared {
		if to == s || strings.HasPrefix(to, s+"/") {
			return true
		}
	}
	return strings.HasPrefix(to, from+"/")
}

type pkgInfo struct {
	ImportPath string
	Imports    []string
}

func TestLayering(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var problems []string
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, module)
		lf, ok := level(from)
		if !ok {
			problems = append(problems, from+": no level (add it to levelOf and docs/architecture.md)")
			continue
		}
		if lf == free {
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := strings.TrimPrefix(imp, module)
			lt, _ := level(to)
			switch {
			case lt > lf:
				problems = append(problems, from+" ("+names[lf]+") imports "+to+" ("+names[lt]+")")
			case lf == plugins && lt == plugins && !allowedSibling(from, to):
				problems = append(problems, from+" imports another vendor's package "+to)
			case lt == free:
				problems = append(problems, from+" imports "+to+", a test helper")
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}
