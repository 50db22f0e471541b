package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"github.com/heddlehq/heddle/auth/pluginsdk"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// hostPlugin is the host side of the go-plugin plugin: it hands out a wire
// client over the plugin's gRPC connection.
type hostPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (hostPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error {
	return errors.New("auth/plugin: the server side is the plugin's")
}

func (hostPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &wire{cc: cc}, nil
}

// pluginSet is the set the host dispenses from.
var pluginSet = goplugin.PluginSet{pluginsdk.PluginName: hostPlugin{}}

// wire calls one plugin process (see pluginsdk's protocol description).
type wire struct {
	cc *grpc.ClientConn
}

// pluginError is a failure the strategy reported, with its code. Its message
// has been redacted by the time anyone sees it.
type pluginError struct {
	Code    pluginsdk.ErrorCode
	Message string
}

func (e *pluginError) Error() string { return string(e.Code) + ": " + e.Message }

// brokenError is a call that failed because the process or the connection
// broke (or never answered): the process is restarted on the next need.
type brokenError struct{ err error }

func (e *brokenError) Error() string { return "the plugin process did not answer: " + e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// result is what Headers and Renew return.
type result struct {
	header    http.Header
	expiresAt time.Time
}

func (w *wire) configure(ctx context.Context, instance string, settings map[string]string) error {
	s := make(map[string]*structpb.Value, len(settings))
	for k, v := range settings {
		s[k] = structpb.NewStringValue(v)
	}
	in := &structpb.Struct{Fields: map[string]*structpb.Value{
		"instance": structpb.NewStringValue(instance),
		"settings": structpb.NewStructValue(&structpb.Struct{Fields: s}),
	}}
	_, err := w.invoke(ctx, pluginsdk.MethodConfigure, in)
	return err
}

func (w *wire) headers(ctx context.Context, instance string) (result, error) {
	in := &structpb.Struct{Fields: map[string]*structpb.Value{"instance": structpb.NewStringValue(instance)}}
	out, err := w.invoke(ctx, pluginsdk.MethodHeaders, in)
	if err != nil {
		return result{}, err
	}
	return decodeHeaders(out)
}

func (w *wire) renew(ctx context.Context, instance, reason string) (result, error) {
	in := &structpb.Struct{Fields: map[string]*structpb.Value{
		"instance": structpb.NewStringValue(instance),
		"reason":   structpb.NewStringValue(reason),
	}}
	out, err := w.invoke(ctx, pluginsdk.MethodRenew, in)
	if err != nil {
		return result{}, err
	}
	return decodeHeaders(out)
}

// rpcCalls counts calls made to plugin processes (tests assert the fast
// path makes none).
var rpcCalls atomic.Int64

// invoke makes one call. A gRPC failure is a *brokenError unless the
// caller's ctx ended it; a failure the strategy reports is a *pluginError.
func (w *wire) invoke(ctx context.Context, method string, in *structpb.Struct) (*structpb.Struct, error) {
	rpcCalls.Add(1)
	out := new(structpb.Struct)
	if err := w.cc.Invoke(ctx, method, in, out); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch status.Code(err) {
		case codes.DeadlineExceeded, codes.Canceled:
			return nil, err
		}
		return nil, &brokenError{err: err}
	}
	if e := out.GetFields()["error"].GetStructValue(); e != nil {
		code := pluginsdk.ErrorCode(e.GetFields()["code"].GetStringValue())
		if code == "" {
			code = pluginsdk.CodeInternal
		}
		return nil, &pluginError{Code: code, Message: e.GetFields()["message"].GetStringValue()}
	}
	return out, nil
}

// refusedHeaders are headers a strategy may not set: framing, and the MCP
// transport's own.
func refusedHeader(name string) bool {
	switch name {
	case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer":
		return true
	}
	return strings.HasPrefix(name, "Mcp-")
}

func decodeHeaders(out *structpb.Struct) (result, error) {
	f := out.GetFields()
	var r result
	r.header = http.Header{}
	for name, v := range f["headers"].GetStructValue().GetFields() {
		if !httpguts.ValidHeaderFieldName(name) {
			return result{}, &pluginError{Code: pluginsdk.CodeInternal, Message: fmt.Sprintf("the strategy returned an invalid header name %q", name)}
		}
		canon := http.CanonicalHeaderKey(name)
		if refusedHeader(canon) {
			return result{}, &pluginError{Code: pluginsdk.CodeInternal, Message: fmt.Sprintf("the strategy may not set header %s", canon)}
		}
		for _, item := range v.GetListValue().GetValues() {
			val := item.GetStringValue()
			if !httpguts.ValidHeaderFieldValue(val) {
				// The value is a credential: name the header only.
				return result{}, &pluginError{Code: pluginsdk.CodeInternal, Message: fmt.Sprintf("the strategy returned an invalid value for header %s (value not shown)", canon)}
			}
			r.header[canon] = append(r.header[canon], val)
		}
	}
	if len(r.header) == 0 {
		return result{}, &pluginError{Code: pluginsdk.CodeInternal, Message: "the strategy returned no headers"}
	}
	for k, vs := range r.header {
		r.header[k] = vs[:len(vs):len(vs)] // an append by a later hand copies, never writes into the cache
	}
	if s := f["expires_at"].GetStringValue(); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return result{}, &pluginError{Code: pluginsdk.CodeInternal, Message: "the strategy returned a malformed expires_at"}
		}
		r.expiresAt = t
	}
	return r, nil
}
