// Command heddle compiles agent artifacts against a deployment and runs
// them. See 'heddle help' and docs/getting-started.md.
package main

import (
	"os"

	"github.com/heddlehq/heddle/heddlecmd"
)

func main() { os.Exit(heddlecmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
