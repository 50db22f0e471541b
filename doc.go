// Package heddle gives AI agents their capabilities declaratively.
//
// Operators declare, per agent, what it may use (agents/<name>/agent.yaml:
// grants of kind mcp, usecase, sql and a2a) and, per environment, where
// those things live and how to authenticate (config/api.yaml, an
// api.<env>.yaml overlay and HEDDLE_ variables). heddle compiles both into a
// plan, fail-closed, with stable error codes, and its runtime hands each
// agent a toolset: the tools its grants allow, named safely for any model
// API, guarded by timeouts, policies and approval.
//
// The packages, in import order:
//
//   - diag: diagnostics and the catalogue of codes
//   - usecase: the application's own operations, granted as kind usecase
//     (it imports diag alone of heddle: no runtime, transport or driver)
//   - config: the typed schema and strict loading of api.yaml and agent.yaml
//   - grants, auth: the registries of grant kinds and auth strategies (their
//     config halves; grants/*kind/*live and auth/authlive, auth/oauth, auth/plugin
//     hold the live halves)
//   - compile: configuration to plan, pure
//   - plan: the compiled, secret-free plan
//   - runtime: the live plan — shared clients, toolsets, supervisor, health
//   - health: the probes over HTTP
//
// This package holds the caller identity (Identity, Caller, WithCaller) that
// travels from an entry point into policies and use cases, and the shipped
// example configuration. It imports only the standard library, so policy,
// the runtime, the kinds and an application's use cases all read the one
// identity without importing one another. The heddle command (cmd/heddle) runs it all: check, plan,
// tools, call, health, serve, lock. See docs/architecture.md.
package heddle
