package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// TestResetRevivesFailedWorker: a worker marked failed (its loop returned) is started again by
// a deep reset or a reset of its id: device reset, new runner, warm-up, then it serves; the
// answer says it was revived.
func TestResetRevivesFailedWorker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset func(s *Scheduler) ([]WorkerReset, error)
	}{
		{"deep reset", func(s *Scheduler) ([]WorkerReset, error) { return s.RestartAll(), nil }},
		{"reset of its id", func(s *Scheduler) ([]WorkerReset, error) {
			r, err := s.RestartWorker("0")
			return []WorkerReset{r}, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resets atomic.Int64
			h := newHarness(t, Config{MaxRestarts: 1, Reset: func(context.Context, []config.DeviceGroup) error {
				resets.Add(1)
				return nil
			}}, false, "")
			h.fails.Store(2)
			h.start(t)
			waitFor(t, "failed", func() bool { return h.s.Workers()["0"].State == stateFailed })
			_, err := h.s.Submit(context.Background(), sreq("x"), nil)
			require.ErrorIs(t, err, ErrNotReady, "a pool whose workers all failed is not ready")
			require.Equal(t, int64(2), h.made.Load())
			before := h.s.Workers()["0"]

			got, err := tc.reset(h.s)
			require.NoError(t, err)
			require.Equal(t, []WorkerReset{{Worker: "0", State: stateFailed, Action: ResetRevived}}, got)
			waitFor(t, "revived and ready", h.s.Ready)
			v, err := h.s.Submit(context.Background(), sreq("after"), nil)
			require.NoError(t, err)
			require.Equal(t, sreq("done:after"), v)
			st := h.s.Workers()["0"]
			require.Equal(t, stateReady, st.State)
			require.Equal(t, before.RestartCount+1, st.RestartCount)
			require.Equal(t, int64(3), h.made.Load(), "one new runner")
			require.Equal(t, before.RestartCount+1, int(resets.Load()), "the revival resets the device first")
		})
	}
}

// TestRevivedWorkerCountsAfresh: a revived worker gets MAX_WORKER_RESTART_COUNT failures again
// before it is marked failed, and can be revived again after that.
func TestRevivedWorkerCountsAfresh(t *testing.T) {
	h := newHarness(t, Config{MaxRestarts: 2}, false, "")
	h.fails.Store(3)
	h.start(t)
	waitFor(t, "failed after 3 failed warm-ups", func() bool { return h.s.Workers()["0"].State == stateFailed })
	h.fails.Store(3)
	require.Equal(t, ResetRevived, h.s.RestartAll()[0].Action)
	waitFor(t, "failed again after 3 more", func() bool {
		st := h.s.Workers()["0"]
		return st.State == stateFailed && st.ErrorCount == 6
	})
	h.fails.Store(2) // fewer than the limit: it comes up
	require.Equal(t, ResetRevived, h.s.RestartAll()[0].Action)
	waitFor(t, "ready", h.s.Ready)
	require.Equal(t, 8, h.s.Workers()["0"].ErrorCount)
}

