package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// configRunner fails its warm-up with a configuration error.
type configRunner struct{ warmups *atomic.Int64 }

func (r configRunner) Warmup(context.Context) error {
	r.warmups.Add(1)
	return runners.Permanent(errors.New("program resnet50 (/w/resnet50.ttnn): function forward: input 0 (pixel_values): shape [8,3,224,224] in the file, [16,3,224,224] declared"))
}
func (configRunner) Run(context.Context, []runners.Task) []runners.Outcome { return nil }
func (configRunner) Close() error                                          { return nil }

// A configuration error fails the worker at once: no device reset, no retry.
func TestWarmupConfigErrorIsNotRetried(t *testing.T) {
	var warmups, resets atomic.Int64
	s := New(Config{Groups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}}, QueueSize: 4, MaxRestarts: 5,
		RestartDelay: time.Millisecond,
		Reset:        func(context.Context, []config.DeviceGroup) error { resets.Add(1); return nil }},
		func(config.DeviceGroup) (runners.Runner, error) { return configRunner{&warmups}, nil })
	s.Start(context.Background())
	defer func() { _ = s.Stop(context.Background()) }()
	waitFor(t, "failed", func() bool { return s.Workers()["0"].State == stateFailed })
	require.Equal(t, int64(1), warmups.Load(), "not retried")
	require.Zero(t, resets.Load(), "no device reset")
	require.Contains(t, s.Workers()["0"].LastError, "shape [8,3,224,224] in the file, [16,3,224,224] declared")
	require.False(t, s.Ready())
}
