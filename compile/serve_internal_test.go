package compile

import "testing"

// TestValidListen: serve.probes.listen is HOST:PORT, the host empty for
// every interface, the port a number up to 65535.
func TestValidListen(t *testing.T) {
	for a, want := range map[string]bool{
		"127.0.0.1:8081":    true,
		":8081":             true,
		"0.0.0.0:0":         true,
		"[::1]:8081":        true,
		"localhost:8081":    true,
		"":                  false,
		"8081":              false,
		"127.0.0.1":         false,
		"127.0.0.1:":        false,
		"127.0.0.1:80x1":    false,
		"127.0.0.1:65536":   false,
		"127.0.0.1:-1":      false,
		"127.0.0.1:+80":     false,
		"http://x:8081":     false,
		"heddle/probes:80":  false,
		"::1:8081":          false,
		"127.0.0.1:8081:80": false,
	} {
		if got := validListen(a); got != want {
			t.Errorf("validListen(%q) = %v, want %v", a, got, want)
		}
	}
}
