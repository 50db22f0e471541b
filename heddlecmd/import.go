package heddlecmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/heddlehq/heddle/diag"
)

// importCmd is heddle import FILE: it reads an MCP host's server list and
// prints ai.mcp_servers entries on stdout, as YAML (or, with --format json,
// with the secrets and notes beside them). The secrets to store and the
// notes go to stderr; no credential's value is printed anywhere.
func (e *invocation) importCmd(args []string) int {
	pos, err := e.parseCommand("import", args, 1, 1, nil)
	if err != nil {
		return e.usageError(err)
	}
	data, err := readImport(pos[0])
	if err != nil {
		e.printFailure(err)
		return ExitFail
	}
	im, ds := importServers(data)
	if ds.HasErrors() {
		if e.g.format == "json" {
			writeJSON(e.stdout, toJSON(ds))
		} else {
			printDiagnostics(e.stderr, ds)
			fmt.Fprintf(e.stderr, "%s: %s\n", pos[0], plural(len(ds.Errors()), "error"))
		}
		return ExitFail
	}
	if e.g.format == "json" {
		writeJSON(e.stdout, im)
		return ExitOK
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	doc := map[string]any{"ai": map[string]any{"mcp_servers": im.Servers}}
	if len(im.Servers) == 0 {
		doc = map[string]any{"ai": map[string]any{"mcp_servers": map[string]any{}}}
	}
	if err := enc.Encode(doc); err != nil {
		e.printFailure(diag.Wrap(diag.ConfigValueInvalid, err, "%s: the entries cannot be written as YAML", pos[0]))
		return ExitFail
	}
	_, _ = e.stdout.Write(b.Bytes())
	for _, n := range im.Notes {
		fmt.Fprintf(e.stderr, "heddle: note: %s\n", n)
	}
	for _, s := range im.Secrets {
		fmt.Fprintf(e.stderr, "heddle: store %s at %s\n", s.What, s.Path)
	}
	fmt.Fprintf(e.stderr, "heddle: %s imported from %s; paste them under ai: in %s", plural(len(im.Servers), "server"), pos[0], e.g.config)
	if len(im.Secrets) > 0 {
		fmt.Fprintf(e.stderr, " and store %s before heddle serve", plural(len(im.Secrets), "secret"))
	}
	fmt.Fprintln(e.stderr)
	return ExitOK
}

// readImport reads the host's file, at most maxImportBytes of it.
func readImport(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, diag.Wrap(diag.ConfigParse, err, "cannot read %s: %v", name, pathReason(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxImportBytes+1))
	if err != nil {
		return nil, diag.Wrap(diag.ConfigParse, err, "cannot read %s: %v", name, pathReason(err))
	}
	if len(data) > maxImportBytes {
		return nil, diag.New(diag.ConfigLimit, "%s is over %d bytes (1 MiB): an MCP host's server list is a few kilobytes", name, maxImportBytes)
	}
	return data, nil
}

// pathReason is err without the path a *fs.PathError repeats.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
