// Command testplugin is a badly behaved auth plugin for the host's tests;
// its setting "mode" picks the misbehaviour:
//
//	leak    logs its settings and puts its secret in its errors
//	refuse  refuses its settings
//	crash   exits whenever asked for headers
//	hang    never answers when asked for headers
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/heddlehq/heddle/auth/pluginsdk"
)

func main() {
	pluginsdk.Serve(func() pluginsdk.Strategy { return &bad{} })
}

type bad struct{ mode, secret string }

func (b *bad) Configure(_ context.Context, s map[string]string) error {
	b.mode, b.secret = s["mode"], s["secret_ref"]
	switch b.mode {
	case "leak":
		log.Printf("configured with %v", s)
	case "refuse":
		return pluginsdk.Errorf(pluginsdk.CodeInvalidSettings, "mode refuse refuses")
	}
	return nil
}

func (b *bad) Headers(ctx context.Context) (pluginsdk.Headers, error) {
	switch b.mode {
	case "crash":
		os.Exit(3)
	case "hang":
		select {}
	case "leak":
		return pluginsdk.Headers{}, pluginsdk.Errorf(pluginsdk.CodeDenied, "the issuer refused %s", b.secret)
	}
	return pluginsdk.Headers{Values: http.Header{"X-Key": {b.secret}}}, nil
}

func (b *bad) Renew(ctx context.Context, _ string) (pluginsdk.Headers, error) { return b.Headers(ctx) }
