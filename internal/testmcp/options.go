package testmcp

import (
	"flag"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// DefaultName is the server implementation name used when [Options.Name] is empty.
const DefaultName = "heddle-testmcp"

// DefaultOversizedBytes is the size of the big tool's text when neither the
// call nor [Options.OversizedBytes] gives one: 1 MiB.
const DefaultOversizedBytes = 1 << 20

// Options configures a test server. The zero value (or a nil *Options) is a
// well-behaved server with the fixed tools and nothing else.
//
// Every field except Logger maps to one command-line flag of the same name in
// kebab case (Name ↔ --name, HangOnCall ↔ --hang-on-call, …); see
// [RegisterFlags]. List fields take comma-separated values, and the flag may
// be repeated.
//
// An Options must not be modified after it has been passed to [NewServer],
// [Handler], [ServeStdio] or [ListenAndServe].
type Options struct {
	// Name is the server implementation name sent in the handshake.
	// Default: "heddle-testmcp".
	Name string

	// Tools names extra tools. Each echoes its arguments back, as JSON text
	// and as structuredContent, and accepts any object. A name that is also a
	// fixed tool replaces it. Default: none.
	Tools []string

	// NumTools generates that many more echoing tools named tool_000,
	// tool_001, … in addition to Tools. Default: 0.
	NumTools int

	// NoFixedTools leaves out the fixed tools (echo, add, sleep, image, fail,
	// env, big, add_tool, remove_tool, pid, spawn_child), so that the server
	// has only Tools and NumTools. Default: false (the fixed tools are served).
	NoFixedTools bool

	// PageSize is the tools/list page size (go-sdk's ServerOptions.PageSize).
	// Default: 0, meaning go-sdk's default of 1000.
	PageSize int

	// HandshakeDelay delays the answer to initialize and server/discover.
	// Default: 0 (no delay).
	HandshakeDelay time.Duration

	// ListDelay delays the answer to every tools/list request.
	// Default: 0 (no delay).
	ListDelay time.Duration

	// FailList makes the server answer every tools/list request with a
	// JSON-RPC internal error: it connects, but cannot list its tools.
	// Default: false.
	FailList bool

	// FailListAfter, when positive, answers tools/list requests 1…N and
	// fails every later one as FailList does, so that a client lists the
	// tools once and fails to list them again (after a list_changed, say).
	// Each page is one request. Default: 0 (never).
	FailListAfter int

	// HangHandshake makes the server never answer initialize or
	// server/discover (the request waits until it is cancelled or the
	// connection ends). Default: false.
	HangHandshake bool

	// CrashAfter makes the server "crash" when tool call number CrashAfter+1
	// arrives: calls 1…CrashAfter are answered, the next is not. A process
	// ([ServeStdio], [ListenAndServe], the heddle-testmcp binary) exits with
	// status 3; an in-process server ([NewServer], [Handler]) answers that
	// call with a JSON-RPC error and closes the calling session, so later
	// calls fail with a closed connection. Default: 0 (never).
	CrashAfter int

	// HangOnCall names tools whose calls block until the call's context is
	// cancelled (by the client, or because the connection ended).
	// Default: none.
	HangOnCall []string

	// ListChangedEvery, when positive, starts a list_changed storm: on that
	// period a dummy tool named storm_tool is alternately added and removed,
	// so every connected client gets notifications/tools/list_changed. The
	// storm runs only while at least one session is connected.
	// Default: 0 (no storm).
	ListChangedEvery time.Duration

	// Destructive holds tool-name globs (path.Match syntax). Matching tools
	// are annotated destructiveHint: true, readOnlyHint: false; every other
	// tool is annotated readOnlyHint: true. Default: none (all read-only).
	Destructive []string

	// AnnotationShapes adds the tools of [AnnotationShapes], each listed
	// with annotations of one shape — none, a title only, readOnlyHint
	// true, false or absent × destructiveHint true, false or absent — as
	// they are written on the wire over stdio, Streamable HTTP and SSE.
	// Default: false.
	AnnotationShapes bool

	// OversizedBytes is the size of the big tool's text when the call does
	// not give bytes. Default: 0, meaning 1 MiB ([DefaultOversizedBytes]).
	OversizedBytes int

	// GarbageOnStdout makes [ServeStdio] write one line that is not JSON to
	// stdout before serving, to test a client's robustness. It has no effect
	// on other transports. Default: false.
	GarbageOnStdout bool

	// Stateless serves Streamable HTTP without sessions (the 2026-07-28
	// protocol era): go-sdk's StreamableHTTPOptions.Stateless. It has no
	// effect on stdio, in-memory or SSE. Default: false (stateful sessions,
	// which negotiate 2025-11-25).
	Stateless bool

	// JSONResponse answers each Streamable HTTP request with one
	// application/json body rather than an event stream: go-sdk's
	// StreamableHTTPOptions.JSONResponse. It has no effect on stdio,
	// in-memory or SSE. Default: false (event streams).
	JSONResponse bool

	// Define redefines extra tools (Tools, NumTools): each entry is
	// NAME=JSON, a JSON object of tool fields (description, title,
	// inputSchema, outputSchema, annotations) decoded over the generated
	// tool of that name, so that tests can change what one tool says. The
	// flag is repeated, once per entry (JSON holds commas). Default: none.
	Define []string
	// TraceTool adds the tool trace_context, which returns the W3C trace
	// context its call carried: traceparent and tracestate from the
	// request's params._meta and, over HTTP, from its headers. Default:
	// false.
	TraceTool bool

	// ExitAtStart makes a server process ([ServeStdio], [ListenAndServe])
	// write one line on stderr and exit with status 1 before serving: a
	// server that cannot start. Default: false.
	ExitAtStart bool

	// Dribble, when positive, writes the answer to the handshake
	// (initialize, server/discover) one byte at
	// a time, this long apart (a slow-loris handshake), over stdio and
	// HTTP. Default: 0 (written at once).
	Dribble time.Duration

	// HoldStream makes the Streamable HTTP endpoint hold every GET (the
	// standalone event stream a client opens once initialized) without
	// answering its headers, until the client gives up or the server
	// stops. Default: false.
	HoldStream bool

	// MalformedCalls answers every tools/call with a JSON-RPC response
	// whose result is not an object (valid JSON, not a valid answer), over
	// stdio and HTTP. Default: false.
	MalformedCalls bool

	// InvalidJSONCalls answers every tools/call with a line that is not
	// JSON (a response cut off in the middle), over stdio and HTTP.
	// Default: false.
	InvalidJSONCalls bool

	// CrashOnList makes the server "crash" when tools/list arrives, as
	// CrashAfter does for a tool call. Default: false.
	CrashOnList bool

	// RepeatCursor gives every tools/list page the same nextCursor, so
	// that a client that follows it never reaches the end. Default: false.
	RepeatCursor bool

	// BadNames adds echoing tools whose names model APIs refuse: with a
	// space, a slash, non-ASCII letters, and one 300 characters long
	// ([BadNames]). Default: false.
	BadNames bool

	// DeepSchema, when positive, lists one more tool, deep, whose input
	// schema nests an object property this many levels deep; it is
	// written into tools/list results on the wire (over stdio and HTTP),
	// since no JSON encoder of the server's would write it. Default: 0.
	DeepSchema int

	// Logger receives the server's own log lines (and go-sdk's). It is not a
	// flag: the heddle-testmcp binary logs to stderr. Default: nil, discard.
	Logger *slog.Logger
}

// Flag names, shared by [RegisterFlags], the heddle-testmcp binary and tests
// that build command lines.
const (
	FlagName             = "name"
	FlagTools            = "tools"
	FlagNumTools         = "num-tools"
	FlagNoFixedTools     = "no-fixed-tools"
	FlagPageSize         = "page-size"
	FlagHandshakeDelay   = "handshake-delay"
	FlagHangHandshake    = "hang-handshake"
	FlagListDelay        = "list-delay"
	FlagFailList         = "fail-list"
	FlagFailListAfter    = "fail-list-after"
	FlagCrashAfter       = "crash-after"
	FlagHangOnCall       = "hang-on-call"
	FlagListChangedEvery = "list-changed-every"
	FlagDestructive      = "destructive"
	FlagOversizedBytes   = "oversized-bytes"
	FlagGarbageOnStdout  = "garbage-on-stdout"
	FlagStateless        = "stateless"
	FlagJSONResponse     = "json-response"
	FlagDefine           = "define"
	FlagAnnotationShapes = "annotation-shapes"
	FlagTraceTool        = "trace-tool"
	FlagExitAtStart      = "exit-at-start"
	FlagDribble          = "dribble"
	FlagHoldStream       = "hold-stream"
	FlagMalformedCalls   = "malformed-calls"
	FlagInvalidJSONCalls = "invalid-json-calls"
	FlagRepeatCursor     = "repeat-cursor"
	FlagCrashOnList      = "crash-on-list"
	FlagBadNames         = "bad-names"
	FlagDeepSchema       = "deep-schema"
)

// RegisterFlags defines one flag per [Options] field (Logger aside) on fs and
// returns the Options they fill in when fs is parsed. The flags' defaults are
// the fields' documented defaults, so an unparsed result behaves as a nil
// *Options.
func RegisterFlags(fs *flag.FlagSet) *Options {
	o := &Options{}
	fs.StringVar(&o.Name, FlagName, DefaultName, "server implementation name")
	fs.Var((*listValue)(&o.Tools), FlagTools, "comma-separated `names` of extra tools that echo their arguments")
	fs.IntVar(&o.NumTools, FlagNumTools, 0, "generate `N` more echoing tools named tool_000, tool_001, …")
	fs.BoolVar(&o.NoFixedTools, FlagNoFixedTools, false, "leave out the fixed tools (echo, add, sleep, image, fail, env, big, add_tool, remove_tool, pid, spawn_child)")
	fs.IntVar(&o.PageSize, FlagPageSize, 0, "tools/list page `size` (0: go-sdk default, 1000)")
	fs.DurationVar(&o.HandshakeDelay, FlagHandshakeDelay, 0, "delay before answering initialize and server/discover")
	fs.DurationVar(&o.ListDelay, FlagListDelay, 0, "delay before answering tools/list")
	fs.BoolVar(&o.FailList, FlagFailList, false, "answer every tools/list with a JSON-RPC error")
	fs.IntVar(&o.FailListAfter, FlagFailListAfter, 0, "answer tools/list requests 1…`N`, fail later ones (0: never)")
	fs.BoolVar(&o.HangHandshake, FlagHangHandshake, false, "never answer initialize or server/discover")
	fs.IntVar(&o.CrashAfter, FlagCrashAfter, 0, "exit with status 3 when tool call `N`+1 arrives (0: never)")
	fs.Var((*listValue)(&o.HangOnCall), FlagHangOnCall, "comma-separated tool `names` whose calls block until cancelled")
	fs.DurationVar(&o.ListChangedEvery, FlagListChangedEvery, 0, "add or remove a dummy tool on this period (a list_changed storm)")
	fs.Var((*listValue)(&o.Destructive), FlagDestructive, "comma-separated tool-name `globs` to annotate destructiveHint: true (others are readOnlyHint: true)")
	fs.IntVar(&o.OversizedBytes, FlagOversizedBytes, 0, "default size in `bytes` of the big tool's text (0: 1 MiB)")
	fs.BoolVar(&o.GarbageOnStdout, FlagGarbageOnStdout, false, "stdio: write a non-JSON line to stdout before serving")
	fs.BoolVar(&o.Stateless, FlagStateless, false, "Streamable HTTP: serve without sessions (2026-07-28 protocol era)")
	fs.BoolVar(&o.JSONResponse, FlagJSONResponse, false, "Streamable HTTP: answer with application/json bodies rather than event streams")
	fs.Var((*repeatValue)(&o.Define), FlagDefine, "`NAME=JSON`: decode a JSON object of tool fields over the extra tool NAME (repeat the flag for more)")
	fs.BoolVar(&o.AnnotationShapes, FlagAnnotationShapes, false, "add the hints_* tools, each listed with annotations of one shape on the wire")
	fs.BoolVar(&o.TraceTool, FlagTraceTool, false, "add the tool trace_context, which returns the trace context its call carried")
	fs.BoolVar(&o.ExitAtStart, FlagExitAtStart, false, "write one line on stderr and exit with status 1 before serving")
	fs.DurationVar(&o.Dribble, FlagDribble, 0, "write the answer to initialize one byte every `duration` (a slow-loris handshake)")
	fs.BoolVar(&o.HoldStream, FlagHoldStream, false, "Streamable HTTP: hold every GET (the standalone event stream) without answering its headers")
	fs.BoolVar(&o.MalformedCalls, FlagMalformedCalls, false, "answer every tools/call with a result that is not an object")
	fs.BoolVar(&o.InvalidJSONCalls, FlagInvalidJSONCalls, false, "answer every tools/call with a line that is not JSON")
	fs.BoolVar(&o.RepeatCursor, FlagRepeatCursor, false, "give every tools/list page the same nextCursor")
	fs.BoolVar(&o.CrashOnList, FlagCrashOnList, false, "exit with status 3 when tools/list arrives")
	fs.BoolVar(&o.BadNames, FlagBadNames, false, "add tools whose names model APIs refuse (a space, a slash, non-ASCII, 300 characters)")
	fs.IntVar(&o.DeepSchema, FlagDeepSchema, 0, "list a tool deep whose input schema nests `N` levels")
	return o
}

// Args returns the command-line flags that reproduce o (Logger aside), for
// starting the heddle-testmcp binary. Fields at their defaults are left out.
// A nil o gives no flags.
func (o *Options) Args() []string {
	if o == nil {
		return nil
	}
	var args []string
	add := func(name, value string) { args = append(args, "--"+name+"="+value) }
	if o.Name != "" && o.Name != DefaultName {
		add(FlagName, o.Name)
	}
	if len(o.Tools) > 0 {
		add(FlagTools, strings.Join(o.Tools, ","))
	}
	if o.NumTools != 0 {
		add(FlagNumTools, strconv.Itoa(o.NumTools))
	}
	if o.NoFixedTools {
		add(FlagNoFixedTools, "true")
	}
	if o.PageSize != 0 {
		add(FlagPageSize, strconv.Itoa(o.PageSize))
	}
	if o.HandshakeDelay != 0 {
		add(FlagHandshakeDelay, o.HandshakeDelay.String())
	}
	if o.ListDelay != 0 {
		add(FlagListDelay, o.ListDelay.String())
	}
	if o.FailList {
		add(FlagFailList, "true")
	}
	if o.FailListAfter != 0 {
		add(FlagFailListAfter, strconv.Itoa(o.FailListAfter))
	}
	if o.HangHandshake {
		add(FlagHangHandshake, "true")
	}
	if o.CrashAfter != 0 {
		add(FlagCrashAfter, strconv.Itoa(o.CrashAfter))
	}
	if len(o.HangOnCall) > 0 {
		add(FlagHangOnCall, strings.Join(o.HangOnCall, ","))
	}
	if o.ListChangedEvery != 0 {
		add(FlagListChangedEvery, o.ListChangedEvery.String())
	}
	if len(o.Destructive) > 0 {
		add(FlagDestructive, strings.Join(o.Destructive, ","))
	}
	if o.OversizedBytes != 0 {
		add(FlagOversizedBytes, strconv.Itoa(o.OversizedBytes))
	}
	if o.GarbageOnStdout {
		add(FlagGarbageOnStdout, "true")
	}
	if o.Stateless {
		add(FlagStateless, "true")
	}
	if o.JSONResponse {
		add(FlagJSONResponse, "true")
	}
	for _, d := range o.Define {
		add(FlagDefine, d)
	}
	if o.AnnotationShapes {
		add(FlagAnnotationShapes, "true")
	}
	if o.TraceTool {
		add(FlagTraceTool, "true")
	}
	if o.ExitAtStart {
		add(FlagExitAtStart, "true")
	}
	if o.Dribble != 0 {
		add(FlagDribble, o.Dribble.String())
	}
	if o.HoldStream {
		add(FlagHoldStream, "true")
	}
	if o.MalformedCalls {
		add(FlagMalformedCalls, "true")
	}
	if o.InvalidJSONCalls {
		add(FlagInvalidJSONCalls, "true")
	}
	if o.RepeatCursor {
		add(FlagRepeatCursor, "true")
	}
	if o.CrashOnList {
		add(FlagCrashOnList, "true")
	}
	if o.BadNames {
		add(FlagBadNames, "true")
	}
	if o.DeepSchema != 0 {
		add(FlagDeepSchema, strconv.Itoa(o.DeepSchema))
	}
	return args
}

// repeatValue is a flag.Value whose every use appends one value whole.
type repeatValue []string

func (r *repeatValue) String() string {
	if r == nil {
		return ""
	}
	return strings.Join(*r, " ")
}

func (r *repeatValue) Set(s string) error { *r = append(*r, s); return nil }

// listValue is a flag.Value for a comma-separated list of names. Repeating
// the flag appends.
type listValue []string

func (l *listValue) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *listValue) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

// name returns the implementation name with its default applied.
func (o *Options) name() string {
	if o.Name == "" {
		return DefaultName
	}
	return o.Name
}

// oversizedBytes returns the big tool's default size with its default applied.
func (o *Options) oversizedBytes() int {
	if o.OversizedBytes <= 0 {
		return DefaultOversizedBytes
	}
	return o.OversizedBytes
}
