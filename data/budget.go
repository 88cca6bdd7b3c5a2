package data

import (
	"sync/atomic"

	"github.com/gcomp/gcomp/internal/memlimit"
)

// memoryBudget bounds what one reader of user data (a CSV file, an .npz archive) may hold; 0 is
// the default, half of what the process may use (memlimit.Default).
var memoryBudget atomic.Int64

// SetMemoryBudget bounds the bytes one ReadCSVFile or ReadNPZFile may hold (read and decoded, as
// the float64 or int64 elements the tensors keep) to n; 0 restores the default, half the tightest
// of the physical memory, the address-space limit and the cgroup limit. A file past the budget
// is an error naming it, found as the data streams, before it is all held.
func SetMemoryBudget(n int64) { memoryBudget.Store(n) }

func budget() int64 {
	if n := memoryBudget.Load(); n > 0 {
		return n
	}
	return memlimit.Default()
}

// budgetName names the budget in errors.
const budgetName = "the data memory budget"
