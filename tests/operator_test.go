//go:build cgo

package tests

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Operator traps (issue 21 item 10).

// TestDefaultKeyWarning: the well-known default API_KEY on a non-loopback address warns at
// start-up; on loopback, or with a key of one's own, it does not.
func TestDefaultKeyWarning(t *testing.T) {
	t.Parallel()
	const warning = `API_KEY is the well-known default`
	for _, tc := range []struct {
		name string
		env  map[string]string
		warn bool
	}{
		{"default key on 0.0.0.0", map[string]string{"SERVICE_HOST": "0.0.0.0"}, true},
		{"default key on loopback", map[string]string{"SERVICE_HOST": "127.0.0.1"}, false},
		{"own key on 0.0.0.0", map[string]string{"SERVICE_HOST": "0.0.0.0", "API_KEY": "k-123"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, tc.env)
			if tc.warn {
				require.Contains(t, s.stderr.String(), warning)
				require.Contains(t, s.stderr.String(), "level=WARN")
			} else {
				require.NotContains(t, s.stderr.String(), warning)
			}
		})
	}
}

// TestThrottleLevelInWorkerEnv: DEFAULT_THROTTLE_LEVEL reaches the device worker processes as
// TT_MM_THROTTLE_PERF (as in the Python server's workers); empty leaves it unset.
func TestThrottleLevelInWorkerEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		want  string // "" = absent
	}{
		{"", "TT_MM_THROTTLE_PERF=5"}, // the default
		{"3", "TT_MM_THROTTLE_PERF=3"},
	} {
		t.Run("level="+tc.level, func(t *testing.T) {
			t.Parallel()
			env := processEnv(map[string]string{"MOCK_DEVICES_COUNT": "1"})
			if tc.level != "" {
				env["DEFAULT_THROTTLE_LEVEL"] = tc.level
			}
			s := startServer(t, env)
			eventually(t, 15*time.Second, "worker ready", func() bool {
				_, ready, _ := restartCounts(t, s)
				return ready
			})
			for id, w := range workerInfo(t, s) {
				pid, ok := w["pid"].(float64)
				require.Truef(t, ok, "worker %s pid is %T", id, w["pid"])
				require.NotEqual(t, s.cmd.Process.Pid, int(pid))
				raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", int(pid)))
				require.NoError(t, err)
				vars := strings.Split(string(raw), "\x00")
				require.Contains(t, vars, tc.want, "worker %s environment", id)
			}
		})
	}
	t.Run("unset when empty", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, processEnv(map[string]string{"MOCK_DEVICES_COUNT": "1", "DEFAULT_THROTTLE_LEVEL": ""}))
		eventually(t, 15*time.Second, "worker ready", func() bool {
			_, ready, _ := restartCounts(t, s)
			return ready
		})
		for _, w := range workerInfo(t, s) {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", int(w["pid"].(float64))))
			require.NoError(t, err)
			require.NotContains(t, string(raw), "TT_MM_THROTTLE_PERF=")
		}
	})
}
