#!/bin/sh
# Installs the pinned agents and SDKs (e2e/agents/package-lock.json) into
# .e2e/node with npm ci; skipped when that lock is already installed.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dst="$root/.e2e/node"
src="$root/e2e/agents"
command -v npm >/dev/null || { echo "e2e-agents needs node and npm (node 22 or later recommended)" >&2; exit 1; }
mkdir -p "$dst"
if cmp -s "$src/package-lock.json" "$dst/package-lock.json" && [ -x "$dst/node_modules/.bin/claude" ] && [ -x "$dst/node_modules/.bin/codex" ]; then
	exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dst/"
# Claude Code's postinstall links its native binary into place.
npm ci --prefix "$dst" --no-audit --no-fund --loglevel=error
