package grants

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"regexp"
	"slices"

	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/plan"
)

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnv validates the env: block of a child process (a stdio server or
// an auth plugin): names must be variable names, values must be values.
func CheckEnv(env map[string]*config.EnvValue, p string) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, k := range slices.Sorted(maps.Keys(env)) {
		kp := config.Join(p, k)
		if !envKeyRE.MatchString(k) {
			ds = append(ds, diag.Errorf(diag.MCPEnvInvalid, kp, "%q is not a valid environment variable name", k))
			continue
		}
		v := env[k]
		if v == nil {
			continue
		}
		if v.Problem != "" {
			ds = append(ds, diag.Errorf(diag.MCPEnvInvalid, kp, "the value cannot be an environment value: %s (value redacted)", v.Problem).
				WithDetail("this is the mark of a broken interpolation; write a plain value or a reference such as ${secrets:/path}"))
		}
	}
	return ds
}

// EnvVars converts a child's configured env values to the plan's form:
// references stay references, literals are shown only as a hash.
func EnvVars(env map[string]*config.EnvValue) map[string]plan.EnvVar {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]plan.EnvVar, len(env))
	for k, v := range env {
		switch {
		case v == nil:
			out[k] = plan.EnvVar{LiteralSHA256: hash("")}
		case v.Ref != nil:
			out[k] = plan.EnvVar{Ref: v.Ref}
		default:
			out[k] = plan.EnvVar{Literal: v.Literal, LiteralSHA256: hash(v.Literal)}
		}
	}
	return out
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}
