package compile

import (
	"github.com/heddlehq/heddle/config"
	"github.com/heddlehq/heddle/diag"
	"github.com/heddlehq/heddle/grants"
	"github.com/heddlehq/heddle/plan"
)

// compileAudit compiles the audit: section: a path and the reference of
// the key that chains the records, both required once the section is
// written.
func compileAudit(dep *config.Deployment) (*plan.Audit, diag.Diagnostics) {
	a := dep.Audit
	if a == nil {
		return nil, nil
	}
	var ds diag.Diagnostics
	if a.Path == "" {
		ds = append(ds, diag.Errorf(diag.AuditInvalid, config.Join("audit", "path"), "audit has no path").
			WithDetail(`write the file records are appended to (audit.path: /var/log/heddle/audit.jsonl), or "-" for standard output; or leave audit: out`))
	}
	if a.KeyRef == nil {
		ds = append(ds, diag.Errorf(diag.AuditInvalid, config.Join("audit", "key_ref"), "audit has no key_ref").
			WithDetail("write the reference of the key that chains the records, at least 32 bytes: key_ref: ${secrets:/heddle/audit-key}; without it anyone could rewrite the file"))
		return nil, ds
	}
	out := &plan.Audit{Path: a.Path}
	ref := *a.KeyRef
	out.KeyRef = &ref
	ds = append(ds, grants.CheckRef(&ref, config.Join("audit", "key_ref"))...)
	return out, ds
}
