package plan

import "github.com/heddlehq/heddle/config/setting"

// Serve is the worker's front door as compiled: who may call it, the Host
// headers it accepts, and its limits, every default filled in. Token values
// are references, resolved by serve at start-up.
type Serve struct {
	// Auth is nil when the deployment sets no serve.auth: serve then
	// listens only on loopback and refuses /v1/ calls.
	Auth   *ServeAuth  `json:"auth,omitempty"`
	Hosts  []string    `json:"hosts,omitempty"`
	Limits ServeLimits `json:"limits"`
	// Probes is nil when the probes are served on the main listener only.
	Probes *ServeProbes `json:"probes,omitempty"`
	// ApprovalKeyRef is the reference of the facade's sealing key; nil
	// when each worker makes its own.
	ApprovalKeyRef *setting.Ref `json:"approval_key_ref,omitempty"`
	// State is serve.state with its defaults: kind, prefix, on_error and
	// timeout_ms always set.
	State ServeState `json:"state"`
}

// The compiled serve.auth, serve.limits and serve.probes are the deployment's, checked
// and with their defaults: the compiler refuses a setting of another kind
// than serve.auth.kind, so only the kind's own are set.
type (
	ServeAuth   = setting.ServeAuth
	ServeToken  = setting.ServeToken
	ServeLimits = setting.ServeLimits
	ServeProbes = setting.ServeProbes
	ServeState  = setting.ServeState
)
