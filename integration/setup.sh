#!/usr/bin/env bash
# Installs the npm packages the integration tests run against: `npm ci` in
# integration/ and in every directory under it that has its own
# package-lock.json (integration/a2a-echo, integration/conformance, …).
#
# Idempotent and quiet: a directory is installed only when its node_modules
# is missing or was installed from another lockfile (a hash of package.json
# and package-lock.json is kept in node_modules/.heddle-lock.sha256), and
# nothing is printed on success. On failure it prints npm's output and exits
# non-zero.
#
#   integration/setup.sh          # from anywhere
#   FORCE=1 integration/setup.sh  # reinstall even when up to date
set -euo pipefail
root="$(cd "$(dirname "$0")" && pwd)"

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "integration/setup.sh: $tool is not on PATH (node 20 or later, with npm, is needed)" >&2
		exit 1
	fi
done

sum() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum | cut -d' ' -f1
	else
		shasum -a 256 | cut -d' ' -f1
	fi
}

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# install DIR: npm ci in DIR unless its node_modules matches its lockfile.
install() {
	local dir=$1 stamp="$1/node_modules/.heddle-lock.sha256" want
	want="$(cat "$dir/package.json" "$dir/package-lock.json" | sum)"
	if [[ -z "${FORCE:-}" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		return 0
	fi
	# --no-audit/--no-fund: no extra registry round trips. None of the
	# packages needs an install script; --ignore-scripts keeps it that way.
	if ! npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=warn >"$log" 2>&1; then
		cat "$log" >&2
		echo "integration/setup.sh: npm ci failed in ${dir#"$root"/}" >&2
		exit 1
	fi
	echo "$want" >"$stamp"
}

install "$root"
for lock in "$root"/*/package-lock.json; do
	[[ -f "$lock" ]] || continue
	install "$(dirname "$lock")"
done
