// Command heddle-conformance-client is the client the MCP conformance suite
// (@modelcontextprotocol/conformance) drives to test heddle's runtime and
// its oauth strategy. The suite starts a mock server per scenario and runs
//
//	heddle-conformance-client [-v] SERVER_URL
//
// with MCP_CONFORMANCE_SCENARIO naming the scenario and, for some,
// MCP_CONFORMANCE_CONTEXT holding JSON credentials. The client builds a plan
// in code — one server, transport http, authenticated as the scenario needs
// — opens heddle's runtime on it (answering elicitations by accepting the
// schema's defaults), lists the tools, calls what the scenario asks for,
// and closes. It exits 0 when every step succeeded, 1 otherwise; -v logs at
// DEBUG to stderr. integration/conformance runs the suite with it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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
			TimeoutMS: 15000, Required: true, ProtocolVersion: "2025-11-25", MaxResultBytes: 1 << 20,
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
	var call string
	var args map[string]any
	switch scenario {
	case "tools_call":
		call, args = "add_numbers", map[string]any{"a": 5, "b": 3}
	case "elicitation-sep1034-client-defaults":
		call = "test_client_elicitation_defaults"
	case "sse-retry":
		call = "test_reconnection"
	default:
		if strings.HasPrefix(scenario, "auth/") && len(tools) > 0 {
			call = tools[0].Name // an authorized call, as well as the list
		}
	}
	if call == "" {
		return nil
	}
	res, err := h.Call(ctx, call, args)
	if err != nil {
		return fmt.Errorf("calling %s: %w", call, err)
	}
	if res.IsError {
		return fmt.Errorf("calling %s: the tool reported an error", call)
	}
	return nil
}

func ref(name string) *config.Ref {
	r := config.ParseRef("${env:" + name + "}")
	return &r
}

// authFor returns the scenario's auth block, as an operator would write it.
func authFor(scenario string, sc scenarioContext) (*plan.Auth, error) {
	switch {
	case !strings.HasPrefix(scenario, "auth/"):
		return nil, nil
	case scenario == "auth/client-credentials-jwt":
		return nil, errors.New("private_key_jwt client authentication is not supported (go-sdk v1.8.0 has no handler for it)")
	case scenario == "auth/client-credentials-basic":
		return &plan.Auth{Kind: "oauth", Settings: map[string]any{
			"flow": "client_credentials", "client_id": sc.ClientID, "client_secret_ref": ref("CLIENT_SECRET"),
			"token_endpoint_auth": "client_secret_basic",
		}}, nil
	case scenario == "auth/cross-app-access-complete-flow":
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
