#!/usr/bin/env bash
# Runs every Fuzz target of the repository for a bounded number of inputs
# each. A count (Nx), not a duration: with -fuzztime as a duration Go's
# fuzz coordinator can report a spurious "context deadline exceeded" when
# the deadline meets a busy worker (golang/go#75804, fixed in Go 1.27).
set -euo pipefail
t=${1:-2000x}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort -u); do
    echo "fuzz $pkg $f ($t)"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
  done
done
