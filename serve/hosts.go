package serve

import (
	"net"
	"net/netip"
	"strings"
)

// hosts are the Host headers a Server accepts outside the probes. DNS
// rebinding is a page on a name the attacker controls, made to resolve to
// the worker's address: the browser then sends the attacker's name as the
// Host. So an address is always accepted (rebinding needs a name), and a
// name only when it is one of serve.hosts, or localhost for a worker on a
// loopback or unspecified address (every address of the machine, loopback
// included).
type hosts struct {
	localhost bool
	// names are serve.hosts without a port, lower-case: any port.
	names map[string]bool
	// withPort are serve.hosts written HOST:PORT, lower-case: that port only.
	withPort map[string]bool
}

func newHosts(addr net.Addr, accepted []string) hosts {
	h := hosts{localhost: addr == nil || localAddr(addr), names: map[string]bool{}, withPort: map[string]bool{}}
	for _, a := range accepted {
		a = strings.ToLower(a)
		if host, port, err := net.SplitHostPort(a); err == nil {
			h.withPort[net.JoinHostPort(strings.TrimSuffix(host, "."), port)] = true
			continue
		}
		h.names[strings.TrimSuffix(a, ".")] = true
	}
	return h
}

// localAddr reports whether addr is a loopback address, or the unspecified
// address (0.0.0.0, ::), which listens on loopback too.
func localAddr(addr net.Addr) bool {
	ap, err := netip.ParseAddrPort(addr.String())
	return err == nil && (ap.Addr().IsLoopback() || ap.Addr().IsUnspecified())
}

// accepts reports whether a request's Host header is accepted.
func (h hosts) accepts(hostHeader string) bool {
	host, port := strings.ToLower(hostHeader), ""
	if hp, p, err := net.SplitHostPort(host); err == nil {
		host, port = hp, p
	}
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	switch {
	case host == "":
		return false
	case isAddr(host):
		return true
	case h.localhost && (host == "localhost" || strings.HasSuffix(host, ".localhost")):
		return true
	case h.names[host]:
		return true
	}
	return port != "" && h.withPort[net.JoinHostPort(host, port)]
}

func isAddr(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}
