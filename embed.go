package heddle

import "embed"

// Example is the shipped example configuration — config/api.yaml and the
// artifacts under agents/ — embedded so that the example application's worker
// (examples/incidents/cmd/incidents-worker) runs on it from anywhere: it is
// the worker's heddlecmd.Options.Example, read when --config is not given and
// ./config/api.yaml does not exist. The stock heddle command has no such copy.
//
//go:embed config/api.yaml agents
var Example embed.FS
