//go:build cgo

package ttnn

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv marks a re-executed test binary that runs one child scenario (tests that poison
// the process or need a different environment at runtime init).
const childEnv = "TTB_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		for k, v := range map[string]string{"MOCK_DEVICES_COUNT": "5", "TTB_SIM_LATENCY_SCALE": "0.001"} {
			if err := os.Setenv(k, v); err != nil {
				panic(err)
			}
		}
		for _, k := range []string{"TT_VISIBLE_DEVICES", "TTB_SIM_FAIL_PROB", "TTB_SIM_HANG_SECONDS", "TTB_SIM_HANG_AFTER",
			"TTB_SIM_ABORT", "TTB_SIM_DEVICE_LOST", "TT_METAL_OPERATION_TIMEOUT_SECONDS", "TTB_SIM_SEED"} {
			if err := os.Unsetenv(k); err != nil {
				panic(err)
			}
		}
	}
	if os.Getenv(childEnv) != "" && os.Getenv("TT_VISIBLE_DEVICES") == "__unset__" {
		// exec cannot pass "unset" for a variable the parent has; the child removes it
		// before the runtime reads it.
		if err := os.Unsetenv("TT_VISIBLE_DEVICES"); err != nil {
			panic(err)
		}
	}
	// TTB_TEST_BACKEND (children of the conformance suite) picks the backend under test.
	backend := os.Getenv("TTB_TEST_BACKEND")
	if backend == "" {
		backend = "sim"
	}
	if err := Init(backend); err != nil && (os.Getenv(childEnv) == "" || backend != "sim") {
		fmt.Fprintln(os.Stderr, "ttnn.Init:", err)
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}
