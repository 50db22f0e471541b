package diag

import "slices"

// Entry documents one code. docs/errors.md is generated from the catalogue
// (go run ./internal/gendocs), and a test fails when a code is missing here.
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
		Meaning: "A configuration file could not be read or is not valid YAML, or its top level is not a mapping. The message keeps the line but drops any quoted text, which could be a value.",
		Fix:     "Fix the YAML at the line given; check indentation and quoting. For --env NAME, config/api.NAME.yaml must exist."},
	{Code: ConfigKeyUnknown, Phase: PhaseCompile,
		Meaning: "A key that heddle does not know, anywhere in api.yaml, an overlay, a HEDDLE_ variable or agent.yaml — including a setting an auth strategy or grant kind does not accept. Decoding is strict: a misspelt key is never silently ignored.",
		Fix:     "Correct the spelling; the detail lists the keys accepted at that place."},
	{Code: ConfigValueInvalid, Phase: PhaseCompile,
		Meaning: "A value has the wrong type for its setting (a string where a number belongs), a number that must be positive is not, or a value is not one of those accepted. The message names the setting and the expected type, never the value.",
		Fix:     "Write a value of the type given, or leave the key out to take the default."},
	{Code: AgentNameMismatch, Phase: PhaseCompile,
		Meaning: "An artifact's name: key differs from the name of the directory it lives in. The directory name is the agent's name.",
		Fix:     "Rename the directory or the name: key so that they agree, or drop the name: key."},
	{Code: CapabilityKindUnknown, Phase: PhaseCompile,
		Meaning: "A capability's kind: is missing or names no registered grant kind.",
		Fix:     "Use one of the registered kinds: mcp, usecase, sql, a2a (or one your application registers)."},
	{Code: MCPServerUnknown, Phase: PhaseCompile,
		Meaning: "An mcp grant names a server that ai.mcp_servers does not declare, or names none.",
		Fix:     "Declare the server in the deployment (every environment's), or correct the name in the grant."},
	{Code: MCPTransportInvalid, Phase: PhaseCompile,
		Meaning: "A server's transport is not http, sse or stdio, or a stdio server has no command.",
		Fix:     "Set transport to http (the default), sse or stdio; give a stdio server its command."},
	{Code: MCPURLInvalid, Phase: PhaseCompile,
		Meaning: "A server URL is missing, cannot be parsed, is not https (plain http is allowed only for loopback hosts), or carries userinfo, a query string or a fragment. The URL is redacted in the message: it may hold the very credential being refused.",
		Fix:     "Use https://host/path with no credentials in it, and put credentials in headers_ref or an auth strategy."},
	{Code: MCPAuthConflict, Phase: PhaseCompile,
		Meaning: "A server sets both headers_ref and auth: two ways to set credentials on one connection are ambiguous.",
		Fix:     "Keep one. headers_ref is the static strategy's shorthand."},
	{Code: MCPCredentialsInline, Phase: PhaseCompile,
		Meaning: "A literal (or a malformed reference) where a secret reference belongs: headers_ref, any *_ref setting of an auth block, dsn_ref. The refusal never repeats the value.",
		Fix:     "Store the value in your secret store and write a reference: ${secrets:/path}, ${env:NAME} or ${file:PATH}."},
	{Code: MCPAuthStrategyUnknown, Phase: PhaseCompile,
		Meaning: "An auth block names no strategy kind, or one that is neither built in (bearer, static, oauth) nor declared under ai.auth_plugins, or a strategy that cannot serve this kind of client (oauth for an A2A agent). The message lists what is registered.",
		Fix:     "Use a registered kind, or declare the plugin under ai.auth_plugins."},
	{Code: MCPStdioAuth, Phase: PhaseCompile,
		Meaning: "A stdio server sets headers_ref or auth. A child process has no connection to authenticate.",
		Fix:     "Pass credentials to the child through env: with a secret reference."},
	{Code: MCPEnvInvalid, Phase: PhaseCompile,
		Meaning: "A stdio server's (or auth plugin's) env has a name that is not a variable name, or a value that cannot be a value at all — white space, braces, quotes, URL userinfo: the mark of a broken interpolation. The value is redacted.",
		Fix:     "Write a plain value, or a reference such as ${secrets:/path}."},
	{Code: MCPConnectionConflict, Phase: PhaseCompile,
		Meaning: "Two server names become the same tool prefix once sanitized (run.books and run_books), or one server entry mixes two transports' settings — typically an overlay that switched the transport while the base file's url or command remained.",
		Fix:     "Rename one of the servers; in an overlay that changes the transport, set the other transport's keys to null."},
	{Code: MCPFilterInvalid, Phase: PhaseCompile,
		Meaning: "An include, exclude, read_only_tools, idempotent_tools or destructive_tools pattern is empty or not a valid glob.",
		Fix:     "Patterns use * for any run of characters, ? for one character and [a-z] for a class."},
	{Code: RemoteClientsUnknown, Phase: PhaseCompile,
		Meaning: "ai.remote_clients is neither required nor optional.",
		Fix:     "Write required (the default) or optional."},
	{Code: AuthPluginInvalid, Phase: PhaseCompile,
		Meaning: "An ai.auth_plugins entry has no command, no sha256 checksum or a malformed one, or takes the name of a built-in strategy. heddle starts no unverified binary.",
		Fix:     "Give the plugin's command and its checksum (sha256sum <binary>), under a name of its own."},
	{Code: UsecaseUnknown, Phase: PhaseCompile,
		Meaning: "A usecase grant names a key the application did not register, or names none.",
		Fix:     "Register the operation with usecase.Register in the application's main, or correct the key."},
	{Code: SQLSourceUnknown, Phase: PhaseCompile,
		Meaning: "An sql grant names a source ai.sql_sources does not declare, or names none.",
		Fix:     "Declare the source, or correct the name."},
	{Code: SQLSourceInvalid, Phase: PhaseCompile,
		Meaning: "An SQL source has an unknown driver, or lacks what its driver needs (path for sqlite, dsn_ref for postgres), or mixes the two.",
		Fix:     "Use driver sqlite with path, or driver postgres with dsn_ref."},
	{Code: SQLStatementUnknown, Phase: PhaseCompile,
		Meaning: "An sql grant names a statement its source does not declare, or grants nothing at all.",
		Fix:     "Declare the statement under the source's statements, or correct the name."},
	{Code: SQLStatementInvalid, Phase: PhaseCompile,
		Meaning: "A statement has no SQL, uses a :parameter it does not declare (or declares one it never uses), gives a parameter an unknown type, or binds it from something other than the caller.",
		Fix:     "Declare every :name under params with a type (string, integer, number, boolean); from: takes caller.subject or caller.claims.NAME."},
	{Code: A2AAgentUnknown, Phase: PhaseCompile,
		Meaning: "An a2a grant names a remote agent ai.a2a_agents does not declare, or names none.",
		Fix:     "Declare the agent, or correct the name."},
	{Code: A2AURLInvalid, Phase: PhaseCompile,
		Meaning: "A remote agent's URL breaks the same rules as MCP_URL_INVALID. The URL is redacted.",
		Fix:     "Use https://host/path with no credentials in it."},
	{Code: PolicyInvalid, Phase: PhaseCompile,
		Meaning: "A policy is malformed: a CEL rule that does not parse or type-check against tool, caller and args (the message gives the position inside the expression), a rule that is not boolean, an unknown effect or approval value, or a malformed denied_tools glob.",
		Fix:     "Fix the expression at the position given; effects and approval take deny, ask or allow."},
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
		Meaning: "An auth strategy could not be built from its settings (a plugin that fails its checksum or handshake, an OAuth configuration that cannot work), or oauth is named for an A2A agent.",
		Fix:     "Check the strategy's settings and, for a plugin, its binary and checksum.",
		Example: "auth_plugins: {agent-session: {command: bin/plugin, sha256: <checksum of another binary>}}"},
	{Code: MCPServerUnreachable, Phase: PhaseStartup,
		Meaning: "A server could not be connected within its share of the start-up deadline. Required servers abort start-up, each named; optional ones are logged and handed to the supervisor.",
		Fix:     "Check the server is up and reachable; raise ai.startup_timeout_ms for slow starters (npx downloads); mark servers that may be absent required: false.",
		Example: "url: https://127.0.0.1:9/mcp   # nothing listens there"},
	{Code: A2AAgentUnreachable, Phase: PhaseStartup,
		Meaning: "A remote agent's card could not be fetched at start-up.",
		Fix:     "Check the agent is up, or mark it required: false.",
		Example: "a2a_agents: {triage: {url: http://127.0.0.1:9}}"},
	{Code: SQLNotReadonly, Phase: PhaseStartup,
		Meaning: "An SQL source's session could write: the database or role allows writes that heddle's read-only session settings would not stop.",
		Fix:     "Connect with a role that has only SELECT privileges.",
		Example: "dsn_ref: ${env:PG_DSN}   # a role that owns tables"},
	{Code: MCPFilterUnmatched, Phase: PhaseStartup,
		Meaning: "An include or exclude pattern matches no tool the server really offers. A filter that silently matches nothing is how an agent quietly loses a capability.",
		Fix:     "Correct the pattern against `heddle tools AGENT`, or remove it.",
		Example: "{kind: mcp, server: runbooks, include: [\"serach_*\"]}"},
	{Code: ToolNameConflict, Phase: PhaseStartup,
		Meaning: "Two tools of one toolset still share a model-facing name after qualification as server__tool.",
		Fix:     "Exclude one of them, or rename a server.",
		Example: "two grants of one server whose tool names differ only in characters that sanitize alike"},
	{Code: ToolDefinitionChanged, Phase: PhaseStartup,
		Meaning: "A tool's definition (description, schema or annotations) differs from the one pinned in heddle.lock.",
		Fix:     "Review the change, then run heddle lock again.",
		Example: "a server update changed get_runbook's input schema"},
	{Code: StartupTimeout, Phase: PhaseStartup,
		Meaning: "Start-up as a whole did not finish within ai.startup_timeout_ms.",
		Fix:     "Raise ai.startup_timeout_ms, or find the slow dependency in the log.",
		Example: "startup_timeout_ms: 1   # too short for anything"},

	{Code: ToolUnknown, Phase: PhaseCall,
		Meaning: "The agent has no tool by that name (bare, qualified or dotted).",
		Fix:     "List the agent's tools with heddle tools AGENT.",
		Example: "heddle call incident-triage no_such_tool"},
	{Code: ToolTimeout, Phase: PhaseCall,
		Meaning: "The supervisor's deadline (policies.tool_timeout_ms) ended the call.",
		Fix:     "Raise tool_timeout_ms, or set the server's timeout_ms shorter so the model sees a refusal instead.",
		Example: "policies: {tool_timeout_ms: 100}   # and the tool takes a second"},
	{Code: ToolUnavailable, Phase: PhaseCall,
		Meaning: "The tool's server is down; the supervisor is reconnecting it. The model reads this as a refusal and may try later.",
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
	{Code: TransportTimeout, Phase: PhaseCall,
		Meaning: "The server did not answer within its timeout_ms. The model reads this as a refusal and may retry.",
		Fix:     "Raise the server's timeout_ms if calls legitimately take longer.",
		Example: "timeout_ms: 100   # and the tool takes a second"},
}

// Catalog returns every documented code, in catalogue order.
func Catalog() []Entry { return slices.Clone(catalog) }

// Lookup returns the catalogue entry for code.
func Lookup(code Code) (Entry, bool) {
	i := slices.IndexFunc(catalog, func(e Entry) bool { return e.Code == code })
	if i < 0 {
		return Entry{}, false
	}
	return catalog[i], true
}
