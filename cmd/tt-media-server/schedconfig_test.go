package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// TestSchedulerConfigFromSettings: every scheduler setting comes from the one Settings value,
// and a video pool's jobs are bounded by VIDEO_JOB_TIMEOUT_SECONDS, not the inference timeout.
func TestSchedulerConfigFromSettings(t *testing.T) {
	s := &config.Settings{
		MaxQueueSize: 7, MaxBatchSize: 3, MaxBatchDelay: 9 * time.Millisecond, MaxQueuePerClient: 2,
		ClientWeights: map[string]int{"a": 2}, NewDeviceDelay: time.Second, InferenceTimeout: 11 * time.Second,
		MaxWorkerRestarts: 4, ResetDeviceSleep: 5 * time.Second, WorkerCheckInterval: 6 * time.Second,
		CanaryInterval: 8 * time.Second,
	}
	s.Video.JobTimeout = time.Hour
	pool := config.Pool{Groups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}, {ID: "1", Devices: []int{1}}}}
	tests := []struct {
		service runners.Service
		timeout time.Duration
	}{
		{runners.ServiceImage, 11 * time.Second},
		{runners.ServiceVideo, time.Hour},
	}
	for _, tc := range tests {
		t.Run(string(tc.service), func(t *testing.T) {
			c := schedulerConfig(s, pool, tc.service)
			require.Equal(t, pool.Groups, c.Groups)
			require.Equal(t, 7, c.QueueSize)
			require.Equal(t, 3, c.MaxBatchSize)
			require.Equal(t, 9*time.Millisecond, c.MaxBatchDelay)
			require.Equal(t, 2, c.PerClientCap)
			require.Equal(t, map[string]int{"a": 2}, c.ClientWeights)
			require.Equal(t, time.Second, c.StartDelay)
			require.Equal(t, tc.timeout, c.Timeout)
			require.Equal(t, 4, c.MaxRestarts)
			require.Equal(t, 5*time.Second, c.RestartDelay)
			require.Equal(t, 6*time.Second, c.CheckInterval)
			require.Equal(t, 8*time.Second, c.CanaryInterval)
		})
	}
}
