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
//   - config: the typed schema and strict loading of api.yaml and agent.yaml
//   - grants, auth: the registries of grant kinds and auth strategies
//   - compile: configuration to plan, pure
//   - plan: the compiled, secret-free plan
//
// The heddle command (cmd/heddle) runs them: heddle check, heddle plan.
package heddle
