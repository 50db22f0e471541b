#!/usr/bin/env bash
# Installs PostgreSQL's server binaries (Debian's postgresql package) for the
# tests that start a throwaway cluster (grants/sqlkind/sqllive: initdb and pg_ctl,
# run as the user nobody when the tests run as root).
#
# Idempotent and quiet: it does nothing when initdb and pg_ctl are already
# there (under /usr/lib/postgresql/*/bin or on PATH). Otherwise it runs
# apt-get update and apt-get install -y postgresql, telling the package not
# to create (or start) a default cluster: the tests make their own. On
# failure it prints apt-get's output and exits non-zero.
#
#   integration/postgres-install.sh
set -euo pipefail

have_pg() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then
			return 0
		fi
	done
	command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1
}

if have_pg; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "integration/postgres-install.sh: PostgreSQL is missing and apt-get is not available; install the PostgreSQL server (initdb, pg_ctl) another way" >&2
	exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "integration/postgres-install.sh: installing PostgreSQL needs root (or sudo)" >&2
		exit 1
	fi
	sudo=(sudo)
fi

echo "integration/postgres-install.sh: installing postgresql with apt-get"
# No default cluster: postgresql-common reads createcluster.d at install.
"${sudo[@]}" mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" | "${sudo[@]}" tee /etc/postgresql-common/createcluster.d/heddle-tests.conf >/dev/null

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q)
if ! { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends postgresql; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "integration/postgres-install.sh: apt-get failed" >&2
	exit 1
fi
if ! have_pg; then
	cat "$log" >&2
	echo "integration/postgres-install.sh: postgresql was installed but initdb and pg_ctl were not found" >&2
	exit 1
fi
