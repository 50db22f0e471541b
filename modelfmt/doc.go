// Package modelfmt writes an agent's tools in the formats of the model
// APIs — Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and
// Gemini — reads those APIs' tool calls back as calls of the toolset, and
// writes the toolset's results as each API takes them.
//
// A toolset's tools ([runtime.Toolset.Tools]) carry their input schemas as
// the servers wrote them: JSON Schema of any draft, with $ref, oneOf,
// formats and keywords no model API takes. Each format applies that API's
// schema rules by a documented normalisation (docs/models.md, "Provider
// formats"): Anthropic and OpenAI take JSON Schema nearly as it is, with
// an object at the top; OpenAI's strict mode ([Options.Strict]) wants
// every property required and every object closed; Gemini takes a subset
// of the OpenAPI 3.0 Schema object, with $ref inlined. What a format does
// not take is dropped, or, when it constrains a value, moved into the
// description for the model to read. Every rendering is bounded in depth
// and size whatever the schema: a recursive schema is cut where it
// recurses.
//
// The package depends on no provider SDK. A model loop that uses one
// hands the SDK the JSON this package writes, and gives this package the
// JSON of the SDK's tool calls:
//
//	r, err := modelfmt.New(modelfmt.Anthropic, tools, modelfmt.Options{})
//	params.Tools = r.Tools()             // the API's tools array
//	call, err := r.ParseCall(toolUseJSON) // a tool_use block
//	res, err := ts.Call(ctx, call.Name, call.Args)
//	block, err := r.Result(call, res)    // a tool_result block
//
// A Renderer is safe for concurrent use; it holds a copy of the tools it
// was made with, so a new one is made when the toolset's tools change.
package modelfmt
