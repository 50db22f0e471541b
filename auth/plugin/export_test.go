package plugin

// RPCCalls reports how many calls the host has made to plugin processes.
func RPCCalls() int64 { return rpcCalls.Load() }

// LiveProcs reports how many plugin processes the host holds.
func LiveProcs() int {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	return len(procs.m)
}
