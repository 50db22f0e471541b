package setting

// Audit is the audit: section of api.yaml: where the audit trail is written
// (one chained JSON record per decision and call, package audit) and the
// key that chains it.
type Audit struct {
	// Path is the file records are appended to, or "-" for standard
	// output (standard error under heddle mcp, whose standard output is
	// the protocol).
	Path string `koanf:"path" json:"path"`
	// KeyRef is the reference of the HMAC key chaining each record to the
	// one before: at least 32 bytes. Required.
	KeyRef *Ref `koanf:"key_ref" json:"key_ref,omitempty"`
}
