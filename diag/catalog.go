package diag

import "slices"

// Entry documents one code. docs/errors.md is generated from the catalogue
// of the built-in set of kinds (go run ./internal/gendocs): the core's
// entries here, and each kind's own (grants.Coded). A test fails when a
// code is missing from it.
type Entry struct {
	Code     Code
	Phase    Phase
	Severity Severity
	// Meaning says what went wrong, in a sentence or two.
	Meaning string
	// Fix says what to do about it.
	Fix string
	// Example is a failing example for codes that no compile fixture shows
	// (start-up and call-time codes); compile-time codes take theirs from
	// compile/testdata/codes/<CODE>.txtar.
	Example string
}

var catalog = []Entry{
	{Code: ConfigParse, Phase: PhaseCompile,
		Meaning: "A configuration file could not be read or is not valid YAML, or its top level is not a mapping, or a key is empty, null, a list or a mapping, or written twice in one mapping, or a merge key (<<) is given something other than mappings, or an agent's file is named agent.yml (heddle reads agent.yaml). The message keeps the line (and the column where it is known) but drops any quoted text, which could be a value.",
		Fix:     "Fix the YAML at the line given; check indentation and quoting, and give every key a name of its own. For --env NAME, config/api.NAME.yaml must exist."},
	{Code: ConfigKeyUnknown, Phase: PhaseCompile,
		Meaning: "A key that heddle does not know, anywhere in api.yaml, an overlay, a HEDDLE_ variable or agent.yaml — including a setting an auth strategy or grant kind does not accept. Decoding is strict: a misspelt key is never silently ignored.",
		Fix:     "Correct the spelling; the detail lists the keys accepted at that place."},
	{Code: ConfigValueInvalid, Phase: PhaseCompile,
		Meaning: "A value has the wrong type for its setting (a string where a number belongs), a number that must be positive is not, or a value is not one of those accepted. The message names the setting and the expected type, never the value.",
		Fix:     "Write a value of the type given, or leave the key out to take the default."},
	{Code: ConfigLimit, Phase: PhaseCompile,
		Meaning: "A configuration document is over one of heddle's limits: larger than 1 MiB, nested deeper than 100 levels, more than 100,000 nodes or 16 MiB written out flat once every alias is expanded, or an alias that refers to the node containing it. YAML is untrusted input, and a few lines of aliases can stand for billions of values; the limits are checked before anything is built from the document. The message names the limit, never a value.",
		Fix:     "Write the document out without the aliases that multiply it, flatten its nesting, or split what it holds. The limits are listed under Limits in docs/configuration.md."},
	{Code: AgentNameMismatch, Phase: PhaseCompile,
		Meaning: "An artifact's name: key differs from the name of the directory it lives in. The directory name is the agent's name.",
		Fix:     "Rename the directory or the name: key so that they agree, or drop the name: key."},
	{Code: CapabilityKindUnknown, Phase: PhaseCompile,
		Meaning: "A capability's kind: is missing or names no registered grant kind.",
		Fix:     "Use one of the registered kinds: mcp, usecase, sql, a2a (or one your application registers)."},
	{Code: MCPTransportInvalid, Phase: PhaseCompile,
		Meaning: "A server's transport is not http, sse or stdio, a stdio server has no command, or an entry without transport has neither command nor url. As a warning: an entry without transport whose url ends in /sse, which is read as Streamable HTTP though the legacy SSE transport may be meant.",
		Fix:     "Set transport to http, sse or stdio, or leave it out and give the entry a command (stdio) or a url (Streamable HTTP), as MCP hosts write them; for an /sse url, write transport: sse, or transport: http to keep Streamable HTTP."},
	{Code: MCPCredentialsInline, Phase: PhaseCompile,
		Meaning: "A literal (or a malformed reference) where a secret reference belongs: headers_ref, any *_ref setting of an auth block, dsn_ref; a literal under a credential's name (api_key, password, client_secret, …) in an auth plugin's settings; a URL with user:password@ in any auth setting, a server's command, args or dir, or a header; a literal Authorization, Cookie, *-Key, *-Token or *-Secret in a server's headers. As a warning: a literal under a credential's name (GITHUB_TOKEN, DB_PASSWORD, …) in a stdio server's env. The message never repeats the value.",
		Fix:     "Store the value in your secret store and write a reference: ${secrets:/path}, ${env:NAME} or ${file:PATH} (in a plugin's settings, under NAME_ref)."},
	{Code: MCPAuthStrategyUnknown, Phase: PhaseCompile,
		Meaning: "An auth block names no strategy kind, or one that is neither built in (bearer, static, oauth) nor declared under ai.auth_plugins The message lists what is registered.",
		Fix:     "Use a registered kind, or declare the plugin under ai.auth_plugins."},
	{Code: MCPEnvInvalid, Phase: PhaseCompile,
		Meaning: "A stdio server's (or auth plugin's) env has a name that is not a variable name, or a value that cannot be a value at all — white space, braces, quotes, URL userinfo: the mark of a broken interpolation. The value is redacted.",
		Fix:     "Write a plain value, or a reference such as ${secrets:/path}."},
	{Code: MCPConnectionConflict, Phase: PhaseCompile,
		Meaning: "Two server names become the same tool prefix once sanitized (run.books and run_books), or one server entry mixes two transports' settings — an entry without transport that has both command and url, headers on a stdio server, or an overlay that switched the transport while the base file's url or command remained.",
		Fix:     "Rename one of the servers; in an overlay that changes the transport, set the other transport's keys to null."},
	{Code: RemoteClientsUnknown, Phase: PhaseCompile,
		Meaning: "ai.remote_clients is neither required nor optional.",
		Fix:     "Write required (the default) or optional."},
	{Code: AuthPluginInvalid, Phase: PhaseCompile,
		Meaning: "An ai.auth_plugins entry has no command, no sha256 checksum or a malformed one, or takes the name of a built-in strategy. heddle starts no unverified binary.",
		Fix:     "Give the plugin's command and its checksum (sha256sum <binary>), under a name of its own."},
	{Code: ServeAuthInvalid, Phase: PhaseCompile,
		Meaning: "serve.auth is incomplete or unsafe: no kind or an unknown one; kind jwt without issuer or audience, with an algorithm it does not accept (none and the HMAC algorithms never are: an HMAC key would be the issuer's public key) or a clock skew over 5 minutes; kind tokens without tokens, or a token without token_ref or subject; kind trusted_headers without proxies, or a proxy that is not a CIDR or an address; or a setting of another kind, which this one would silently ignore.",
		Fix:     "Complete the kind's settings (docs/operations.md shows each kind worked out), or remove what belongs to another kind.",
		Example: "serve: {auth: {kind: jwt, issuer: https://idp.example.com}}   # no audience"},
	{Code: ToolOverrideConflict, Phase: PhaseCompile,
		Meaning: "Two globs of the same length in a server's tools: overrides can match the same tool name and classify it differently. An exact name decides over any glob, and a longer glob over a shorter one; between globs of one length there is no order, so heddle refuses to pick.",
		Fix:     "Add an entry for the exact names the globs share, make one glob more specific, or make the two overrides agree.",
		Example: "tools: {\"write_*\": {destructive: true}, \"*_notes\": {destructive: false}}   # write_notes matches both"},
	{Code: PolicyInvalid, Phase: PhaseCompile,
		Meaning: "A policy is malformed: a CEL rule that does not parse or type-check against tool, caller and args (the message gives the position inside the expression), a rule that is not boolean, an unknown effect or approval value, or a malformed denied_tools glob; or a policies.limits entry that is not one limit: both or neither of calls and concurrent, calls without a positive per duration (30s, 1m, 1h), a number that is not positive, an unknown by, a malformed tools glob.",
		Fix:     "Fix the expression at the position given; effects and approval take deny, ask or allow. A limit is {calls: N, per: DURATION} or {concurrent: N}, with by: caller, agent or tool."},
	{Code: TimeoutRace, Phase: PhaseCompile, Severity: SeverityWarning,
		Meaning: "An agent's policies.tool_timeout_ms equals the transport timeout_ms of a server or remote agent it grants. The two deadlines race with different outcomes: one ends the call with TOOL_TIMEOUT, the other gives the model a refusal it can read.",
		Fix:     "Set the server's timeout_ms strictly shorter than tool_timeout_ms (the defaults, 20000 and 25000, do not race)."},

	{Code: SecretUnresolved, Phase: PhaseStartup,
		Meaning: "A secret reference could not be resolved at start-up: the variable is unset, the file or mounted secret does not exist or cannot be read.",
		Fix:     "Provide the secret, or correct the reference.",
		Example: "headers_ref: ${env:RUNBOOKS_KEY}   # and RUNBOOKS_KEY is not set"},
	{Code: SecretEmpty, Phase: PhaseStartup,
		Meaning: "A secret reference resolved to an empty value. heddle never sends an empty credential.",
		Fix:     "Fill in the secret.",
		Example: "token_ref: ${file:/run/secrets/token}   # an empty file"},
	{Code: MCPHeadersRefInvalid, Phase: PhaseStartup,
		Meaning: "The payload of headers_ref (or of the static strategy) is not one Name=value header pair. The payload is never echoed.",
		Fix:     "Store exactly Name=value; for Authorization: Bearer use the bearer strategy.",
		Example: "headers_ref: ${secrets:/kb/api-key}   # holds \"abc123\" with no Name="},
	{Code: MCPAuthStrategyInvalid, Phase: PhaseStartup,
		Meaning: "An auth strategy could not be built from its settings (a plugin that fails its checksum or handshake, an OAuth configuration that cannot work).",
		Fix:     "Check the strategy's settings and, for a plugin, its binary and checksum.",
		Example: "auth_plugins: {agent-session: {command: bin/plugin, sha256: <checksum of another binary>}}"},
	{Code: MCPFilterUnmatched, Phase: PhaseStartup,
		Meaning: "An include or exclude pattern, or a server's classification override (a `tools:` key, an entry of `read_only_tools`, `idempotent_tools` or `destructive_tools`), matches no tool the server really offers. A filter that silently matches nothing is how an agent quietly loses a capability; an override that does is how a tool quietly keeps the claim it was meant to lose, such as not being destructive. Found at start-up, the message names the agent's file and the server's tools; heddle check finds it too, at the filter's line, when heddle.lock pins the server's tools.",
		Fix:     "Correct the pattern against the tools the message names (or `heddle tools AGENT`), or remove it.",
		Example: "{kind: mcp, server: runbooks, include: [\"serach_*\"]}"},
	{Code: ToolNameConflict, Phase: PhaseStartup,
		Meaning: "Two tools of one toolset still share a model-facing name after qualification as server__tool.",
		Fix:     "Exclude one of them, or rename a server.",
		Example: "two grants of one server whose tool names differ only in characters that sanitize alike"},
	{Code: ToolDefinitionChanged, Phase: PhaseStartup,
		Meaning: "A tool's definition (description, schema or annotations) differs from the one pinned in heddle.lock.",
		Fix:     "Review the change, then run heddle lock again.",
		Example: "a server update changed get_runbook's input schema"},
	{Code: LockInvalid, Phase: PhaseStartup,
		Meaning: "The lock file named with --lock does not exist, cannot be read, or is not a heddle lock file (not JSON of a lock's shape, or another format version); or heddle lock cannot write it. The default, ./heddle.lock, is read only when it exists; a file named explicitly must be there, so that a mistyped path never runs a worker without its pins. A default heddle.lock that exists but does not parse is this error too.",
		Fix:     "Correct the path given to --lock, write the file with heddle lock --lock FILE (in a directory that exists and is writable), or leave --lock out to use ./heddle.lock when there is one.",
		Example: "heddle serve --lock /etc/heddle/heddle.prod.lock   # and the image does not hold it"},
	{Code: ListenFailed, Phase: PhaseStartup,
		Meaning: "heddle serve could not listen on its --listen address, or on serve.probes.listen: another process listens there, the address is not HOST:PORT, its host is not an address of this machine, or the port needs privileges the worker lacks (below 1024). The runtime opened, and is closed again.",
		Fix:     "Stop the other process, or choose another address with --listen HOST:PORT (the default is 127.0.0.1:8080; :0 picks a free port) or in serve.probes.listen.",
		Example: "heddle serve --listen 127.0.0.1:8080   # and another worker already listens there"},
	{Code: ServeAuthUnreachable, Phase: PhaseStartup,
		Meaning: "heddle serve could not read the keys serve.auth kind jwt verifies tokens with, and the message says why: the issuer's OpenID discovery document (serve.auth.issuer with /.well-known/openid-configuration) or its key set (the document's jwks_uri, or serve.auth.jwks_url) could not be fetched — the connection was refused, the host name does not resolve, the TLS handshake failed, the fetch timed out or the issuer answered an HTTP error —, or the document is not JSON, names another issuer or no https jwks_uri, or the key set holds no public signing key. The keys are read before serve listens, and a worker that cannot check any token does not start; once it runs, a key set it cannot read again keeps the keys it has.",
		Fix:     "Check that the worker reaches the issuer (DNS, network policy, an egress proxy, the authority that signed its certificate) and that serve.auth.issuer is the issuer's URL exactly as its tokens' iss names it (a realm or tenant path included, a trailing slash or not). An issuer without a discovery document: set serve.auth.jwks_url to its key set.",
		Example: "serve: {auth: {kind: jwt, issuer: https://idp.example.com/realms/ops, audience: heddle}}   # and the realm is called opz: HTTP 404"},
	{Code: StartupTimeout, Phase: PhaseStartup,
		Meaning: "Start-up as a whole did not finish within ai.startup_timeout_ms.",
		Fix:     "Raise ai.startup_timeout_ms, or find the slow dependency in the log.",
		Example: "startup_timeout_ms: 1   # too short for anything"},

	{Code: AgentUnknown, Phase: PhaseCall,
		Meaning: "The command, or a request to the invoke API (/v1/agents/{agent}/…), or Runtime.Toolset names an agent the configuration does not have: no subdirectory of that name in the agents directory (--agents, default agents) holds an agent.yaml. The command's message lists the agents there and names the closest; the invoke API answers 404.",
		Fix:     "Correct the name from the list in the message, or point --agents at the directory that holds the agent.",
		Example: "heddle tools incident-triag   # the agent is incident-triage"},
	{Code: ToolUnknown, Phase: PhaseCall,
		Meaning: "The agent has no tool by that name (bare, qualified or dotted).",
		Fix:     "List the agent's tools with heddle tools AGENT.",
		Example: "heddle call incident-triage no_such_tool"},
	{Code: ToolTimeout, Phase: PhaseCall,
		Meaning: "The supervisor's deadline (policies.tool_timeout_ms) ended the call.",
		Fix:     "Raise tool_timeout_ms, or set the server's timeout_ms shorter so the model sees a refusal instead.",
		Example: "policies: {tool_timeout_ms: 100}   # and the tool takes a second"},
	{Code: ToolUnavailable, Phase: PhaseCall,
		Meaning: "The tool's server (or SQL source, or remote agent) is down — it cannot be reached, its connection was lost, or it cannot list its tools — and the call's re-check found it still down; its supervisor keeps bringing it back. The model reads this as a refusal and may try later; the agent's other tools are not affected.",
		Fix:     "Check the server; heddle health lists what is down and why.",
		Example: "a stdio server that crashed"},
	{Code: ToolDenied, Phase: PhaseCall,
		Meaning: "A policy denied the call: denied_tools, a CEL rule, or approval: deny for a destructive tool.",
		Fix:     "Change the policy if the call should be allowed.",
		Example: "rules: [{when: 'tool.destructive', effect: deny}]"},
	{Code: ToolApprovalRequired, Phase: PhaseCall,
		Meaning: "The call needs approval (a destructive tool under approval: ask, or a rule with effect ask) and no approver allowed it.",
		Fix:     "Set an approval handler in runtime.Options, or change the policy.",
		Example: "approval: ask   # and the tool is annotated destructiveHint: true"},
	{Code: RequestStateInvalid, Phase: PhaseCall,
		Meaning: "A host of MCP 2026-07-28 retried a call through the facade (/mcp/{agent}, heddle mcp) with a requestState the facade does not accept: one it did not seal, altered, sealed with a key the worker no longer holds (serve.approval_key_ref rotated out, or another worker's own key), sealed for another agent, caller, tool or arguments, expired (10 minutes), or used already — each state is accepted once. The state carries an approval or an upstream server's request for input, so accepting it otherwise would run a call no one approved. The host gets the JSON-RPC error -32602 with this code in error.data.",
		Fix:     "Start the call again without requestState: the host is asked again. Behind a load balancer, give every worker the same serve.approval_key_ref; while rotating it, list the new key first and keep the old one second until states sealed with it have expired.",
		Example: "a host that replays the retry of an approved destructive call"},
	{Code: ToolArgsInvalid, Phase: PhaseCall,
		Meaning: "The arguments do not match the tool's input schema (types, enums, patterns, lengths, bounds, item counts). The call is not sent; the model reads what is wrong and may correct it.",
		Fix:     "Nothing, usually: the model corrects its arguments. A tool whose schema is wrong must be fixed at its server.",
		Example: "heddle call incident-triage get_runbook --args '{\"id\": 42}'   # id is a string"},
	{Code: ResultTooLarge, Phase: PhaseCall,
		Meaning: "A server answered a call with a message larger than its hard limit: four times its max_result_bytes, and never less than 4 MiB. heddle refuses such a message as it reads it, without holding it: over HTTP it stops reading the response; over stdio and SSE it skips the message. The session and the server's other calls go on, and the call is not sent again. The model reads this as a refusal. A result between max_result_bytes and the hard limit is not refused but cut, with a note saying so.",
		Fix:     "Ask the tool for less: a narrower query, a page, a limit argument. If results this large are expected, raise the server's max_result_bytes; the hard limit follows it.",
		Example: "max_result_bytes: 1048576   # and the tool answers with 64 MiB"},
	{Code: ShuttingDown, Phase: PhaseCall,
		Meaning: "The worker is shutting down. From the start of heddle serve's drain (SIGTERM or SIGINT), /readyz answers 503 with it, so that load balancers stop sending. A call still running when the drain ends — at serve --grace, or at a second signal — is cancelled and answered 503 with it. A runtime that was closed — heddle serve closes it only after the drain, an application may close it early — answers it to every call or listing, and nothing is called.",
		Fix:     "Retry on another worker; a call that was cut may have had effects already, as one that timed out. If calls are cut at every deploy, raise serve --grace (and the pod's terminationGracePeriodSeconds with it). An application that embeds heddle closes the runtime after its own HTTP server has drained, never before.",
		Example: "rt.Close(); rt.Toolset(\"incident-triage\")"},
	{Code: ToolRateLimited, Phase: PhaseCall,
		Meaning: "A limit refused the call before it was sent: an entry of the agent's policies.limits (a rate of calls, or calls at once, per caller, for the agent or per tool) or the server's max_concurrent, which bounds the calls at once of every agent in the worker. The model reads this as a refusal whose _meta carries retry_after_ms, when the limit will admit a call, and limit, the setting that refused it. Limits are per worker process.",
		Fix:     "Nothing, usually: the model or its host retries after retry_after_ms. If the limit is too low for legitimate traffic, raise it; behind a load balancer, remember that each worker admits its own limit.",
		Example: "limits: [{calls: 2, per: 1m}]   # and the model makes a third call within the minute"},
	{Code: TransportTimeout, Phase: PhaseCall,
		Meaning: "The server did not answer within its timeout_ms. The model reads this as a refusal and may retry.",
		Fix:     "Raise the server's timeout_ms if calls legitimately take longer.",
		Example: "timeout_ms: 100   # and the tool takes a second"},
	{Code: RequestInvalid, Phase: PhaseCall,
		Meaning: "A request to heddle serve is not one its API takes, and nothing was called: a call's body is not a JSON object of arguments, or could not be read within serve.limits.read_timeout_ms (400); a POST under /v1/ does not say Content-Type: application/json (415: what a browser's cross-site form or text/plain request sends); or the path does not answer the method (405, with an Allow header naming those it does). An empty body is no arguments.",
		Fix:     "Send the tool's arguments as one JSON object, with Content-Type: application/json, by the method the API reference (GET /v1/openapi.json) gives for the path.",
		Example: "curl -d '{\"query\": \"disk\"}' http://127.0.0.1:8080/v1/agents/incident-triage/tools/search_runbooks   # curl -d sends application/x-www-form-urlencoded"},
	{Code: Unauthenticated, Phase: PhaseCall,
		Meaning: "A request to heddle serve's /v1/ API carries no credential, or one serve.auth does not accept: a JWT that is expired, not yet valid, for another audience or issuer, signed with an algorithm not allowed or a key the issuer does not publish; a token no tokens entry holds; under trusted_headers, a request from an address serve.auth.proxies does not hold that carries no identity header; or, without serve.auth, any request (serve refuses /v1/ calls until the operator chooses a kind). The answer is 401 with WWW-Authenticate: Bearer realm=\"heddle\" (and error=\"invalid_token\" when a credential was sent and refused); the message says which check failed, never the credential.",
		Fix:     "Send Authorization: Bearer TOKEN with a token the configured kind accepts: for jwt, one issued by serve.auth.issuer for serve.auth.audience; for tokens, one of the configured tokens. Without serve.auth, set one (kind: none allows every caller on loopback, for development).",
		Example: "curl -X POST http://127.0.0.1:8080/v1/agents/incident-triage/tools/search_runbooks   # no Authorization header"},
	{Code: Forbidden, Phase: PhaseCall,
		Meaning: "A request to heddle serve was refused although its caller is known, or could not be: its Host header is a name that is neither localhost (on a loopback address) nor one of serve.hosts (a browser page reaching the worker through DNS rebinding sends its own name; an address is always accepted), a browser sent it from a page of another origin (its Sec-Fetch-Site or Origin header says so), or X-Heddle-* identity headers came from an address serve.auth.proxies does not hold. The probes (/livez, /readyz) are never refused. The answer is 403.",
		Fix:     "Call the worker by an accepted name (add the name callers use to serve.hosts), or by its address; call the API from a server, not from a page in a browser; and send identity headers only through a configured proxy.",
		Example: "curl -H 'Host: evil.example' http://127.0.0.1:8080/v1/agents"},
	{Code: TooBusy, Phase: PhaseCall,
		Meaning: "heddle serve already serves serve.limits.max_in_flight calls and listings (of the agents, or of an agent's tools), and answered this one 503 with Retry-After instead of queueing it. Nothing was called. The probes and /metrics are never refused for it.",
		Fix:     "Retry after the time Retry-After gives, spread the load over more workers, or raise serve.limits.max_in_flight if the worker and its servers have room.",
		Example: "a 1025th concurrent call with the default max_in_flight of 1024"},
	{Code: RequestTooLarge, Phase: PhaseCall,
		Meaning: "A request to heddle serve's invoke API has a body over serve.limits.max_body_bytes (default 1 MiB). Nothing was called. A header over serve.limits.max_header_bytes is answered 431 before any handler runs.",
		Fix:     "Send smaller arguments; pass large inputs by reference (a path, a URL, an id) for the tool to fetch.",
		Example: "a POST to /v1/agents/incident-triage/tools/search_runbooks with a 2 MiB body"},
	{Code: NotFound, Phase: PhaseCall,
		Meaning: "A request to heddle serve names a path it does not serve. The answer is 404; the message does not repeat the path. An agent the plan does not have, under a path that exists, is AGENT_UNKNOWN instead.",
		Fix:     "Use a path of the API reference (GET /v1/openapi.json, docs/openapi.json): /livez, /readyz, /metrics, /v1/agents, /v1/agents/{agent}/tools, /v1/agents/{agent}/tools/{tool}.",
		Example: "curl http://127.0.0.1:8080/v1/agent/incident-triage/tools   # agents, not agent"},
}

// Catalog returns the core's entries, in catalogue order: every code but
// those that only one grant kind reports, which that kind catalogues itself
// (grants.Coded). A set of kinds gives the whole catalogue of a program
// (grants.Set.Catalog).
func Catalog() []Entry { return slices.Clone(catalog) }

// Lookup returns the core's catalogue entry for code; a code of a kind's
// own is found in the catalogue of a set that holds the kind
// (grants.Set.Entry).
func Lookup(code Code) (Entry, bool) {
	i := slices.IndexFunc(catalog, func(e Entry) bool { return e.Code == code })
	if i < 0 {
		return Entry{}, false
	}
	return catalog[i], true
}
