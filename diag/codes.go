package diag

// Code is a stable, documented identifier of a kind of problem. Codes are
// never renamed or reused; new ones may be added.
type Code string

// Phase says when a code can be reported.
type Phase string

const (
	// PhaseCompile codes come from loading and compiling configuration: no
	// network, no secret values.
	PhaseCompile Phase = "compile"
	// PhaseStartup codes come from opening the runtime.
	PhaseStartup Phase = "startup"
	// PhaseCall codes come from one tool call.
	PhaseCall Phase = "call"
)

// Compile-time codes.
const (
	ConfigParse            Code = "CONFIG_PARSE"
	ConfigKeyUnknown       Code = "CONFIG_KEY_UNKNOWN"
	ConfigValueInvalid     Code = "CONFIG_VALUE_INVALID"
	ConfigLimit            Code = "CONFIG_LIMIT"
	AgentNameMismatch      Code = "AGENT_NAME_MISMATCH"
	CapabilityKindUnknown  Code = "CAPABILITY_KIND_UNKNOWN"
	MCPServerUnknown       Code = "MCP_SERVER_UNKNOWN"
	MCPTransportInvalid    Code = "MCP_TRANSPORT_INVALID"
	MCPURLInvalid          Code = "MCP_URL_INVALID"
	MCPAuthConflict        Code = "MCP_AUTH_CONFLICT"
	MCPCredentialsInline   Code = "MCP_CREDENTIALS_INLINE"
	MCPAuthStrategyUnknown Code = "MCP_AUTH_STRATEGY_UNKNOWN"
	MCPStdioAuth           Code = "MCP_STDIO_AUTH"
	MCPEnvInvalid          Code = "MCP_ENV_INVALID"
	MCPConnectionConflict  Code = "MCP_CONNECTION_CONFLICT"
	MCPFilterInvalid       Code = "MCP_FILTER_INVALID"
	RemoteClientsUnknown   Code = "REMOTE_CLIENTS_UNKNOWN"
	AuthPluginInvalid      Code = "AUTH_PLUGIN_INVALID"
	UsecaseUnknown         Code = "USECASE_UNKNOWN"
	SQLSourceUnknown       Code = "SQL_SOURCE_UNKNOWN"
	SQLSourceInvalid       Code = "SQL_SOURCE_INVALID"
	SQLStatementUnknown    Code = "SQL_STATEMENT_UNKNOWN"
	SQLStatementInvalid    Code = "SQL_STATEMENT_INVALID"
	A2AAgentUnknown        Code = "A2A_AGENT_UNKNOWN"
	A2AURLInvalid          Code = "A2A_URL_INVALID"
	PolicyInvalid          Code = "POLICY_INVALID"
	TimeoutRace            Code = "TIMEOUT_RACE"
)

// Compile-time codes added after the first release.
const (
	ServeAuthInvalid Code = "SERVE_AUTH_INVALID"
	// ServeStateInvalid: serve.state is incomplete or wrong.
	ServeStateInvalid Code = "SERVE_STATE_INVALID"
	// ToolOverrideConflict: two globs of one length in a tools: map of
	// overrides can match the same tool and classify it differently.
	ToolOverrideConflict Code = "TOOL_OVERRIDE_CONFLICT"
)

// Start-up codes.
const (
	SecretUnresolved       Code = "SECRET_UNRESOLVED"
	SecretEmpty            Code = "SECRET_EMPTY"
	MCPHeadersRefInvalid   Code = "MCP_HEADERS_REF_INVALID"
	MCPAuthStrategyInvalid Code = "MCP_AUTH_STRATEGY_INVALID"
	MCPServerUnreachable   Code = "MCP_SERVER_UNREACHABLE"
	A2AAgentUnreachable    Code = "A2A_AGENT_UNREACHABLE"
	SQLNotReadonly         Code = "SQL_NOT_READONLY"
	SQLSourceUnreachable   Code = "SQL_SOURCE_UNREACHABLE"
	MCPFilterUnmatched     Code = "MCP_FILTER_UNMATCHED"
	ToolNameConflict       Code = "TOOL_NAME_CONFLICT"
	ToolDefinitionChanged  Code = "TOOL_DEFINITION_CHANGED"
	StartupTimeout         Code = "STARTUP_TIMEOUT"
)

