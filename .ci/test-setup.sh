#!/usr/bin/env bash
# What `make test` needs beyond Go, said before the tests start and set up
# when it can be: the PostgreSQL store tests (internal/testpg) start their
# own server from PostgreSQL's server binaries (initdb, postgres); the
# console's browser tests (internal/browser) drive headless Chromium.
set -euo pipefail
say() { echo "make test: $*"; }
root_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }
updated=
apt_install() {
  [ -n "$updated" ] || apt-get update -q
  updated=1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}
pg_found() {
  [ -n "${TOLLGATE_POSTGRES_BIN:-}" ] && [ -x "$TOLLGATE_POSTGRES_BIN/initdb" ] && return 0
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null
}
if pg_found; then
  say "PostgreSQL server binaries found; the store tests start their own server on 127.0.0.1"
elif root_apt; then
  say "no PostgreSQL server binaries: installing Debian's postgresql-15 (apt-get, once; about a minute)"
  apt_install postgresql-15
elif [ -n "${TOLLGATE_SKIP_POSTGRES:-}" ] && [ "${CI:-}" != true ]; then
  say "no PostgreSQL server binaries; TOLLGATE_SKIP_POSTGRES is set, so the PostgreSQL tests are skipped"
else
  cat >&2 <<'MSG'
make test: no PostgreSQL server binaries (initdb, postgres), and this is not root with apt-get to install them.
  Debian or Ubuntu:  sudo apt-get install postgresql-15
  macOS (Homebrew):  brew install postgresql@15, then TOLLGATE_POSTGRES_BIN=$(brew --prefix postgresql@15)/bin
  elsewhere:         set TOLLGATE_POSTGRES_BIN to the folder holding initdb and postgres
  or, on your own machine only, TOLLGATE_SKIP_POSTGRES=1 skips the PostgreSQL tests (CI never does).
MSG
  exit 1
fi

if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then
  say "a Chromium found for the console's browser tests"
elif root_apt; then
  say "no Chromium: installing Debian's chromium for the console's browser tests (apt-get, once)"
  apt_install chromium
elif [ "${CI:-}" = true ]; then
  say "no Chromium, and no root with apt-get to install it: the console's browser tests will fail (CI=true)" >&2
else
  say "no Chromium: the console's browser tests are skipped (install chromium, or Google Chrome, to run them)"
fi
