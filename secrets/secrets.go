// Package secrets resolves secret references — ${secrets:/path},
// ${env:NAME}, ${file:PATH} — at start-up. The compiler only ever checks
// their syntax; values exist in memory only from here on, and no error of
// this package contains one.
//
//	r := secrets.New(secrets.Options{Dir: "/run/secrets"})
//	token, err := r.Resolve(ctx, setting.ParseRef("${secrets:/heddle/catalog/token}"))
//	// err carries SECRET_UNRESOLVED or SECRET_EMPTY and names the reference;
//	// token logs and prints as [redacted], and token.Reveal() is the secret
//	req.Header.Set("Authorization", "Bearer "+token.Reveal())
package secrets

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/heddlehq/heddle/config/setting"
	"github.com/heddlehq/heddle/diag"
)

// Resolver turns a reference into its value, a Value that redacts itself
// wherever it is printed. Implementations must be safe for concurrent use
// and must never put a value in an error.
type Resolver interface {
	Resolve(ctx context.Context, ref setting.Ref) (Value, error)
}

// Options configure the default resolver.
type Options struct {
	// Dir is where ${secrets:/a/b} is read from: <Dir>/a/b.
	Dir string
	// LookupEnv reads ${env:NAME}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ReadFile reads ${file:PATH} and mounted secrets; nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

// New returns the default resolver: environment variables, files, and a
// directory of mounted secrets (the Kubernetes and Docker convention).
// Trailing newlines of file contents are dropped.
func New(opts Options) Resolver {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.ReadFile == nil {
		opts.ReadFile = os.ReadFile
	}
	return &resolver{opts}
}

type resolver struct{ opts Options }

func (r *resolver) Resolve(_ context.Context, ref setting.Ref) (Value, error) {
	v, err := r.resolve(ref)
	if err != nil {
		return Value{}, err
	}
	return NewValue(v), nil
}

func (r *resolver) resolve(ref setting.Ref) (string, error) {
	if !ref.Valid() {
		return "", diag.New(diag.SecretUnresolved, "not a valid secret reference")
	}
	var v string
	switch ref.Scheme {
	case setting.SchemeEnv:
		val, ok := r.opts.LookupEnv(ref.Name)
		if !ok {
			return "", diag.New(diag.SecretUnresolved, "%s: the environment variable is not set", ref)
		}
		v = val
	case setting.SchemeFile, setting.SchemeSecrets:
		path := ref.Name
		if ref.Scheme == setting.SchemeSecrets {
			if r.opts.Dir == "" {
				return "", diag.New(diag.SecretUnresolved, "%s: ai.secrets.dir is not set", ref)
			}
			path = filepath.Join(r.opts.Dir, filepath.FromSlash(strings.TrimPrefix(ref.Name, "/")))
		}
		b, err := r.opts.ReadFile(path)
		if err != nil {
			return "", diag.Wrap(diag.SecretUnresolved, err, "%s: %s", ref, readReason(err))
		}
		v = strings.TrimRight(string(b), "\r\n")
	default:
		return "", diag.New(diag.SecretUnresolved, "%s: unknown scheme", ref)
	}
	if v == "" {
		return "", diag.New(diag.SecretEmpty, "%s resolved to an empty value", ref)
	}
	return v, nil
}

func readReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return "cannot be read"
}

// Func adapts a function to a Resolver.
type Func func(ctx context.Context, ref setting.Ref) (Value, error)

// Resolve calls f.
func (f Func) Resolve(ctx context.Context, ref setting.Ref) (Value, error) { return f(ctx, ref) }
