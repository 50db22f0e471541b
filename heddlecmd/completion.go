package heddlecmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"
)

// completeCommand is the hidden command the completion scripts run:
// heddle __complete -- WORD… CURRENT prints the candidates for CURRENT, the
// word being completed, after the words before it, one a line, each
// optionally followed by a tab and a description. Instead of candidates it
// may print one directive line: ":files" or ":dirs", for the shell to
// complete a path. It prints nothing on errors and always exits 0.
const completeCommand = "__complete"

// completeTimeout bounds opening an agent's servers to complete its tool
// names: past it, completion offers none rather than hang the shell.
const completeTimeout = 3 * time.Second

// completion is heddle completion SHELL.
func (e *invocation) completion(args []string) int {
	pos, err := e.parseCommand("completion", args, 1, 1, nil)
	if err != nil {
		return e.usageError(err)
	}
	shell := pos[0]
	t, ok := completionScripts[shell]
	if !ok {
		return e.usageError(&unknownError{problem: fmt.Sprintf("unknown shell %q", shell), got: shell, label: "shells", valid: shells})
	}
	prog := programName()
	var cmds []string
	for _, c := range commands {
		if !c.hidden {
			cmds = append(cmds, c.name)
		}
	}
	err = t.Execute(e.stdout, map[string]string{
		"Prog":     prog,
		"Func":     "_" + nonIdent.ReplaceAllString(prog, "_"),
		"Commands": strings.Join(cmds, " "),
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "heddle: %v\n", err)
		return ExitFail
	}
	return ExitOK
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// programName is the name the process was started as: heddle, or an
// application's worker; the scripts complete that name.
func programName() string {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	if name == "" || name == "." || strings.ContainsAny(name, " \t\n'\"$`\\") {
		return "heddle"
	}
	return name
}

// complete is heddle __complete.
func (e *invocation) complete(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		args = []string{""}
	}
	out := e.stdout
	e.stdout, e.stderr = io.Discard, io.Discard
	for _, c := range e.candidates(args[:len(args)-1], args[len(args)-1]) {
		fmt.Fprintln(out, c)
	}
	return ExitOK
}

// candidates returns what may follow words as cur, the word being
// completed, filtered by cur as a prefix.
func (e *invocation) candidates(words []string, cur string) []string {
	cmd := ""
	var pos []string
	fs := e.flagSet("heddle")
	valueOf := "" // the flag whose value the next word is
	for _, w := range words {
		if valueOf != "" {
			e.noteValue(valueOf, w)
			valueOf = ""
			continue
		}
		if len(w) > 1 && strings.HasPrefix(w, "-") {
			name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
			f := fs.Lookup(name)
			switch {
			case f == nil || isBoolFlag(f):
			case hasVal:
				e.noteValue(name, val)
			default:
				valueOf = name
			}
			continue
		}
		if cmd == "" {
			if c, ok := lookupCommand(w); !ok || c.hidden {
				return nil
			}
			cmd = w
			fs = e.commandFlags(cmd)
			continue
		}
		pos = append(pos, w)
	}
	if valueOf != "" {
		return e.valueCandidates(cmd, valueOf, cur)
	}
	if strings.HasPrefix(cur, "-") {
		if name, val, ok := strings.Cut(strings.TrimLeft(cur, "-"), "="); ok {
			prefix := cur[:len(cur)-len(val)]
			var out []string
			for _, v := range e.valueCandidates(cmd, name, val) {
				if !strings.HasPrefix(v, ":") {
					out = append(out, prefix+v)
				}
			}
			return out
		}
		var out []string
		fs.VisitAll(func(f *flag.Flag) {
			if strings.HasPrefix("--"+f.Name, cur) {
				_, u := flag.UnquoteUsage(f)
				out = append(out, "--"+f.Name+"\t"+u)
			}
		})
		if strings.HasPrefix("--help", cur) {
			out = append(out, "--help\tprint the usage")
		}
		return out
	}
	var names []string
	switch {
	case cmd == "", cmd == "help" && len(pos) == 0:
		var out []string
		for _, c := range commands {
			if !c.hidden && strings.HasPrefix(c.name, cur) {
				out = append(out, c.name+"\t"+c.summary)
			}
		}
		return out
	case cmd == "completion" && len(pos) == 0:
		names = shells
	case (cmd == "tools" || cmd == "call" || cmd == "mcp") && len(pos) == 0:
		names = e.agentNames()
	case cmd == "call" && len(pos) == 1:
		names = e.toolNames(pos[0])
	case cmd == "import" && len(pos) == 0:
		return []string{":files"}
	}
	return withPrefix(names, cur)
}

// noteValue records the value of a global flag that says where the
// configuration is, so that agents and tools are found where the command
// would find them.
func (e *invocation) noteValue(name, val string) {
	switch name {
	case "config":
		e.g.config, e.g.configSet = val, true
	case "env":
		e.g.env = val
	case "agents":
		e.g.agents, e.g.agentsSet = val, true
	}
}

// valueCandidates returns the values of a flag of cmd that start with cur,
// or a directive to complete a path.
func (e *invocation) valueCandidates(cmd, name, cur string) []string {
	switch name {
	case "config", "lock":
		return []string{":files"}
	case "agents":
		return []string{":dirs"}
	case "env":
		return withPrefix(e.envNames(), cur)
	}
	return withPrefix(flagValues(cmd, name), cur)
}

