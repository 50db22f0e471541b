package serve

import (
	"fmt"
	"testing"
)

// TestConnBound: the main listener holds serve.limits.max_connections
// connections, or the open-file limit less its reserve — an eighth, and at
// least 64 — when that is smaller; an unknown limit leaves
// max_connections as it is, and the bound is never below 1.
func TestConnBound(t *testing.T) {
	for _, tc := range []struct {
		maxConns int
		limit    uint64
		want     int
	}{
		{4096, 0, 4096},            // no limit known
		{4096, 1 << 20, 4096},      // a container's usual limit: max_connections wins
		{4096, 400, 336},           // 400 - 64
		{4096, 1024, 896},          // 1024 - 128: an eighth is more than 64
		{4096, 4096, 3584},         // 4096 - 512
		{100, 400, 100},            // max_connections is smaller
		{4096, 65, 1},              // 65 - 64
		{4096, 64, 1},              // nothing left but the reserve: one connection
		{4096, 10, 1},              // less than the reserve
		{0, 0, 1},                  // never below 1
		{4096, 1<<62 - 1, 4096},    // huge
		{1 << 30, 1 << 20, 917504}, // 2^20 less an eighth
		{4096, 4681, 4096},         // 4681 - 585: the bound fits exactly
	} {
		t.Run(fmt.Sprint(tc.maxConns, "/", tc.limit), func(t *testing.T) {
			if got := connBound(tc.maxConns, tc.limit); got != tc.want {
				t.Errorf("connBound(%d, %d) = %d, want %d", tc.maxConns, tc.limit, got, tc.want)
			}
		})
	}
}

// TestFDLimit: the process's own limit is read where the platform has one.
func TestFDLimit(t *testing.T) {
	if n := fdLimit(); n != 0 && n < 3 {
		t.Errorf("fdLimit() = %d: not even the standard files fit", n)
	}
}
