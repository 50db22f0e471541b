// Package usecase is the registry of an application's own operations: the
// things an agent may call in process, as the caller who invoked it, through
// a grant of kind usecase.
//
//	capabilities:
//	  - {kind: usecase, keys: [incidents.get_incident]}
//
// Your own tools are a usecase grant, not an MCP one. Reaching your own
// application over MCP costs a loopback round trip, a second serialisation
// and — above all — the caller's identity, which would end at the MCP
// boundary and be replaced by a service credential. A use case runs in the
// worker, on the caller's context: heddle.Caller(ctx) inside the operation is
// the human whose request reached the agent, and every policy rule keyed on
// caller applies before the operation runs.
//
// # Registering operations
//
// An operation is a Go function from an input type to an output type.
// Register derives the input's JSON Schema from In (as go-sdk's typed tools
// do: exported fields by their json names, required unless omitempty or
// omitzero, no other properties) and the output's from Out, and records the
// key under which artifacts grant it:
//
//	type GetIncident struct {
//		ID string `json:"id" jsonschema:"the incident id, e.g. INC-1"`
//	}
//
//	func init() {
//		usecase.Register("incidents.get_incident", getIncident,
//			usecase.Description("Fetch one incident of the caller's tenant by id."),
//			usecase.ReadOnly())
//	}
//
//	func getIncident(ctx context.Context, in GetIncident) (Incident, error) {
//		who := heddle.Caller(ctx) // the caller who invoked the agent
//		…
//	}
//
// Each granted key becomes one tool of the agent's toolset, named after the
// key with characters other than [A-Za-z0-9_-] made _ (incidents.get_incident
// is offered as incidents_get_incident; the key itself is accepted when
// called). When a use case shares its name with a tool of another source,
// both are qualified as usual: usecase__search beside runbooks__search.
//
// Annotations drive policy. ReadOnly marks a query; Destructive an operation
// that may change or delete data; Additive one that writes but never
// destroys; Idempotent one that may be repeated safely. An operation marked
// neither ReadOnly nor Additive is treated as possibly destructive (the MCP
// default), so the agent's policies.approval applies to it.
//
// Registering twice under one key, an empty key, a nil function or an input
// type whose schema is not an object panics: these are programming errors,
// found when the program starts.
//
// # Embedding heddle in an application
//
// The application registers its operations (in init functions or at the top
// of main), compiles the configuration with their keys — a grant of a key
// nobody registered is USECASE_UNKNOWN at compile time — opens the runtime,
// and calls tools as the authenticated caller:
//
//	import (
//		"github.com/heddlehq/heddle"
//		_ "github.com/heddlehq/heddle/builtin" // links the built-in kinds
//		"github.com/heddlehq/heddle/compile"
//		"github.com/heddlehq/heddle/config"
//		"github.com/heddlehq/heddle/runtime"
//		"github.com/heddlehq/heddle/usecase"
//
//		_ "example.com/app/incidents" // registers incidents.*
//	)
//
//	cfg, ds := config.Load(config.Options{Environ: os.Environ()})
//	p, cds := compile.Compile(compile.Input{Config: cfg, Usecases: usecase.Keys()})
//	if ds = append(ds, cds...); ds.HasErrors() {
//		return ds.Err()
//	}
//	rt, err := runtime.Open(ctx, p, runtime.Options{})
//	if err != nil {
//		return err
//	}
//	defer rt.Close()
//	ts, err := rt.Toolset("incident-triage")
//
//	// Per request, once the front door has authenticated the caller:
//	ctx := heddle.WithCaller(r.Context(), heddle.Identity{
//		Subject: claims.Subject,
//		Roles:   claims.Roles,
//		Claims:  map[string]string{"tenant": claims.Tenant},
//	})
//	res, err := ts.Call(ctx, "incidents_get_incident", map[string]any{"id": "INC-1"})
//
// # How the caller's identity travels
//
// The identity is a value on the context, never a parameter the model can
// set. heddle.WithCaller puts it there; Toolset.Call hands it to policy
// (the CEL variable caller, so a rule such as '!("sre" in caller.roles)'
// can deny the call before anything runs) and then calls the operation with
// that same context, on the caller's goroutine, with no serialisation of the
// identity and no network hop. heddle.Caller(ctx) reads it back inside the
// operation. The context also carries the call's deadline (the agent's
// policies.tool_timeout_ms): an operation that may block must honour it.
//
// # Reaching an MCP server directly
//
// An operation that itself calls someone else's MCP server declares it with
// WithMCP. The built-in set of kinds (package builtin) hands the registered
// operations' MCPUses to the mcp kind, so the runtime opens that server at
// start-up (sharing the one client agents use), checks the include filter
// against the tools it really offers, and reports it in health. The
// operation reaches it through a handle the application takes once after
// Open, from the mcp kind's live half:
//
//	usecase.Register("incidents.suggest_runbook", suggest,
//		usecase.WithMCP("runbooks", "search_*"), usecase.ReadOnly())
//	…
//	runbooks, err := mcplive.NewHandle(rt, "runbooks", "search_*") // captured by suggest
//
// # Results
//
// The output is encoded as JSON: as structuredContent (when Out's schema is
// an object) and as the text of the result. An error returned by the
// operation becomes a result with isError set and the error's message, which
// the model reads — so the message must be fit for it. An error carrying a
// diag code (diag.New(diag.ToolDenied, …)) becomes a refusal with that code.
// A panic is recovered into an isError result and logged.
//
// # Dependencies
//
// The package that registers an application's operations imports this one
// and nothing of the runtime: usecase depends on the standard library,
// github.com/google/jsonschema-go and heddle's diag alone — no gRPC, plugin
// host, CEL, SQL driver or MCP SDK — so a package of operations stays light
// to build and to test. Annotations and MCPUse are its own small types; the
// usecase kind's live half (grants/usecasekind/usecaselive) turns them into
// MCP tool definitions and runtime options.
package usecase
