// Command count reads the record of a `go test -json` run (gotestsum
// --jsonfile) and fails when a kind of test CI requires passed zero
// times, or a test of a kind skipped (.ci/run runs it after make test).
//
//	go run ./internal/testkind/count [-require postgres,plugins,...] FILE
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/tollgate-gw/tollgate/internal/testkind"
)

func main() {
	var req []string
	for _, k := range testkind.Required {
		req = append(req, string(k))
	}
	require := flag.String("require", strings.Join(req, ","), "the kinds that must have passed at least once (comma-separated)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: count [-require kinds] FILE (a go test -json record)")
		os.Exit(2)
	}
	os.Exit(run(flag.Arg(0), *require))
}

func run(path, require string) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer f.Close()
	rep, err := testkind.Count(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		return 2
	}
	var kinds []testkind.Kind
	for _, k := range strings.Split(require, ",") {
		if k = strings.TrimSpace(k); k != "" {
			kinds = append(kinds, testkind.Kind(k))
		}
	}
	fmt.Print(rep.Summary())
	problems := rep.Problems(kinds)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "test kinds: "+p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}
