package heddle

import "embed"

// Example is the shipped example configuration — config/api.yaml and the
// artifacts under agents/ — embedded so that the heddle command runs on it
// from anywhere: when --config is not given and ./config/api.yaml does not
// exist, the command reads this copy.
//
//go:embed config/api.yaml agents
var Example embed.FS
