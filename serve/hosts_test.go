package serve

import (
	"net"
	"testing"
)

// TestHosts: an address is always an accepted Host, whatever its port (DNS
// rebinding needs a name); localhost is accepted on a loopback or
// unspecified listen address; any other name only when serve.hosts holds
// it, with any port unless the entry names one.
func TestHosts(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	all := &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
	pod := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8080}
	accepted := []string{"heddle.internal.example.com", "Gateway.Example.com:8443"}
	for _, tc := range []struct {
		addr net.Addr
		host string
		want bool
	}{
		{loop, "127.0.0.1:8080", true},
		{loop, "127.0.0.1", true},
		{loop, "[::1]:8080", true},
		{loop, "[::1]", true},
		{loop, "localhost:8080", true},
		{loop, "LOCALHOST.", true},
		{loop, "app.localhost:8080", true},
		{loop, "heddle.internal.example.com", true},
		{loop, "heddle.internal.example.com:9999", true},
		{loop, "heddle.internal.example.com.", true},
		{loop, "gateway.example.com:8443", true},
		{loop, "gateway.example.com", false},
		{loop, "gateway.example.com:443", false},
		{loop, "evil.example", false},
		{loop, "evil.example:8080", false},
		{loop, "localhost.evil.example", false},
		{loop, "", false},
		{all, "localhost:8080", true},
		{all, "10.1.2.3:8080", true},
		{pod, "10.1.2.3:8080", true},
		{pod, "192.0.2.7", true},
		{pod, "localhost:8080", false},
		{pod, "evil.example", false},
		{nil, "localhost", true},
	} {
		if got := newHosts(tc.addr, accepted).accepts(tc.host); got != tc.want {
			t.Errorf("listening on %v, Host %q: accepted %v, want %v", tc.addr, tc.host, got, tc.want)
		}
	}
}
