// Command ticketworker is heddle with a capability kind of its own, ticket,
// built from outside heddle's repository with nothing but its public
// packages.
package main

import (
	"os"

	"example.com/ticketworker/ticket"
	"example.com/ticketworker/ticket/ticketlive"
	"github.com/heddlehq/heddle/builtin"
	"github.com/heddlehq/heddle/heddlecmd"
)

func main() {
	kinds := builtin.Default().With(builtin.Kind{Config: ticket.Kind{}, Live: ticketlive.Kind{}})
	os.Exit(heddlecmd.Run(os.Args[1:], os.Stdout, os.Stderr, heddlecmd.Options{Kinds: kinds}))
}
