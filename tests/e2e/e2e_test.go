package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreePortNeverRepeats: ports handed out to parallel tests are all different, although the
// kernel gives a closed port to a later Listen(":0") again (a few times in 300 calls).
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for i := range 300 {
		p := FreePort(t)
		require.False(t, seen[p], "call %d: port %d handed out twice", i, p)
		seen[p] = true
	}
}
