// Package audit writes and verifies heddle's audit trail: one JSON record a
// line for every decision and call, in the shape of OCSF's API Activity
// class (class_uid 6003), each chained to the one before by an HMAC so that
// an auditor holding the key can tell that no record was changed, removed,
// reordered or added.
//
// A record holds who called (actor.user), what (api.operation, the tool;
// api.service.name, its server), the outcome (status, status_code) and, in
// unmapped, heddle's own fields: the agent, the policy's decision and the
// rule that made it, the approval, the trace id and a SHA-256 digest of the
// arguments — never the arguments themselves. chain.seq numbers the records,
// chain.prev is the MAC of the record before, and chain.mac is
//
//	HMAC-SHA256(key, chain.prev || canonical JSON of the record without chain.mac)
//
// in hex, the canonical JSON being RFC 8785's form (keys sorted, no white
// space). The chain continues across files: when the file is rotated, the
// first record of the next file names the last MAC of the one before, and
// Verify reads the files in order.
//
//	w, err := audit.Open(audit.Options{Path: "/var/log/heddle/audit.jsonl", Key: key})
//	if err != nil {
//		return err
//	}
//	defer w.Close() // writes what is queued, then fsyncs
//	rt, _ := runtime.Open(ctx, p, runtime.Options{OnCall: w.Observe})
//
//	// Later, an auditor:
//	err = audit.Verify(key, "audit.jsonl.1", "audit.jsonl") // nil, or a *BrokenError naming the record
package audit
