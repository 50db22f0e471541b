#!/usr/bin/env bash
# Captures the tool lists of the shipped example's agents, incident-triage
# and catalog-assistant, as the real runtime gives them (`heddle tools
# AGENT --format json` of the example's worker, with its servers, its
# warehouse, its use case and its remote agent running), into
# modelfmt/testdata/tools/AGENT.json. modelfmt's golden tests render them;
# after running this, `go test ./modelfmt -update` rewrites the goldens.
#
#   make build && modelfmt/testdata/tools/capture-example.sh
#
# The example agent listens on 127.0.0.1:8091, which the docs' tests use
# too: the lock they take is taken here.
set -euo pipefail
cd "$(dirname "$0")/../../.."
exec 9>/tmp/heddle-docs.lock
flock 9

go run ./examples/warehouse -o examples/warehouse.db
bin/heddle-example-agent 2>/dev/null &
agent=$!
trap 'kill "$agent" 2>/dev/null || true; wait "$agent" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	if (exec 3<>/dev/tcp/127.0.0.1/8091) 2>/dev/null; then
		break
	fi
	sleep 0.05
done
for a in incident-triage catalog-assistant; do
	bin/incidents-worker tools "$a" --format json >"modelfmt/testdata/tools/$a.json"
done
