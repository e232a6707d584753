package scheduler

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// pidRunner is a runner in a process of its own with a settable pid.
type pidRunner struct {
	lostRunner
	pid *atomic.Int64
}

func (p *pidRunner) PID() int { return int(p.pid.Load()) }

// TestWorkerPID: a worker's pid is its runner's process when the runner has one
// (ProcessIDer), the server's otherwise; a new runner after a restart brings its own.
func TestWorkerPID(t *testing.T) {
	var runs atomic.Int64
	var pid atomic.Int64
	tests := []struct {
		name    string
		runner  func() runners.Runner
		setPID  int64
		wantPID int
	}{
		{"in process", func() runners.Runner { return &lostRunner{runs: &runs} }, 0, os.Getpid()},
		{"worker process", func() runners.Runner { return &pidRunner{lostRunner{runs: &runs}, &pid} }, 4242, 4242},
		// A worker process that has not started (or has exited and is being replaced) has no
		// pid: never the server's, which an operator might kill.
		{"worker process not started", func() runners.Runner { return &pidRunner{lostRunner{runs: &runs}, &pid} }, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid.Store(tt.setPID)
			s := New(Config{Groups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}}, QueueSize: 4, MaxRestarts: 2},
				func(config.DeviceGroup) (runners.Runner, error) { return tt.runner(), nil })
			s.Start(context.Background())
			defer func() { _ = s.Stop(context.Background()) }()
			waitFor(t, "ready", s.Ready)
			require.Equal(t, tt.wantPID, s.Workers()["0"].PID)
		})
	}

	// After a crash the restarted runner's process is shown: each runner has its own pid.
	// The device reset holds the worker in its restart until the test has looked (a restart
	// delay alone is a window a loaded machine can miss).
	var made atomic.Int64
	resetting, resume := make(chan struct{}), make(chan struct{})
	s := New(Config{Groups: []config.DeviceGroup{{ID: "0", Devices: []int{0}}}, QueueSize: 4, MaxRestarts: 2,
		Reset: func(ctx context.Context, _ []config.DeviceGroup) error {
			close(resetting)
			select {
			case <-resume:
			case <-ctx.Done():
			}
			return nil
		}},
		func(config.DeviceGroup) (runners.Runner, error) {
			own := &atomic.Int64{}
			own.Store(100 * made.Add(1))
			return &pidRunner{lostRunner{runs: &runs}, own}, nil
		})
	runs.Store(0)
	s.Start(context.Background())
	defer func() { _ = s.Stop(context.Background()) }()
	waitFor(t, "ready", s.Ready)
	require.Equal(t, 100, s.Workers()["0"].PID)
	_, err := s.Submit(context.Background(), sreq("x"), nil)
	require.ErrorIs(t, err, runners.ErrDeviceLost)
	// While it restarts there is no process: no pid, not the server's.
	<-resetting
	require.Equal(t, stateRestart, s.Workers()["0"].State)
	require.Zero(t, s.Workers()["0"].PID, "a restarting worker process must not show the server's pid")
	close(resume)
	waitFor(t, "restarted", func() bool { return s.Workers()["0"].RestartCount == 1 && s.Ready() })
	require.Equal(t, 200, s.Workers()["0"].PID)
}
