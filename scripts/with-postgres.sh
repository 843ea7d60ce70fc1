#!/usr/bin/env bash
# Runs CMD [ARGS...] with a throwaway PostgreSQL cluster (docs/LEDGER.md):
#   initdb in a temporary directory, the server on a Unix socket there (no TCP port), trust
#   authentication; exports DATABASE_URL (a libpq URI for the socket), PGHOST, PGUSER,
#   PGDATABASE and PGDATA for it, runs the command, stops the server, removes the directory,
#   and exits with the command's status.
# PostgreSQL refuses to run as root: started as root, the script runs the server as the
# `postgres` user (runuser); otherwise as the caller. For tests that restart or stop the server,
# it also exports CLAMPAI_PG_BINDIR and CLAMPAI_PG_AS (the command prefix that runs as the
# server's user, empty when that is the caller): `$CLAMPAI_PG_AS "$CLAMPAI_PG_BINDIR/pg_ctl" -D
# "$PGDATA" -w restart`.
# PG_BINDIR overrides where initdb and pg_ctl are found; PG_SERVER_OPTIONS adds server options
# (e.g. "-c synchronous_commit=off" for a benchmark).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: with-postgres.sh CMD [ARGS...]" >&2
  exit 2
fi

bindir="${PG_BINDIR:-}"
if [[ -z "$bindir" ]]; then
  if command -v pg_config >/dev/null 2>&1 && [[ -x "$(pg_config --bindir)/initdb" ]]; then
    bindir="$(pg_config --bindir)"
  else
    bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  fi
fi
if [[ -z "$bindir" || ! -x "$bindir/initdb" || ! -x "$bindir/pg_ctl" ]]; then
  echo "with-postgres.sh: initdb and pg_ctl not found (install Debian's postgresql, or set" \
    "PG_BINDIR)" >&2
  exit 2
fi

as=()
if [[ $(id -u) -eq 0 ]]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "with-postgres.sh: started as root, but there is no \`postgres\` user to run the" \
      "server as" >&2
    exit 2
  fi
  as=(runuser -u postgres --)
fi

dir="$(mktemp -d "${TMPDIR:-/tmp}/clampai-pg.XXXXXX")"
[[ ${#as[@]} -eq 0 ]] || chown postgres "$dir"
chmod 0700 "$dir"

stop() {
  "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

if ! "${as[@]}" "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
  --no-sync >"$dir/initdb.log" 2>&1; then
  cat "$dir/initdb.log" >&2
  echo "with-postgres.sh: initdb failed" >&2
  exit 2
fi
if ! "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses='' -k $dir -c max_connections=64 ${PG_SERVER_OPTIONS:-}" start >/dev/null; then
  cat "$dir/server.log" >&2
  echo "with-postgres.sh: the server did not start" >&2
  exit 2
fi

export DATABASE_URL="postgresql:///postgres?host=$dir&user=postgres"
export PGHOST="$dir" PGUSER=postgres PGDATABASE=postgres PGDATA="$dir/data"
export CLAMPAI_PG_BINDIR="$bindir" CLAMPAI_PG_AS="${as[*]}"

status=0
"$@" || status=$?
exit "$status"
