// Command heddle-conformance-client is the client the MCP conformance suite
// (@modelcontextprotocol/conformance) drives to test heddle's runtime and
// its oauth strategy. The suite starts a mock server per scenario and runs
//
//	heddle-conformance-client [-v] SERVER_URL
//
// with MCP_CONFORMANCE_SCENARIO naming the scenario and, for some,
// MCP_CONFORMANCE_CONTEXT holding JSON credentials or the calls to make.
// The client builds a plan in code — one server, transport http,
// authenticated as the scenario needs — opens heddle's runtime on it,
// lists the tools, calls what the scenario asks for (steps), and closes.
// It answers elicitations, asked directly or in an input_required result,
// by accepting the schema's defaults. The protocol revision is the
// runtime's default choice, protocol_version auto (server/discover at
// 2026-07-28, then initialize), whatever revision the suite runs at
// (MCP_CONFORMANCE_PROTOCOL_VERSION is not read): the suite tests what an
// operator gets. It exits 0 when every step succeeded, 1 otherwise, and at
// once for a scenario whose mechanism it does not have (unsupported); -v
// logs at DEBUG to stderr. integration/conformance runs the suite with it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	_ "github.com/heddlehq/heddle/builtin" // the built-in kinds and strategies, both halves
	"github.com/heddlehq/heddle/runtime/driver"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heddlehq/heddle/auth/authlive"
	"github.com/heddlehq/heddle/auth/oauth"
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants/mcpkind"
	"github.com/heddlehq/heddle/grants/mcpkind/mcplive"
	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime"
	"github.com/heddlehq/heddle/secrets"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// server is the plan's one server.
const server = "conformance"

// clientMetadataURL is the client ID metadata document URL the suite's
// mock authorization servers expect (SEP-991).
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// headlessKind is the oauth strategy with a fetcher that reads the code
// from the authorization endpoint's redirect, as the suite's mock
// authorization server approves at once.
const headlessKind = "oauth-headless"

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	level := slog.LevelInfo
	if len(args) > 0 && args[0] == "-v" {
		level, args = slog.LevelDebug, args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: heddle-conformance-client [-v] SERVER_URL")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	authlive.Register(headlessKind, oauth.Builder(oauth.Options{Fetcher: oauth.RedirectFetcher(nil), Logger: log}))

	scenario := getenv("MCP_CONFORMANCE_SCENARIO")
	var sc scenarioContext
	if raw := getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			fmt.Fprintf(stderr, "MCP_CONFORMANCE_CONTEXT: %v\n", err)
			return 2
		}
	}
	if err := runScenario(scenario, args[len(args)-1], sc, log); err != nil {
		fmt.Fprintf(stderr, "scenario %s: %v\n", scenario, err)
		if r := diag.Reason(err); r != "" {
			fmt.Fprintf(stderr, "  reason: %s\n", r)
		}
		return 1
	}
	return 0
}

