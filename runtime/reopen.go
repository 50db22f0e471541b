package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/heddlehq/heddle/plan"
	"github.com/heddlehq/heddle/runtime/driver"
)

// Reopen opens p as the generation after prev, a runtime that is still
// serving: like Open, under one start-up deadline, except that each kind
// that is a Reopener adopts what it can of prev's instance of it instead
// of opening it again. prev is left as it was and goes on serving its own
// calls; closing it (once its last call ended, see Generations) closes
// only what the new runtime did not adopt. When Reopen fails, what it
// opened is closed and prev is untouched. With prev nil, Reopen is Open.
func Reopen(ctx context.Context, p *plan.Plan, opts Options, prev *Runtime) (*Runtime, error) {
	return open(ctx, p, opts, prev)
}

// openKind opens one kind: with the previous generation's instance when
// the runtime is reopened and the kind can adopt from it.
func openKind(ctx context.Context, name string, k driver.Kind, env driver.Env, p *Runtime) (driver.Instance, []*driver.Failure, error) {
	if p != nil {
		if r, ok := k.(driver.Reopener); ok {
			if prev := p.instances[name]; prev != nil {
				return r.Reopen(ctx, env, prev)
			}
		}
	}
	return k.Open(ctx, env)
}

// PlanHash is the SHA-256, in hex, of the plan's stable JSON: which
// configuration the runtime serves. Two workers with the same hash serve
// the same plan; the plan holds no secret, so neither does its hash.
func (rt *Runtime) PlanHash() string {
	rt.hashOnce.Do(func() {
		b, err := json.Marshal(rt.plan)
		if err != nil {
			return
		}
		sum := sha256.Sum256(b)
		rt.hash = hex.EncodeToString(sum[:])
	})
	return rt.hash
}
