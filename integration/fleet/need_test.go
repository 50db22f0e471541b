package fleet_test

import (
	"os"
	"os/exec"
	"testing"
)

// haproxyPath is where Debian installs haproxy, which a user's PATH often
// lacks (/usr/sbin).
const haproxyPath = "/usr/sbin/haproxy"

// haproxy is haproxy's path, or "" when it is not installed.
func haproxy() string {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat(haproxyPath); err == nil {
		return haproxyPath
	}
	return ""
}

// missing names the first package the fleet needs that is not installed,
// or is "".
func missing() string {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return "redis-server"
	}
	if haproxy() == "" {
		return "haproxy"
	}
	return ""
}

// need skips t when redis-server or haproxy is missing, and fails it
// instead under CI=true: CI cannot pass by skipping.
func need(t *testing.T) {
	t.Helper()
	what := missing()
	if what == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, and CI is set: .ci/run installs it (integration/fleet-install.sh)", what)
	}
	t.Skipf("%s is not installed (integration/fleet-install.sh installs redis-server and haproxy); CI requires it", what)
}
