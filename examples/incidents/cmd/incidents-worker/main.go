// Command incidents-worker is the heddle command of the example application:
// the stock command with the operations of examples/incidents registered, so
// that the shipped example's grant of incidents.get_incident compiles and
// runs, and with the shipped example configuration (heddle.Example) read when
// --config is not given and ./config/api.yaml does not exist.
//
//	make build
//	bin/incidents-worker check
//	bin/incidents-worker call incident-triage incidents_get_incident --args '{"id":"INC-1"}' --as alice --claim tenant=acme
//
// Its commands, flags, output and exit codes are heddle's.
package main

import (
	"os"

	"github.com/heddlehq/heddle"
	"github.com/heddlehq/heddle/heddlecmd"

	// The example application's operations register themselves.
	_ "github.com/heddlehq/heddle/examples/incidents"
)

func main() {
	os.Exit(heddlecmd.Run(os.Args[1:], os.Stdout, os.Stderr, heddlecmd.Options{Example: heddle.Example}))
}
