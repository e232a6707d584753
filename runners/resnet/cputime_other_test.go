//go:build !unix

package resnet

import "time"

// processCPUTime is unavailable here; benchmarks then report no CPU-time figures.
func processCPUTime() time.Duration { return 0 }