// scenarioContext is MCP_CONFORMANCE_CONTEXT.
type scenarioContext struct {
	Name             string `json:"name"`
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
	// ToolCalls are the calls http-custom-headers asks for.
	ToolCalls []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"toolCalls"`
}

func runScenario(scenario, url string, sc scenarioContext, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	a, err := authFor(scenario, sc)
	if err != nil {
		return err
	}
	p := &plan.Plan{
		Version: plan.Version,
		Startup: plan.Startup{TimeoutMS: 15000, RemoteClients: "required"},
		Parts: []plan.Part{mcpkind.PlanPart(mcpkind.Servers{server: {
			Name: server, Transport: "http", URL: url, ToolPrefix: server, Auth: a,
			TimeoutMS: 15000, Required: true, MaxResultBytes: 1 << 20,
		}})},
		Agents: map[string]*plan.Agent{},
	}
	// The context's secrets reach the strategy the way a deployment's do: as
	// references, resolved at start-up.
	values := map[string]string{"CLIENT_SECRET": sc.ClientSecret, "IDP_ID_TOKEN": sc.IdPIDToken}
	resolver := secrets.Func(func(_ context.Context, ref config.Ref) (secrets.Value, error) {
		if v := values[ref.Name]; v != "" {
			return secrets.NewValue(v), nil
		}
		return secrets.Value{}, diag.New(diag.SecretUnresolved, "%s: not in MCP_CONFORMANCE_CONTEXT", ref)
	})
	// The mcp kind alone, answering elicitations, with the server reached
	// directly as application code reaches one.
	kinds := runtime.NewKindSet(map[string]driver.Kind{"mcp": mcplive.Kind{
		Elicitation: acceptDefaults,
		Uses:        func() []mcplive.Use { return []mcplive.Use{{Server: server}} },
	}})
	rt, err := runtime.Open(ctx, p, runtime.Options{
		Kinds: kinds, Logger: log, Secrets: resolver,
		ClientName: "heddle-conformance-client", ClientVersion: "0.1.0",
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	h, err := mcplive.NewHandle(rt, server)
	if err != nil {
		return err
	}
	tools, err := h.Tools(ctx)
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	log.Debug("tools listed", "count", len(tools))
	do := steps[scenario]
	if do == nil && strings.HasPrefix(scenario, "auth/") {
		do = callFirst // an authorized call, as well as the list
	}
	if do == nil {
		return nil // the list was the scenario: initialize, request-metadata, json-schema-ref-no-deref
	}
	return do(ctx, h, tools, sc)
}

// A step is what a scenario needs of the client once the tools are
// listed.
type step func(ctx context.Context, h *mcplive.Handle, tools []*mcp.Tool, sc scenarioContext) error

// steps are the steps of the scenarios that need more than a list, by name.
var steps = map[string]step{
	"tools_call":                          callTool("add_numbers", map[string]any{"a": 5, "b": 3}),
	"elicitation-sep1034-client-defaults": callTool("test_client_elicitation_defaults", nil),
	"sse-retry":                           callTool("test_reconnection", nil),
	// SEP-2322: each tool answers input_required (an elicitation, with or
	// without requestState) or a result with no resultType; the mcp kind
	// answers and retries, and the mock checks the retries and that the
	// unrelated call carries nothing of the others.
	"sep-2322-client-request-state": callTools("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"),
	// SEP-2243: a call shows the Mcp-Method and Mcp-Name headers; the calls
	// the context lists show the Mcp-Param-* headers of their x-mcp-header
	// arguments; every tool the client kept is called, and the mock checks
	// that none of those with an invalid x-mcp-header was.
	"http-standard-headers":     callFirst,
	"http-custom-headers":       callContext,
	"http-invalid-tool-headers": callEach(map[string]any{"region": "us-west1"}),
	// SEP-1613: the focal tool's inputSchema goes back to the mock as it
	// was listed, which shows what the client kept of it.
	"json-schema-2020-12-preservation": echoSchema("json_schema_2020_12_tool", "json_schema_echo"),
}

// call calls one tool and requires a result that is not an error.
func call(ctx context.Context, h *mcplive.Handle, name string, args map[string]any) error {
	res, err := h.Call(ctx, name, args)
	if err != nil {
		return fmt.Errorf("calling %s: %w", name, err)
	}
	if res.IsError {
		return fmt.Errorf("calling %s: the tool reported an error", name)
	}
	return nil
}

func callTool(name string, args map[string]any) step {
	return func(ctx context.Context, h *mcplive.Handle, _ []*mcp.Tool, _ scenarioContext) error {
		return call(ctx, h, name, args)
	}
}

// callTools calls each tool in turn, with no arguments.
func callTools(names ...string) step {
	return func(ctx context.Context, h *mcplive.Handle, _ []*mcp.Tool, _ scenarioContext) error {
		for _, name := range names {
			if err := call(ctx, h, name, nil); err != nil {
				return err
			}
		}
		return nil
	}
}

// callFirst calls the first tool listed, with no arguments.
func callFirst(ctx context.Context, h *mcplive.Handle, tools []*mcp.Tool, _ scenarioContext) error {
	if len(tools) == 0 {
		return errors.New("the server lists no tools")
	}
	return call(ctx, h, tools[0].Name, nil)
}

// callEach calls every tool listed, with args.
func callEach(args map[string]any) step {
	return func(ctx context.Context, h *mcplive.Handle, tools []*mcp.Tool, _ scenarioContext) error {
		if len(tools) == 0 {
			return errors.New("the server lists no tools")
		}
		for _, t := range tools {
			if err := call(ctx, h, t.Name, args); err != nil {
				return err
			}
		}
		return nil
	}
}

// callContext makes the calls MCP_CONFORMANCE_CONTEXT lists, in order.
func callContext(ctx context.Context, h *mcplive.Handle, _ []*mcp.Tool, sc scenarioContext) error {
	if len(sc.ToolCalls) == 0 {
		return errors.New("MCP_CONFORMANCE_CONTEXT lists no toolCalls")
	}
	for _, c := range sc.ToolCalls {
		if err := call(ctx, h, c.Name, c.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// echoSchema calls echo with the inputSchema of focal as it was listed.
func echoSchema(focal, echo string) step {
	return func(ctx context.Context, h *mcplive.Handle, tools []*mcp.Tool, _ scenarioContext) error {
		i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == focal })
		if i < 0 {
			return fmt.Errorf("the server lists no tool %s", focal)
		}
		return call(ctx, h, echo, map[string]any{"schema": tools[i].InputSchema})
	}
}

func ref(name string) *config.Ref {
	r := config.ParseRef("${env:" + name + "}")
	return &r
}

// unsupported are the auth scenarios whose mechanism neither heddle's
// oauth strategy nor go-sdk v1.8.0 has: the client stops at once, with the
// reason, rather than trying another flow the mock refuses.
var unsupported = map[string]string{
	"auth/client-credentials-jwt": "private_key_jwt client authentication (SEP-1046, RFC 7523 client assertions) is not supported: go-sdk v1.8.0's client-credentials handler authenticates with a client secret only",
	"auth/wif-jwt-bearer":         "the JWT-bearer grant of workload identity federation (SEP-1933) is not supported by heddle's oauth strategy or go-sdk v1.8.0",
	"auth/dpop":                   "DPoP sender-constrained tokens (SEP-1932, RFC 9449) are not supported by heddle's oauth strategy or go-sdk v1.8.0",
	"auth/dpop-nonce":             "DPoP sender-constrained tokens (SEP-1932, RFC 9449) are not supported by heddle's oauth strategy or go-sdk v1.8.0",
}

// authFor returns the scenario's auth block, as an operator would write it.
func authFor(scenario string, sc scenarioContext) (*plan.Auth, error) {
	switch {
	case !strings.HasPrefix(scenario, "auth/"):
		return nil, nil
	case unsupported[scenario] != "":
		return nil, errors.New(unsupported[scenario])
	case scenario == "auth/client-credentials-basic":
		return &plan.Auth{Kind: "oauth", Settings: map[string]any{
			"flow": "client_credentials", "client_id": sc.ClientID, "client_secret_ref": ref("CLIENT_SECRET"),
			"token_endpoint_auth": "client_secret_basic",
		}}, nil
	case scenario == "auth/enterprise-managed-authorization": // SEP-990
		return &plan.Auth{Kind: "oauth", Settings: map[string]any{
			"flow": "enterprise", "client_id": sc.ClientID, "client_secret_ref": ref("CLIENT_SECRET"),
			"token_endpoint_auth": "client_secret_basic",
			"idp_issuer":          sc.IdPIssuer, "idp_token_endpoint": sc.IdPTokenEndpoint,
			"idp_client_id": sc.IdPClientID, "idp_token_ref": ref("IDP_ID_TOKEN"),
		}}, nil
	}
	s := map[string]any{"redirect_url": "http://127.0.0.1:3000/callback", "client_id": clientMetadataURL}
	if sc.ClientID != "" { // pre-registration
		s["client_id"] = sc.ClientID
		if sc.ClientSecret != "" {
			s["client_secret_ref"] = ref("CLIENT_SECRET")
		}
	}
	return &plan.Auth{Kind: headlessKind, Settings: s}, nil
}

// acceptDefaults answers an elicitation by accepting, with the default of
// every property of the requested schema that has one (SEP-1034).
func acceptDefaults(_ context.Context, _ string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	if req.Params != nil && req.Params.RequestedSchema != nil {
		b, err := json.Marshal(req.Params.RequestedSchema)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &schema); err != nil {
			return nil, err
		}
	}
	content := map[string]any{}
	for name, p := range schema.Properties {
		if p.Default != nil {
			content[name] = p.Default
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}
