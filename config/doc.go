// Package config reads heddle's configuration — one deployment and every
// agent's artifact — into Go values, and says what is wrong with it as
// diagnostics at the line that wrote it. It opens nothing and resolves no
// secret: package compile turns what it reads into a plan.
//
//	cfg, ds := config.Load(config.Options{Env: "staging", Environ: os.Environ()})
//	p, cds := compile.Compile(compile.Input{Config: cfg})
//	if ds = append(ds, cds...); ds.HasErrors() { … } // each at its file:line and config path
//
// The deployment is layered: config/api.yaml, then config/api.<env>.yaml
// beside it when Options.Env names an environment ([OverlayFile]), then the
// HEDDLE_ variables of Options.Environ ([EnvPrefix]:
// HEDDLE_AI__STARTUP_TIMEOUT_MS=5000 sets ai.startup_timeout_ms), each
// layer winning over the ones before. Each agent is an
// agents/<name>/agent.yaml of its own ([Artifact], [LoadArtifacts]). Load
// gathers every problem it can find rather than stopping at the first, and
// returns whatever it could decode along with them, so that compiling it
// reports more in the same run.
//
// Positions are kept apart from values: each layer parsed records where
// every config path was written, and the deployment's [Index] stacks them,
// later layers winning. A problem is recorded against its config path
// ("ai.mcp_servers.runbooks.url") and located afterwards, in the layer
// that last set it — the overlay, or the HEDDLE_ variable — by one pass
// of [Index.Locate]. Every document is untrusted input, bounded before it
// is parsed ([MaxDocumentBytes] and the other limits, CONFIG_LIMIT).
//
// Decoding is strict: an unknown key is CONFIG_KEY_UNKNOWN and a value of
// the wrong type CONFIG_VALUE_INVALID, and a message names the setting and
// what it takes, never the value written. [DecodeStrict] and [Positive]
// are the same rules for code outside the package: the grant kinds and
// auth strategies decode their own settings with them.
//
// A credential is written as a reference to it, never as its value:
// ${secrets:/path}, ${env:NAME} or ${file:PATH}, a [Ref] ([ParseRef]). It
// stays a reference through compilation and into the plan, and is resolved
// only at start-up (package secrets). A value that is not a reference
// decodes into a Ref whose Problem says why, and the value itself is
// dropped, so that no later message can repeat it.
//
// The ai: section's own settings (startup_timeout_ms, remote_clients,
// pinning, auth_plugins, secrets) are decoded here, into [AI]. Every other
// key of it — ai.mcp_servers, ai.sql_sources, ai.a2a_agents, or the section
// of an application's own kind — is kept as written, after layering, and
// handed raw to the kind that owns it ([Deployment.Section]); the kind
// decodes and checks it, and the compiler reports a key that no kind owns.
// So config names no kind, and adding one changes nothing here.
//
// What is read of the configuration past the loader — [Ref] and
// [ParseRef], the config paths of [Join] and [Item], the approval and
// limits.by words, the serve: and mcp: sections — is declared in package
// [github.com/heddlehq/heddle/config/setting], which imports only the
// standard library, and re-exported here under the same names: config.Ref
// and setting.Ref are one type. The plan, the policy engine and the
// secrets resolver import that package, so the runtime links none of the
// loader (koanf, mapstructure, YAML positions).
package config
