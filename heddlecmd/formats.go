package heddlecmd

import (
	"flag"
	"fmt"
	"slices"

	"github.com/heddlehq/heddle/modelfmt"
	"github.com/heddlehq/heddle/runtime"
)

// toolFormats are the values of heddle tools' --format: text and json,
// and the model APIs' own tool definitions (modelfmt).
var toolFormats = func() []string {
	out := slices.Clone(formats)
	for _, f := range modelfmt.Formats() {
		out = append(out, string(f))
	}
	return out
}()

// toolsFlags are the flags of heddle tools beyond those of every command
// that opens the runtime.
type toolsFlags struct {
	runFlags
	caller callerFlags
	strict bool
}

func (tf *toolsFlags) register(fs *flag.FlagSet) {
	tf.runFlags.register(fs)
	tf.caller.register(fs)
	fs.BoolVar(&tf.strict, "strict", false, "OpenAI strict mode: every property required, optional ones nullable (with --format openai-chat or openai-responses)")
}

// check refuses --strict with a format that has no strict mode.
func (tf *toolsFlags) check(format string) error {
	if tf.strict && !modelfmt.Format(format).Strictable() {
		return fmt.Errorf("--strict is a choice of --format %s and %s, not of %s", modelfmt.OpenAIChat, modelfmt.OpenAIResponses, format)
	}
	return nil
}

// formatError is the usage error for a --format the command does not
// take: one that another command takes says which.
func formatError(cmd, got string, valid []string) error {
	if slices.Contains(toolFormats, got) && !slices.Contains(valid, got) {
		return fmt.Errorf("--format %s is a format of heddle tools only; %s takes %s", got, cmd, andList(valid))
	}
	return unknownValue("format", got, valid)
}

// printProviderTools writes the tools as the model API of format takes
// them: the JSON array of its tools parameter.
func (e *invocation) printProviderTools(tools []runtime.Tool, strict bool) error {
	raw, err := modelfmt.Render(modelfmt.Format(e.g.format), tools, modelfmt.Options{Strict: strict})
	if err != nil {
		return err
	}
	writeJSON(e.stdout, raw)
	return nil
}
