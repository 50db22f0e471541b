package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// redactor blanks known secret values — the resolved settings heddle gave
// a plugin, and the header values it returned — out of text that came from
// the plugin (its error messages and log lines). It is a second line of
// defence: a strategy should put no secret in either.
type redactor struct {
	mu   sync.RWMutex
	vals map[string]struct{}
	r    *strings.Replacer
}

const redacted = "[REDACTED]"

// minSecretLen is the shortest value redacted: shorter ones would blank
// ordinary words out of messages, and are no credential anyway.
const minSecretLen = 6

// add records values to redact. A header value like "Bearer <token>" adds
// its credential part (after the scheme) too.
func (r *redactor) add(vals ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.vals == nil {
		r.vals = map[string]struct{}{}
	}
	changed := false
	for _, v := range vals {
		parts := []string{v}
		if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			parts = append(parts, strings.TrimSpace(cred))
		}
		for _, part := range parts {
			if _, ok := r.vals[part]; len(part) >= minSecretLen && !ok {
				r.vals[part] = struct{}{}
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	// Longest first, so a value containing another is blanked whole.
	olds := make([]string, 0, len(r.vals))
	for v := range r.vals {
		olds = append(olds, v)
	}
	sortByLenDesc(olds)
	pairs := make([]string, 0, 2*len(olds))
	for _, v := range olds {
		pairs = append(pairs, v, redacted)
	}
	r.r = strings.NewReplacer(pairs...)
}

func (r *redactor) redact(s string) string {
	r.mu.RLock()
	rep := r.r
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// redactValue returns v, a decoded JSON value, with every string in it,
// keys of objects included, redacted: a plugin's log line may hold a
// secret at any depth, or as a key.
func (r *redactor) redactValue(v any) any {
	switch v := v.(type) {
	case string:
		return r.redact(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = r.redactValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[r.redact(k)] = r.redactValue(e)
		}
		return out
	}
	return v
}

func sortByLenDesc(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && len(s[j]) > len(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// hclogFor returns the hclog logger go-plugin logs through (its own events
// and the plugin's stderr lines): JSON lines, turned into slog records on
// log, redacted.
func hclogFor(log *slog.Logger, plugin string, red *redactor) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "auth-plugin",
		Level:      hclog.Debug,
		JSONFormat: true,
		Output:     &slogWriter{log: log, plugin: plugin, red: red},
	})
}

// slogWriter receives hclog's JSON lines.
type slogWriter struct {
	log    *slog.Logger
	plugin string
	red    *redactor

	mu  sync.Mutex
	buf []byte
}

func (w *slogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *slogWriter) line(b []byte) {
	if !w.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		w.log.Debug("auth plugin: "+w.red.redact(string(b)), "plugin", w.plugin)
		return
	}
	// Everything go-plugin says, and every line the plugin writes, is
	// DEBUG: heddle reports the plugin's start, crash and restart itself.
	msg, _ := m["@message"].(string)
	attrs := []any{"plugin", w.plugin}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(k, "@") {
			continue
		}
		v := w.red.redactValue(m[k])
		if k == "plugin" {
			k = "path" // go-plugin's name for the binary
		}
		attrs = append(attrs, w.red.redact(k), v)
	}
	w.log.Debug("auth plugin: "+w.red.redact(msg), attrs...)
}
