package plan

import "github.com/heddlehq/heddle/config/setting"

// Audit is the deployment's audit: section as compiled, the key a
// reference: nil when the deployment writes no audit trail.
type Audit = setting.Audit
