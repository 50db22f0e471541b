// Package policy decides whether an agent's tool call may go ahead: it
// compiles the policies block of agent.yaml (denied_tools globs, CEL rules
// and the approval setting) once, and answers deny, ask or allow for each
// call.
//
// An operator writes:
//
//	policies:
//	  approval: ask                 # for destructive tools: ask | allow | deny
//	  denied_tools: ["delete_*"]    # globs over tool names
//	  rules:
//	    - {when: 'tool.destructive && !("sre" in caller.roles)', effect: deny}
//	    - {when: 'tool.server == "runbooks" && args.limit > 100', effect: ask}
//
// and the runtime does:
//
//	set, ds := policy.New(artifact.Policies, "policies") // at compile time; ds are POLICY_INVALID
//	if err := ds.Err(); err != nil {
//		return err
//	}
//	d := set.Decide(ctx, policy.Input{
//		Tool:   policy.Tool{Name: "restart_service", Server: "runbooks", Kind: "mcp", Destructive: true},
//		Caller: heddle.Identity{Subject: "alice", Roles: []string{"oncall"}},
//		Args:   map[string]any{"service": "api"},
//	})
//	if err := d.Err(); err != nil {
//		return err // TOOL_DENIED: denied by policies.rules[0]
//	}
//
// # Rules
//
// A rule's when is a CEL expression (https://cel.dev) that must be of type
// bool, compiled by the language package policy/celrules registers when it
// is linked (package builtin and the compiler link it; the runtime does not,
// so it links no CEL). A program that links no language refuses every rule
// with POLICY_INVALID; denied_tools and approval need none. A rule sees
// three variables:
//
//	tool    name, original_name, server, kind (mcp|usecase|sql|a2a),
//	        destructive, read_only, idempotent, classified_by  (see [Tool])
//	caller  subject, roles (list of string), claims (map of string to string)  (see [heddle.Identity])
//	args    the call's arguments, a map of string to dyn
//
// Rules are type-checked when they are compiled: caller.rolez, tool.name == 1
// or a rule that yields a string are POLICY_INVALID at
// policies.rules[i].when, with CEL's message and the line and column within
// the rule. The CEL strings extension (lowerAscii, split, …) and optional
// values (args.?limit.orValue(0)) are available.
//
// Argument values are dynamic, so they are checked only when a rule runs: a
// rule reading args.limit on a call without a limit argument cannot be
// evaluated. Write has(args.limit) && args.limit > 100, or
// args.?limit.orValue(0) > 100, for arguments that may be absent.
//
// # Decisions
//
// [Set.Decide] denies a tool whose name matches a denied_tools glob; then the
// first rule whose when is true decides with its effect; if none is, a
// destructive tool gets the approval setting and any other tool is allowed.
//
// Policies fail closed. A rule that cannot be evaluated denies the call, and
// the Decision names the rule, not the arguments. Each evaluation is bounded
// by a cost budget of 1,000,000 CEL cost units and by ctx; a rule whose
// worst-case cost, assuming lists, maps and strings of up to 100 elements,
// exceeds that budget is refused when it is compiled.
//
// Compiling a rule costs a few hundred microseconds; deciding costs about a
// microsecond per rule evaluated. Compile once, when the plan is built.
package policy
