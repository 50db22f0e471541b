package config

import "github.com/heddlehq/heddle/config/setting"

// Audit is the audit: section of api.yaml; see [setting.Audit].
type Audit = setting.Audit
