package secrets_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/secrets"
)

// A resolved secret logs and prints as [redacted]; Reveal is the one way
// to its value.
func ExampleValue() {
	r := secrets.New(secrets.Options{LookupEnv: func(string) (string, bool) { return "s3cret", true }})
	token, err := r.Resolve(context.Background(), config.ParseRef("${env:CATALOG_TOKEN}"))
	if err != nil {
		fmt.Println(err)
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	log.Info("resolved", "token", token)
	fmt.Printf("%v %q\n", token, token)
	fmt.Println(len(token.Reveal()))
	// Output:
	// level=INFO msg=resolved token=[redacted]
	// [redacted] [redacted]
	// 6
}
