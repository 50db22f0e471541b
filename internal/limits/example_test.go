package limits_test

import (
	"fmt"
	"time"

	"github.com/heddlehq/heddle/internal/limits"
	"github.com/heddlehq/heddle/plan"
)

// Two calls a minute per caller: alice's third call is refused with the
// wait until her next token; bob has a budget of his own.
func ExampleSet_Admit() {
	set, ds := limits.New([]plan.Limit{{Calls: 2, Per: "1m", By: "caller"}}, "policies.limits")
	if err := ds.Err(); err != nil {
		fmt.Println(err)
		return
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, who := range []string{"alice", "alice", "alice", "bob"} {
		release, refused := set.Admit(now, limits.Call{Caller: who, Tool: "search_runbooks"})
		if refused != nil {
			fmt.Printf("%s: %s\n", who, refused.Error())
			continue
		}
		fmt.Printf("%s: admitted\n", who)
		release()
	}
	// Output:
	// alice: admitted
	// alice: admitted
	// alice: too many calls (policies.limits[0]); retry after 30000 ms
	// bob: admitted
}
