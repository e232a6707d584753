package tests

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLaunchRetriesATakenPort: a server whose port was taken between FreePort and its bind (it
// happened here: "bind: address already in use", another test binary's port) is started again
// on another port instead of failing the test. Not parallel: it swaps freePort.
func TestLaunchRetriesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	orig := freePort
	defer func() { freePort = orig }()
	calls := 0
	freePort = func(t *testing.T) int {
		calls++
		if calls == 1 {
			return takenPort
		}
		return orig(t)
	}
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet", "MOCK_DEVICES_COUNT": "1"})
	require.Equal(t, 2, calls, "started again after the bind failed")
	require.NotEqual(t, takenPort, s.Port)
	code, _ := s.liveness(t)
	require.Equal(t, 200, code)
	require.False(t, strings.Contains(s.stderr.String(), "address already in use"), "the second server bound its port")
}
