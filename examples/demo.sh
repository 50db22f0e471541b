#!/usr/bin/env bash
# The shipped example, end to end: what `make demo` runs once `make build`
# has built bin/. It builds the example SQLite database, starts the example
# remote agent on 127.0.0.1:8091 (and stops it when it ends, however it
# ends), and has the example application's worker compile the shipped
# configuration, open the runtime, show what each agent may use, make one
# call of each kind of grant — an MCP tool, an SQL statement, a use case (as
# a caller with a tenant claim) and the remote agent — and print the
# dependency report. Each command is shown, as in a terminal, before what it
# prints.
set -euo pipefail
cd "$(dirname "$0")/.."

go run ./examples/warehouse -o examples/warehouse.db

echo '$ bin/heddle-example-agent &'
bin/heddle-example-agent &
agent=$!
trap 'kill "$agent" 2>/dev/null || true; wait "$agent" 2>/dev/null || true' EXIT
# It listens before it says so; wait (at most five seconds) until it does.
for _ in $(seq 100); do
	if ! kill -0 "$agent" 2>/dev/null; then
		echo "demo: the example agent did not start (is 127.0.0.1:8091 taken?)" >&2
		exit 1
	fi
	if (exec 3<>/dev/tcp/127.0.0.1/8091) 2>/dev/null; then
		break
	fi
	sleep 0.05
done

while IFS= read -r command; do
	echo "\$ $command"
	eval "$command" </dev/null
done <<'EOF'
bin/incidents-worker check
bin/incidents-worker tools incident-triage
bin/incidents-worker tools catalog-assistant
bin/incidents-worker call incident-triage search_runbooks --args '{"query":"disk"}'
bin/incidents-worker call incident-triage open_incidents --args '{"min_severity":4}'
bin/incidents-worker call incident-triage incidents_get_incident --args '{"id":"INC-1"}' --as alice --claim tenant=acme
bin/incidents-worker call incident-triage triage --args '{"message":"Disk full on db-replica-2"}'
bin/incidents-worker health
EOF
