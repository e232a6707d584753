package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// exitRunner is a runner in a process of its own whose process can be made to exit.
type exitRunner struct {
	pidRunner
	gone chan struct{}
}

func (e *exitRunner) Exited() <-chan struct{} { return e.gone }
func (e *exitRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i := range tasks {
		select {
		case <-e.gone:
			out[i] = runners.Outcome{Err: runners.ErrDeviceLost}
		default:
			out[i] = runners.Outcome{Value: sreq("ok")}
		}
	}
	return out
}

// TestProcessExitWhileIdleIsNotReady: a worker whose process exits while idle is not ready the
// moment the process is reaped (no canary needed), the next request goes to the other worker,
// and the dead one is restarted.
func TestProcessExitWhileIdleIsNotReady(t *testing.T) {
	var made atomic.Int64
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	procs := map[string]*exitRunner{}
	s := New(Config{
		Groups:    []config.DeviceGroup{{ID: "0"}, {ID: "1"}},
		QueueSize: 4, MaxRestarts: 3, RestartDelay: 200 * time.Millisecond,
	}, func(g config.DeviceGroup) (runners.Runner, error) {
		pid := &atomic.Int64{}
		pid.Store(1000 + made.Add(1))
		r := &exitRunner{pidRunner{lostRunner{runs: &atomic.Int64{}}, pid}, make(chan struct{})}
		<-mu
		procs[g.ID] = r
		mu <- struct{}{}
		return r, nil
	})
	s.Start(context.Background())
	defer func() { _ = s.Stop(context.Background()) }()
	waitFor(t, "both ready", func() bool { return s.Workers()["0"].IsReady && s.Workers()["1"].IsReady })

	<-mu
	close(procs["0"].gone) // kill -9 while idle
	mu <- struct{}{}
	st := s.Workers()["0"]
	require.False(t, st.IsReady, "a worker whose process is gone is not ready")
	require.NotEqual(t, stateReady, st.State)
	for range 5 {
		v, err := s.Submit(context.Background(), sreq("x"), nil)
		require.NoError(t, err, "the healthy worker serves")
		require.Equal(t, sreq("ok"), v)
	}
	waitFor(t, "worker 0 restarted", func() bool {
		w := s.Workers()["0"]
		return w.IsReady && w.RestartCount == 1
	})
	require.Contains(t, s.Workers()["0"].LastError, "exited while idle")
}

// TestStuckWorkerIsNotReady: an in-process worker whose batch overran the request timeout by
// stuckGrace is not ready, and with no other worker the scheduler is not ready (/health 503).
func TestStuckWorkerIsNotReady(t *testing.T) {
	old := stuckGrace
	stuckGrace = 50 * time.Millisecond
	// Restored after the scheduler's Stop (cleanups run last-registered first), not while its
	// workers may still read it.
	t.Cleanup(func() { stuckGrace = old })
	h := newHarness(t, Config{Timeout: 50 * time.Millisecond}, true, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	done := make(chan error, 1)
	go func() { _, err := h.s.Submit(context.Background(), sreq("blocker"), nil); done <- err }()
	require.ErrorIs(t, <-done, ErrTimeout) // answered at its deadline; the runner holds on
	waitFor(t, "stuck", func() bool { return h.s.Workers()["0"].State == stateStuck })
	require.False(t, h.s.Workers()["0"].IsReady)
	require.False(t, h.s.Ready(), "the only worker is stuck: not ready")
	_, err := h.s.Submit(context.Background(), sreq("x"), nil)
	require.ErrorIs(t, err, ErrNotReady)
	h.gate <- struct{}{} // the device call returns
	waitFor(t, "ready again", h.s.Ready)
}

// waitRestartedReady waits until the worker of h has restarted n times and is ready again. Not
// h.s.Ready alone: a crashed job's caller hears ErrWorkerFailed before the worker leaves the
// ready state, so Ready can still be true for the runner that just crashed, and the next
// Submit may then meet the restart (ErrNotReady).
func waitRestartedReady(t *testing.T, h *harness, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("ready after %d restarts", n), func() bool {
		return h.s.Workers()["0"].RestartCount == n && h.s.Ready()
	})
}

// TestRestartLimitCountsConsecutiveFailures: MAX_WORKER_RESTART_COUNT counts failures in a
// row; a runner that warmed up starts a new count, so only failures without a successful
// warm-up between them (failed warm-ups after a crash) mark the worker failed.
func TestRestartLimitCountsConsecutiveFailures(t *testing.T) {
	t.Run("crashes each followed by good work", func(t *testing.T) {
		h := newHarness(t, Config{MaxRestarts: 2}, false, "bad")
		h.start(t)
		for i := range 6 {
			waitRestartedReady(t, h, i)
			_, err := h.s.Submit(context.Background(), sreq("good"), nil)
			require.NoError(t, err, "round %d", i)
			_, err = h.s.Submit(context.Background(), sreq("bad"), nil)
			require.ErrorIs(t, err, ErrWorkerFailed)
		}
		waitFor(t, "restarted 6 times and ready", func() bool { return h.s.Workers()["0"].RestartCount == 6 && h.s.Ready() })
		st := h.s.Workers()["0"]
		require.NotEqual(t, stateFailed, st.State)
	})
	t.Run("crashes each after a successful warm-up", func(t *testing.T) {
		h := newHarness(t, Config{MaxRestarts: 2}, false, "bad")
		h.start(t)
		for i := range 6 { // twice the limit: each restart warmed up, so none counts twice
			waitRestartedReady(t, h, i)
			_, err := h.s.Submit(context.Background(), sreq("bad"), nil)
			require.ErrorIs(t, err, ErrWorkerFailed, "round %d", i)
		}
		waitFor(t, "restarted 6 times and ready", func() bool { return h.s.Workers()["0"].RestartCount == 6 && h.s.Ready() })
		require.Equal(t, 6, h.s.Workers()["0"].ErrorCount)
	})
	t.Run("a crash then failed warm-ups", func(t *testing.T) {
		h := newHarness(t, Config{MaxRestarts: 2}, false, "bad")
		h.start(t)
		waitFor(t, "ready", h.s.Ready)
		h.fails.Store(10) // the device does not come back after the crash
		_, err := h.s.Submit(context.Background(), sreq("bad"), nil)
		require.ErrorIs(t, err, ErrWorkerFailed)
		waitFor(t, "failed after the crash and 2 failed warm-ups", func() bool { return h.s.Workers()["0"].State == stateFailed })
		require.False(t, h.s.Ready())
		st := h.s.Workers()["0"]
		require.Equal(t, 3, st.ErrorCount, "the crash and two failed warm-ups")
		require.Equal(t, 2, st.RestartCount)
		require.Contains(t, st.LastError, "device did not come up")
	})
}