// TestResetAnswersPerWorker: the reset answer names each worker's state and what was done.
func TestResetAnswersPerWorker(t *testing.T) {
	var made sync.Map // group → runners made
	gate := make(chan struct{})
	s := New(Config{Groups: []config.DeviceGroup{{ID: "0"}, {ID: "1"}, {ID: "2"}}, QueueSize: 4, MaxRestarts: 0},
		func(g config.DeviceGroup) (runners.Runner, error) {
			n, _ := made.LoadOrStore(g.ID, new(atomic.Int64))
			k := n.(*atomic.Int64).Add(1)
			switch {
			case g.ID == "1" && k == 1:
				return &fakeRunner{warmErr: errors.New("no chips"), seen: &sync.Map{}, runs: &atomic.Int64{}}, nil
			case g.ID == "2" && k == 1:
				return &blockingWarmup{gate: gate}, nil
			}
			return &fakeRunner{seen: &sync.Map{}, runs: &atomic.Int64{}}, nil
		})
	s.Start(context.Background())
	t.Cleanup(func() {
		close(gate)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	waitFor(t, "0 ready, 1 failed, 2 warming", func() bool {
		w := s.Workers()
		return w["0"].State == stateReady && w["1"].State == stateFailed && w["2"].State == stateStarting
	})
	got := s.RestartAll()
	require.Equal(t, []WorkerReset{
		{Worker: "0", State: stateReady, Action: ResetRestart},
		{Worker: "1", State: stateFailed, Action: ResetRevived},
		{Worker: "2", State: stateStarting, Action: ResetAlreadyStarting},
	}, got)
	waitFor(t, "0 and 1 ready", func() bool {
		w := s.Workers()
		return w["0"].State == stateReady && w["0"].RestartCount == 1 && w["1"].State == stateReady
	})
}

// blockingWarmup is a runner whose warm-up waits for gate (or its context).
type blockingWarmup struct{ gate chan struct{} }

func (b *blockingWarmup) Warmup(ctx context.Context) error {
	select {
	case <-b.gate:
		return errors.New("released")
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (b *blockingWarmup) Close() error { return nil }
func (b *blockingWarmup) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	return make([]runners.Outcome, len(tasks))
}

// TestConcurrentResetsReviveOnce: resets racing on one failed worker revive it once (one new
// loop, not several).
func TestConcurrentResetsReviveOnce(t *testing.T) {
	h := newHarness(t, Config{MaxRestarts: 0}, false, "")
	h.fails.Store(1)
	h.start(t)
	waitFor(t, "failed", func() bool { return h.s.Workers()["0"].State == stateFailed })
	const n = 8
	var wg sync.WaitGroup
	actions := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.s.RestartWorker("0")
			if err != nil {
				actions <- err.Error()
				return
			}
			actions <- r.Action
		}()
	}
	wg.Wait()
	close(actions)
	count := map[string]int{}
	for a := range actions {
		count[a]++
	}
	require.Equal(t, 1, count[ResetRevived], "%v", count)
	// The others found it warming up, or (when they came after its warm-up) restarted it.
	require.Equal(t, n-1, count[ResetAlreadyStarting]+count[ResetRestart], "%v", count)
	waitFor(t, "ready", h.s.Ready)
}

// TestResetWhileStoppingStartsNothing: a reset that comes while the scheduler stops revives no
// worker (so Stop never waits for a loop started after it began).
func TestResetWhileStoppingStartsNothing(t *testing.T) {
	h := newHarness(t, Config{MaxRestarts: 0}, false, "")
	h.fails.Store(1)
	h.s.Start(context.Background())
	waitFor(t, "failed", func() bool { return h.s.Workers()["0"].State == stateFailed })
	require.NoError(t, h.s.Stop(context.Background()))
	require.Equal(t, []WorkerReset{{Worker: "0", State: stateFailed, Action: ResetStopping}}, h.s.RestartAll())
	require.Equal(t, int64(1), h.made.Load())
}

// TestConfigErrorWorkerRetriedByReset: a worker failed on a configuration error is not retried
// on its own, but a reset (the operator fixed the files) tries it again.
func TestConfigErrorWorkerRetriedByReset(t *testing.T) {
	var fixed atomic.Bool
	s := New(Config{Groups: []config.DeviceGroup{{ID: "0"}}, QueueSize: 4, MaxRestarts: 5},
		func(config.DeviceGroup) (runners.Runner, error) {
			if !fixed.Load() {
				return nil, fmt.Errorf("%w: no weights at /nowhere", runners.ErrConfig)
			}
			return &fakeRunner{seen: &sync.Map{}, runs: &atomic.Int64{}}, nil
		})
	s.Start(context.Background())
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	waitFor(t, "failed", func() bool { return s.Workers()["0"].State == stateFailed })
	require.Equal(t, 1, s.Workers()["0"].ErrorCount, "a configuration error is not retried")
	fixed.Store(true)
	require.Equal(t, ResetRevived, s.RestartAll()[0].Action)
	waitFor(t, "ready", s.Ready)
}

// TestClosedQueueEndsIdleWorkers: once Stop has closed the queue no job can come, so an idle
// worker whose wait for work ends on it stops; it is not restarted (no device reset, no new
// runner, no restart counted) in the moment before Stop cancels the workers. It used to be,
// and a device reset then ran at every shutdown of an idle server (TestWorkerPID's reset hook
// was called twice and panicked).
func TestClosedQueueEndsIdleWorkers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		canary time.Duration // CANARY_INTERVAL_SECONDS: an idle worker probes its runner
	}{
		{"idle", 0},
		{"idle and probing", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resets atomic.Int64
			var probes atomic.Int64
			h := newHarness(t, Config{Groups: []config.DeviceGroup{{ID: "0"}, {ID: "1"}}, CanaryInterval: tc.canary,
				Reset: func(context.Context, []config.DeviceGroup) error { resets.Add(1); return nil }}, false, "")
			if tc.canary > 0 {
				factory := h.s.factory
				h.s.factory = func(g config.DeviceGroup) (runners.Runner, error) {
					r, err := factory(g)
					return &probingRunner{Runner: r, probes: &probes}, err
				}
			}
			h.start(t)
			waitFor(t, "both ready", func() bool {
				w := h.s.Workers()
				return w["0"].State == stateReady && w["1"].State == stateReady
			})
			require.Empty(t, h.s.q.close(), "nothing was queued") // Stop's step before it cancels the workers
			waitFor(t, "both stopped", func() bool {
				w := h.s.Workers()
				return w["0"].State == stateStopped && w["1"].State == stateStopped
			})
			require.Zero(t, resets.Load(), "no device reset on the way out")
			require.Equal(t, int64(2), h.made.Load(), "no new runner")
			for id, st := range h.s.Workers() {
				require.Zero(t, st.RestartCount, "worker %s", id)
			}
			require.Zero(t, probes.Load(), "no probe of a runner with no work to come")
		})
	}
}

// probingRunner adds a liveness probe that always passes (runners.Prober).
type probingRunner struct {
	runners.Runner
	probes *atomic.Int64
}

func (p *probingRunner) Probe(context.Context) error { p.probes.Add(1); return nil }