// Start-up codes added after the first release.
const (
	MCPAuthRejected      Code = "MCP_AUTH_REJECTED"
	MCPListFailed        Code = "MCP_LIST_FAILED"
	LockInvalid          Code = "LOCK_INVALID"
	ListenFailed         Code = "LISTEN_FAILED"
	ServeAuthUnreachable Code = "SERVE_AUTH_UNREACHABLE"
	MCPLazyUnpinned      Code = "MCP_LAZY_UNPINNED"
	// ToolDescriptorSuspicious: a tool's definition holds hidden Unicode
	// or instructions aimed at the model, or its name shadows another
	// source's tool (OWASP MCP03, tool poisoning).
	ToolDescriptorSuspicious Code = "TOOL_DESCRIPTOR_SUSPICIOUS"
)

// Call-time codes of serve's HTTP invoke API.
const (
	RequestInvalid  Code = "REQUEST_INVALID"
	RequestTooLarge Code = "REQUEST_TOO_LARGE"
	Unauthenticated Code = "UNAUTHENTICATED"
	Forbidden       Code = "FORBIDDEN"
	TooBusy         Code = "TOO_BUSY"
	NotFound        Code = "NOT_FOUND"
)

// Call-time codes.
const (
	ToolUnknown          Code = "TOOL_UNKNOWN"
	ToolTimeout          Code = "TOOL_TIMEOUT"
	ToolUnavailable      Code = "TOOL_UNAVAILABLE"
	ToolDenied           Code = "TOOL_DENIED"
	ToolApprovalRequired Code = "TOOL_APPROVAL_REQUIRED"
	TransportTimeout     Code = "TRANSPORT_TIMEOUT"
)

// Call-time codes added after the first release.
const (
	AgentUnknown    Code = "AGENT_UNKNOWN"
	ToolArgsInvalid Code = "TOOL_ARGS_INVALID"
	SQLParamUnbound Code = "SQL_PARAM_UNBOUND"
	ResultTooLarge  Code = "RESULT_TOO_LARGE"
	ShuttingDown    Code = "SHUTTING_DOWN"
	ToolRateLimited Code = "TOOL_RATE_LIMITED"
)

// Codes of MCP 2026-07-28's requests for input (input_required results).
const (
	// MCPInputUnanswered: a server asked, during a call, for input heddle
	// cannot give.
	MCPInputUnanswered Code = "MCP_INPUT_UNANSWERED"
	// MCPCapabilityRequired: a server refused a call for a client
	// capability its caller did not declare (-32021).
	MCPCapabilityRequired Code = "MCP_CAPABILITY_REQUIRED"
	// RequestStateInvalid: the facade refused a requestState it did not
	// seal, that was altered, used already, expired, or sealed for another
	// call.
	RequestStateInvalid Code = "REQUEST_STATE_INVALID"
)

// Codes of calls made as the caller (auth: {kind: oauth, flow:
// token_exchange}).
const (
	// CallerTokenRequired: a call to a server that is called as the
	// caller was made for a caller whose token heddle does not hold.
	CallerTokenRequired Code = "CALLER_TOKEN_REQUIRED"
	// TokenExchangeRefused: the identity provider refused to exchange the
	// caller's token for one of the server's (RFC 8693).
	TokenExchangeRefused Code = "TOKEN_EXCHANGE_REFUSED"
)

// Codes of a fleet's shared state (serve.state).
const (
	// StateUnavailable: the store a fleet shares cannot be reached, and
	// what needed it was refused.
	StateUnavailable Code = "STATE_UNAVAILABLE"
)

// Codes of the audit trail (audit:, heddle audit verify).
const (
	// AuditInvalid: the audit: section lacks its path or its key.
	AuditInvalid Code = "AUDIT_INVALID"
	// AuditChainBroken: an audit file's chain does not hold at a record.
	AuditChainBroken Code = "AUDIT_CHAIN_BROKEN"
)