// envNames returns the environments with an overlay next to the base
// file: api.staging.yaml is staging.
func (e *invocation) envNames() []string {
	base := e.g.config
	ext := filepath.Ext(base)
	matches, _ := filepath.Glob(strings.TrimSuffix(base, ext) + ".*" + ext)
	var names []string
	for _, m := range matches {
		name := strings.TrimSuffix(strings.TrimPrefix(m, strings.TrimSuffix(base, ext)+"."), ext)
		if name != "" && !strings.Contains(name, ".") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// toolNames opens the agent's servers, quietly and under completeTimeout,
// and returns its tools' names; nil on any failure.
func (e *invocation) toolNames(agent string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	rf := runFlags{} // no lock: completion offers what the servers offer now
	rt, _ := e.open(ctx, &rf, slog.New(slog.DiscardHandler), false, agent)
	if rt == nil {
		return nil
	}
	defer rt.Close()
	ts, err := rt.Toolset(agent)
	if err != nil {
		return nil
	}
	tools, err := ts.Tools(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !strings.HasPrefix(n, ":") {
			out = append(out, n)
		}
	}
	return out
}

func isBoolFlag(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// completionScripts are the scripts heddle completion prints. Each asks
// the command itself (__complete) for candidates, so that they follow its
// commands, flags, agents and tools without being regenerated.
var completionScripts = map[string]*template.Template{
	"bash": template.Must(template.New("bash").Parse(bashScript)),
	"zsh":  template.Must(template.New("zsh").Parse(zshScript)),
	"fish": template.Must(template.New("fish").Parse(fishScript)),
}

const bashScript = `# bash completion for {{.Prog}}: commands ({{.Commands}}),
# their flags and values, agents and tools.
# Install: {{.Prog}} completion bash > ~/.local/share/bash-completion/completions/{{.Prog}}
# or, for the current shell: source <({{.Prog}} completion bash)

{{.Func}}() {
    local i w cur line prefix
    local -a words=() out=()
    # Words as the command reads them: bash splits --flag=value at the =,
    # put them together again.
    for ((i = 1; i <= COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        if ((${#words[@]} > 0)) && [[ ${words[${#words[@]}-1]} == -* ]] &&
            [[ $w == "=" || ${words[${#words[@]}-1]} == *= ]]; then
            words[${#words[@]}-1]+="$w"
        else
            words+=("$w")
        fi
    done
    ((${#words[@]} == 0)) && words=("")
    cur="${words[${#words[@]}-1]}"
    prefix=""
    [[ $cur == -*=* ]] && prefix="${cur%%=*}="
    while IFS='' read -r line; do
        [[ -n $line ]] && out+=("${line%%$'\t'*}")
    done < <("${COMP_WORDS[0]}" __complete -- "${words[@]}" 2>/dev/null)
    COMPREPLY=()
    case "${out[0]-}" in
    :files)
        compopt -o filenames 2>/dev/null
        while IFS='' read -r line; do COMPREPLY+=("$line"); done < <(compgen -f -- "${cur#"$prefix"}")
        ;;
    :dirs)
        compopt -o filenames 2>/dev/null
        while IFS='' read -r line; do COMPREPLY+=("$line"); done < <(compgen -d -- "${cur#"$prefix"}")
        ;;
    *)
        for w in "${out[@]}"; do
            COMPREPLY+=("${w#"$prefix"}")
        done
        ;;
    esac
}
complete -F {{.Func}} {{.Prog}}
`

const zshScript = `#compdef {{.Prog}}
# zsh completion for {{.Prog}}: commands ({{.Commands}}),
# their flags and values, agents and tools.
# Install: {{.Prog}} completion zsh > "${fpath[1]}/_{{.Prog}}"
# or, for the current shell: source <({{.Prog}} completion zsh)

{{.Func}}() {
    local -a out cands descs
    local line
    out=("${(@f)$("${words[1]}" __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    case "${out[1]}" in
    :files) _files ;;
    :dirs) _files -/ ;;
    *)
        for line in "${out[@]}"; do
            [[ -z $line ]] && continue
            cands+=("${line%%$'\t'*}")
            if [[ $line == *$'\t'* ]]; then
                descs+=("${line%%$'\t'*} -- ${line#*$'\t'}")
            else
                descs+=("${line}")
            fi
        done
        (( ${#cands} )) && compadd -Q -l -d descs -- "${cands[@]}"
        ;;
    esac
}

if [[ "${funcstack[1]}" == "{{.Func}}" ]]; then
    {{.Func}} "$@"
else
    compdef {{.Func}} {{.Prog}}
fi
`

const fishScript = `# fish completion for {{.Prog}}: commands ({{.Commands}}),
# their flags and values, agents and tools.
# Install: {{.Prog}} completion fish > ~/.config/fish/completions/{{.Prog}}.fish

function __{{.Func}}_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l out ($words[1] __complete -- $words[2..-1] "$cur" 2>/dev/null)
    switch "$out[1]"
        case :files
            __fish_complete_path "$cur"
        case :dirs
            __fish_complete_directories "$cur"
        case '*'
            printf '%s\n' $out
    end
end

complete -c {{.Prog}} -f -a '(__{{.Func}}_complete)'
`
