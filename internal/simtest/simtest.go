// Package simtest prepares a test binary for the C simulator (ttnn's sim backend): the
// environment the simulator reads at runtime init and device open, with nothing inherited that
// would inject faults or select devices, and the backend initialised. A package's TestMain calls
// Setup before running its tests.
package simtest

import (
	"fmt"
	"os"

	"github.com/tenstorrent/tt-media-server-go/internal/childtest"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Cleared are the variables Setup unsets: device selection, the simulator's fault injection and
// decode scripts, and the metal operation timeout. A test that wants one sets it itself
// (t.Setenv).
var Cleared = []string{"TT_VISIBLE_DEVICES", "TTB_SIM_FAIL_PROB", "TTB_SIM_HANG_SECONDS", "TTB_SIM_HANG_AFTER",
	"TTB_SIM_ABORT", "TTB_SIM_DEVICE_LOST", "TTB_SIM_SCRIPT", "TT_METAL_OPERATION_TIMEOUT_SECONDS"}

// Setup sets MOCK_DEVICES_COUNT to devices and TTB_SIM_LATENCY_SCALE to latencyScale (a tiny
// latency for tests), unsets Cleared, and initialises the sim backend, except in a child
// process of internal/childtest (a metal test selects its own backend). It panics when the
// environment cannot be set and exits with status 2 when the backend cannot be initialised.
func Setup(devices int, latencyScale string) {
	for k, v := range map[string]string{"MOCK_DEVICES_COUNT": fmt.Sprint(devices), "TTB_SIM_LATENCY_SCALE": latencyScale} {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	for _, k := range Cleared {
		if err := os.Unsetenv(k); err != nil {
			panic(err)
		}
	}
	if os.Getenv(childtest.Env) != "" {
		return
	}
	if err := ttnn.Init("sim"); err != nil {
		fmt.Fprintln(os.Stderr, "ttnn.Init:", err)
		os.Exit(2)
	}
}
