//go:build unix

package resnet

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time (user+system) the process has used so far. Benchmarks report
// CPU time per op besides wall time, because on a shared, oversubscribed machine wall time
// mostly measures the other tenants.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
