package mcpkind

import (
	"slices"

	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
)

// Codes returns the catalogue entries of the codes only the mcp kind
// reports, from this package or its live half (grants.Coded). Codes it
// shares with the core, an auth strategy or another kind are catalogued by
// the core (diag.Catalog).
func (Kind) Codes() []diag.Entry { return slices.Clone(codes) }

var codes = []diag.Entry{
	{Code: diag.MCPServerUnknown, Phase: diag.PhaseCompile,
		Meaning: "An mcp grant names a server that ai.mcp_servers does not declare, or names none.",
		Fix:     "Declare the server in the deployment (every environment's), or correct the name in the grant."},
	{Code: diag.MCPURLInvalid, Phase: diag.PhaseCompile,
		Meaning: "A server URL is missing, cannot be parsed, is not https (plain http is allowed only for loopback hosts), or carries userinfo, a query string or a fragment. The URL is redacted in the message: it may hold the very credential being refused.",
		Fix:     "Use https://host/path with no credentials in it, and put credentials in headers_ref or an auth strategy."},
	{Code: diag.MCPAuthConflict, Phase: diag.PhaseCompile,
		Meaning: "A server sets both headers_ref and auth: two ways to set credentials on one connection are ambiguous.",
		Fix:     "Keep one. headers_ref is the static strategy's shorthand."},
	{Code: diag.MCPStdioAuth, Phase: diag.PhaseCompile,
		Meaning: "A stdio server sets headers_ref or auth. A child process has no connection to authenticate.",
		Fix:     "Pass credentials to the child through env: with a secret reference."},
	{Code: diag.MCPFilterInvalid, Phase: diag.PhaseCompile,
		Meaning: "An include, exclude, read_only_tools, idempotent_tools or destructive_tools pattern is empty or not a valid glob.",
		Fix:     "Patterns use * for any run of characters, ? for one character and [a-z] for a class."},
	{Code: diag.MCPServerUnreachable, Phase: diag.PhaseStartup,
		Meaning: "A server could not be connected within its share of the start-up deadline, and the message says why. For a stdio server: its command was not found (a relative command such as bin/server is resolved against the working directory, or against dir: when it is set), is not executable, or exited before the MCP handshake — with its exit status and its last line on stderr — or did not answer in time. For an HTTP or SSE server: the connection was refused (nothing listens at that host and port), the host name does not resolve, the TLS handshake failed (a certificate this worker does not trust or that names another host, or a plain-HTTP server behind an https:// URL), connecting or the handshake timed out, or the server answered an HTTP error. A 401 or 403 is MCP_AUTH_REJECTED instead. Required servers abort start-up, each named; optional ones are logged and handed to the supervisor.",
		Fix:     "A command that is not found: build it (the shipped example's bin/ servers are built by make build), check its path, and run heddle from the directory a relative command is relative to, or give an absolute path. A command that exits: run it by hand with its args and read what it prints (--log-level debug logs each line of its stderr). A refused connection: start the server, or correct the host and port of its url. A host that does not resolve: correct the host name or the worker's DNS. A TLS failure: give the server a certificate for its host name signed by an authority the worker trusts, or use https:// only for servers that speak TLS. A timeout: check the network path (firewalls, proxies), or raise ai.startup_timeout_ms for slow starters (npx downloads). Mark servers that may be absent required: false.",
		Example: "command: bin/heddle-example-server   # and bin/ was never built"},
	{Code: diag.MCPAuthRejected, Phase: diag.PhaseStartup,
		Meaning: "An HTTP or SSE server answered 401 Unauthorized or 403 Forbidden during the handshake: it refused the credentials heddle sent, or heddle sent none. The message names the status and the strategy whose credentials were refused. Required servers abort start-up; optional ones are logged and handed to the supervisor, which keeps trying.",
		Fix:     "Check the credential reference: headers_ref, or the strategy's *_ref settings, must resolve to a credential this server accepts (for this environment, not expired or revoked, with the scopes it needs). Check the strategy: auth.kind must be the scheme the server expects (bearer for Authorization: Bearer, static or headers_ref for another header, oauth for a server that runs OAuth); a server that needs credentials and has neither headers_ref nor auth gets none.",
		Example: "auth: {kind: bearer, token_ref: ${env:RUNBOOKS_TOKEN}}   # and the token was revoked: HTTP 401"},
	{Code: diag.MCPListFailed, Phase: diag.PhaseStartup,
		Meaning: "A server completed its MCP handshake but did not list its tools: tools/list answered a JSON-RPC error, the server's HTTP endpoint answered an error status, or the listing did not finish in time (at start-up, a required server's slow listing is STARTUP_TIMEOUT instead). heddle treats it as a server it cannot reach: a required one aborts start-up, named; an optional one is logged at WARN, shown as down with this code by heddle health and /readyz, and listed again by its supervisor. A server that lists its tools at start-up and cannot list them again later (after a list_changed notification or a reconnect) is down with this code too, required or not, until a listing succeeds; meanwhile its tools answer TOOL_UNAVAILABLE and the other servers' tools are unaffected.",
		Fix:     "Look at the server's own log for why it failed the listing (--log-level debug shows the error heddle got); call tools/list against it by hand. A server whose listing is slow needs a larger ai.startup_timeout_ms. Mark a server whose absence the other tools should survive required: false.",
		Example: "a server whose tools/list handler fails: {\"error\": {\"code\": -32603, \"message\": \"internal error\"}}"},
	{Code: diag.MCPLazyUnpinned, Phase: diag.PhaseStartup,
		Meaning: "A server declared connect: lazy has no entry in heddle.lock (or the runtime was opened with no lock): its tools are offered from the lock until its first call connects it, so without pins it has nothing to offer. The compiler does not read the lock, so this is found at start-up.",
		Fix:     "Run heddle lock (it connects lazy servers too), review the lock and deploy it with the worker; or declare the server connect: eager.",
		Example: "ai.mcp_servers.git.connect: lazy, and heddle.lock was written before git was added"},
	{Code: diag.MCPInputUnanswered, Phase: diag.PhaseCall,
		Meaning: "A server asked, during a call, for input heddle could not give (MCP 2026-07-28's input_required result): sampling when the runtime has no sampling handler (heddle serve and heddle call have none), sampling with tools, a kind of request heddle does not know, a handler that failed, or more rounds of input than heddle answers (10). An elicitation with no handler is not refused: it is declined, and the server decides. Behind the MCP facade, a 2026-07-28 host is asked instead, and this code is not seen. The call is refused with this code; the model reads it.",
		Fix:     "Call the tool through a host that can answer (the MCP facade passes a server's requests for input to a 2026-07-28 host), give the runtime the handler (mcplive.Kind's Elicitation or Sampling) when you embed heddle, or ask the server's owner why the tool needs input.",
		Example: "a tool whose server answers tools/call with resultType input_required and a sampling inputRequest, called by heddle call"},
	{Code: diag.MCPCapabilityRequired, Phase: diag.PhaseCall,
		Meaning: "A server of MCP 2026-07-28 refused a call because its caller did not declare a client capability the tool needs (JSON-RPC -32021): the tool would ask for input — sampling, elicitation, roots — that the caller cannot give. heddle's own client declares elicitation and sampling only when the runtime has handlers for them; behind the MCP facade, the host's own capabilities are declared, and a 2026-07-28 host gets the JSON-RPC error -32021 (HTTP 400) with this code in its data. Elsewhere the call is refused with this code; the model reads it.",
		Fix:     "Call the tool from a host that declares the capability, give the runtime the handler (mcplive.Kind's Elicitation or Sampling) when you embed heddle, or exclude the tool from the grant.",
		Example: "a tool that needs sampling, called through /mcp/{agent} by a host that declared only elicitation"},
	{Code: diag.CallerTokenRequired, Phase: diag.PhaseCall,
		Meaning: "A call to a server whose auth is {kind: oauth, flow: token_exchange} — called as its caller, with a token the identity provider issues in exchange for the caller's own — was made for a caller whose token heddle does not hold: a caller of serve.auth kind tokens, static, trusted_headers or none, a call of heddle call or heddle mcp, or an application's call without heddle.WithCallerToken. Nothing is sent to the server, and the call is not made as heddle instead; the model reads the refusal.",
		Fix:     "Call the agent through heddle serve with serve.auth kind jwt, whose callers' tokens the identity provider of the server's auth exchanges; an application that authenticates its callers itself passes the bearer token it verified with heddle.WithCallerToken. A server that should be called as heddle, whoever the caller, takes flow client_credentials instead.",
		Example: "heddle call ops whoami   # and the server of whoami has auth: {kind: oauth, flow: token_exchange, …}"},
}

var _ grants.Coded = Kind{}
