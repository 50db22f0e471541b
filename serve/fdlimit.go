package serve

import "log/slog"

// fdReserveMin is the least number of file descriptors the connection
// bound leaves to the rest of the process.
const fdReserveMin = 64

// fdReserve is how many of a process's limit of fdLimit open files the
// connections of the main listener leave to the rest of it: the MCP
// servers' pipes, outbound connections, SQL files, the audit file, the
// listeners, the probe listener's connections (ProbeMaxConnections), and
// what Go and the log hold. It is an eighth of the limit, and at least
// fdReserveMin: a server that runs many stdio children or calls many
// upstreams at once needs more room as its limit grows.
func fdReserve(fdLimit uint64) uint64 {
	return max(fdReserveMin, fdLimit/8)
}

// connBound is the number of connections the main listener holds at most:
// serve.limits.max_connections, or the process's open-file limit less its
// reserve (fdReserve) when that is smaller, so that accepting a connection
// never fails for want of a descriptor. fdLimit 0 is no limit known. The
// bound is at least 1.
func connBound(maxConnections int, fdLimit uint64) int {
	n := max(maxConnections, 1)
	if fdLimit == 0 {
		return n
	}
	reserve := fdReserve(fdLimit)
	if fdLimit <= reserve {
		return 1
	}
	if room := fdLimit - reserve; room < uint64(n) {
		return int(room)
	}
	return n
}

// mainConnBound is connBound with this process's open-file limit; it logs
// when that limit lowers max_connections.
func mainConnBound(maxConnections int, log *slog.Logger) int {
	limit := fdLimit()
	n := connBound(maxConnections, limit)
	if n < maxConnections {
		log.Info("serve.limits.max_connections is lowered to fit the open-file limit (RLIMIT_NOFILE), less a reserve for the rest of the worker",
			"max_connections", n, "configured", maxConnections, "nofile", limit, "reserve", fdReserve(limit))
	}
	return n
}
