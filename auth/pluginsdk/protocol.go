package pluginsdk

import (
	"context"
	"fmt"
	"log"
	"runtime/debug"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// The wire protocol, for heddle's host side (auth/plugin) and for anyone
// implementing a plugin without this package.
//
// Transport: go-plugin over gRPC only, handshake [Handshake], plugin name
// [PluginName]. The service [ServiceName] has three unary methods whose
// request and response are google.protobuf.Struct values, so that neither
// side needs generated code:
//
//	Configure  {"instance": "1", "settings": {"session_url": "…", …}}
//	         → {} or {"error": {"code": "INVALID_SETTINGS", "message": "…"}}
//	Headers    {"instance": "1"}
//	         → {"headers": {"Authorization": ["Bearer …"]}, "expires_at": "2026-01-02T15:04:05.999Z"}
//	           or {"error": {…}}
//	Renew      {"instance": "1", "reason": "expired" | "unauthorized"}
//	         → as Headers
//
// instance names one configured strategy in the process (heddle picks the
// names); expires_at is RFC 3339 and absent when the headers do not expire.
// Failures a strategy reports travel in the response's error, with an
// [ErrorCode]; a gRPC error means the call or the process broke.
const (
	// MagicCookieKey and MagicCookieValue are go-plugin's handshake: a
	// binary started by anything else refuses to run.
	MagicCookieKey   = "HEDDLE_AUTH_PLUGIN"
	MagicCookieValue = "4f0c2a7e-9b1d-4e63-a8f5-heddle-auth-strategy"
	// ProtocolVersion is this protocol's version.
	ProtocolVersion = 1
	// PluginName is the strategy's name in go-plugin's plugin set.
	PluginName = "strategy"
	// ServiceName is the gRPC service.
	ServiceName = "heddle.auth.v1.Strategy"

	MethodConfigure = "/" + ServiceName + "/Configure"
	MethodHeaders   = "/" + ServiceName + "/Headers"
	MethodRenew     = "/" + ServiceName + "/Renew"
)

// Handshake is the go-plugin handshake both sides use.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// Serve serves strategies to heddle over the plugin protocol and returns
// when heddle ends the process's session. newStrategy is called once per
// server that names the plugin, before that server's Configure: each server
// has a strategy value of its own, although all share this process. A
// binary run by hand, without heddle's handshake, prints a short notice and
// exits with status 1.
func Serve(newStrategy func() Strategy) {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         goplugin.PluginSet{PluginName: &grpcPlugin{srv: newServer(newStrategy)}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

// grpcPlugin is the plugin-side go-plugin plugin: gRPC only.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	srv *server
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, p.srv)
	return nil
}

func (p *grpcPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("pluginsdk: the client side is heddle's")
}

// service is the handler type of serviceDesc.
type service interface {
	configure(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error)
	headers(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error)
	renew(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error)
}

// serviceDesc is the hand-written service description (no protoc).
var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*service)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Configure", Handler: unary(MethodConfigure, service.configure)},
		{MethodName: "Headers", Handler: unary(MethodHeaders, service.headers)},
		{MethodName: "Renew", Handler: unary(MethodRenew, service.renew)},
	},
	Metadata: "heddle/auth/pluginsdk/protocol.go",
}

func unary(full string, call func(service, context.Context, *structpb.Struct) (*structpb.Struct, error)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(structpb.Struct)
		if err := dec(in); err != nil {
			return nil, err
		}
		if icpt == nil {
			return call(srv.(service), ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: full}
		return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return call(srv.(service), ctx, req.(*structpb.Struct))
		})
	}
}

// server holds the process's configured strategies by instance name.
type server struct {
	newStrategy func() Strategy

	mu sync.Mutex
	m  map[string]Strategy
}

func newServer(newStrategy func() Strategy) *server {
	return &server{newStrategy: newStrategy, m: map[string]Strategy{}}
}

func (s *server) configure(ctx context.Context, in *structpb.Struct) (out *structpb.Struct, _ error) {
	defer recoverTo(&out)
	f := in.GetFields()
	id := f["instance"].GetStringValue()
	settings := map[string]string{}
	for k, v := range f["settings"].GetStructValue().GetFields() {
		settings[k] = v.GetStringValue()
	}
	st := s.newStrategy()
	if st == nil {
		return errorResponse(CodeInternal, "the plugin made no strategy"), nil
	}
	if err := st.Configure(ctx, settings); err != nil {
		return errorResponse(codeOf(err, CodeInvalidSettings)), nil
	}
	s.mu.Lock()
	s.m[id] = st
	s.mu.Unlock()
	return &structpb.Struct{Fields: map[string]*structpb.Value{}}, nil
}

func (s *server) lookup(in *structpb.Struct) (Strategy, *structpb.Struct) {
	id := in.GetFields()["instance"].GetStringValue()
	s.mu.Lock()
	st := s.m[id]
	s.mu.Unlock()
	if st == nil {
		return nil, errorResponse(CodeNotConfigured, fmt.Sprintf("no strategy %q in this process", id))
	}
	return st, nil
}

func (s *server) headers(ctx context.Context, in *structpb.Struct) (out *structpb.Struct, _ error) {
	defer recoverTo(&out)
	st, refused := s.lookup(in)
	if refused != nil {
		return refused, nil
	}
	h, err := st.Headers(ctx)
	return headersResponse(h, err), nil
}

func (s *server) renew(ctx context.Context, in *structpb.Struct) (out *structpb.Struct, _ error) {
	defer recoverTo(&out)
	st, refused := s.lookup(in)
	if refused != nil {
		return refused, nil
	}
	h, err := st.Renew(ctx, in.GetFields()["reason"].GetStringValue())
	return headersResponse(h, err), nil
}

// logf is where this package logs: the log package, whose lines reach
// heddle's log (tests silence it).
var logf = log.Printf

// recoverTo turns a strategy's panic into an INTERNAL error response. The
// panic's value may hold a secret, so it goes to the plugin's log (which
// heddle logs at DEBUG, redacted), not into the response.
func recoverTo(out **structpb.Struct) {
	if r := recover(); r != nil {
		logf("strategy panicked: %v\n%s", r, debug.Stack())
		*out = errorResponse(CodeInternal, "the strategy panicked (see the plugin's log)")
	}
}

func errorResponse(code ErrorCode, msg string) *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"error": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"code":    structpb.NewStringValue(string(code)),
			"message": structpb.NewStringValue(msg),
		}}),
	}}
}

func headersResponse(h Headers, err error) *structpb.Struct {
	if err != nil {
		return errorResponse(codeOf(err, CodeInternal))
	}
	hs := make(map[string]*structpb.Value, len(h.Values))
	for name, vs := range h.Values {
		list := make([]*structpb.Value, len(vs))
		for i, v := range vs {
			list[i] = structpb.NewStringValue(v)
		}
		hs[name] = structpb.NewListValue(&structpb.ListValue{Values: list})
	}
	out := &structpb.Struct{Fields: map[string]*structpb.Value{
		"headers": structpb.NewStructValue(&structpb.Struct{Fields: hs}),
	}}
	if !h.ExpiresAt.IsZero() {
		out.Fields["expires_at"] = structpb.NewStringValue(h.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	return out
}
