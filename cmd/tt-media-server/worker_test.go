package main

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
)

func TestMockRunsResetCommand(t *testing.T) {
	tests := []struct {
		name      string
		isolation string
		command   string
		want      bool
	}{
		{"in process: simulated", config.IsolationInProcess, "/usr/local/bin/reset-chips", false},
		{"process with a custom command", config.IsolationProcess, "/usr/local/bin/reset-chips", true},
		{"process with the hardware default", config.IsolationProcess, " tt-smi -r ", false},
		{"process without a command", config.IsolationProcess, "  ", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &config.Settings{WorkerIsolation: tt.isolation, ResetDeviceCommand: tt.command}
			require.Equal(t, tt.want, mockRunsResetCommand(s))
		})
	}
}

func TestDeviceWorkerUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"0", "tt-whisper", "extra"}} {
		err := run(context.Background(), append([]string{workerCommand}, args...), io.Discard)
		require.ErrorContains(t, err, "usage: tt-media-server device-worker GROUP")
	}
}
