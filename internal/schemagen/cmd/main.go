// Command cmd writes schema/api.schema.json and schema/agent.schema.json,
// the JSON Schemas of api.yaml and agent.yaml, from the Go types heddle's
// loader decodes into (package schemagen). `make docs` runs it:
//
//	go run ./internal/schemagen/cmd          # at the module root
//	go run ./internal/schemagen/cmd -root DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heddlehq/heddle/internal/schemagen"
)

func main() {
	root := flag.String("root", ".", "the module root")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintf(os.Stderr, "schemagen: %v\n", err)
		os.Exit(1)
	}
}

func write(root string) error {
	api, agent, err := schemagen.Generate(root)
	if err != nil {
		return err
	}
	for file, data := range map[string][]byte{schemagen.APIFile: api, schemagen.AgentFile: agent} {
		path := filepath.Join(root, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
