// Command heddle compiles agent artifacts against a deployment and runs
// them, with the built-in grant kinds and no operation of any application:
// an artifact granting a use case needs a worker of its own that registers
// it (docs/embedding.md). See 'heddle help' and docs/getting-started.md.
package main

import "github.com/heddlehq/heddle/heddlecmd"

func main() { heddlecmd.Main() }
