#!/usr/bin/env bash
# Installs PostgreSQL from Debian's packages for the tests of floe's SQL catalogs on PostgreSQL
# (internal/pgtest starts a throwaway server on 127.0.0.1 on a free port for each test run and
# stops it). Idempotent: does nothing when an initdb is already there.
set -euo pipefail

if compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	echo "postgres: $(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1) already installed" >&2
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "postgres: not root; install Debian's postgresql package (apt-get install -y postgresql)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq postgresql >/dev/null
# The package starts a cluster of its own; the tests do not use it.
if command -v pg_ctlcluster >/dev/null; then
	for c in /etc/postgresql/*/main; do
		[[ -d "$c" ]] || continue
		v=$(basename "$(dirname "$c")")
		pg_ctlcluster "$v" main stop 2>/dev/null || true
	done
fi
ls -d /usr/lib/postgresql/*/bin/initdb >&2
