#!/usr/bin/env bash
# Installs what the fleet's tests run against, from Debian's packages:
# redis-server (the store serve.state kind redis shares) and haproxy (the
# load balancer in front of several workers). The tests start their own
# instances on 127.0.0.1 and stop them; the packages' own services are
# neither wanted nor started here.
#
# Idempotent and quiet: it does nothing when both are on PATH. Otherwise it
# runs apt-get update and apt-get install -y redis-server haproxy, with
# invoke-rc.d told not to start a service. On failure it prints apt-get's
# output and exits non-zero.
#
#   integration/fleet-install.sh
set -euo pipefail

if command -v redis-server >/dev/null 2>&1 && { command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]]; }; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "integration/fleet-install.sh: redis-server or haproxy is missing and apt-get is not available; install them another way" >&2
	exit 1
fi

log="$(mktemp)"
policy="$(mktemp -d)/policy-rc.d"
trap 'rm -f "$log" "$policy"' EXIT
# policy-rc.d exiting 101 tells Debian's maintainer scripts not to start
# the services they install.
printf '#!/bin/sh\nexit 101\n' >"$policy"
chmod +x "$policy"
sudo=""
if [[ "$(id -u)" != 0 ]]; then
	sudo="sudo"
fi
# One the machine has already is left as it is.
placed=""
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
	$sudo cp "$policy" /usr/sbin/policy-rc.d
	placed=1
fi
unplace() {
	if [[ -n "$placed" ]]; then
		$sudo rm -f /usr/sbin/policy-rc.d
	fi
}
if ! { DEBIAN_FRONTEND=noninteractive $sudo apt-get update -q &&
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends redis-server haproxy; } >"$log" 2>&1; then
	unplace
	cat "$log" >&2
	echo "integration/fleet-install.sh: apt-get install redis-server haproxy failed" >&2
	exit 1
fi
unplace
