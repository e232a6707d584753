// Package childtest runs one test of the current test binary in a child process of its own,
// for tests that need a fresh process (the ttnn backend is selected once per process). The
// child is told which test it is by the environment variable Env; the test itself checks
// os.Getenv(Env) == t.Name() before doing its work.
package childtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Env names the test a child process runs.
const Env = "TTB_TEST_CHILD"

// Run runs the test named name in a child process of the test binary and fails t unless it
// passes; the child's output is logged.
func Run(t *testing.T, name string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), Env+"="+name, "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "--- PASS: "+name)
	t.Log(strings.TrimSpace(string(out)))
}
