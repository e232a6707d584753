package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// canaryRecorder collects what the monitor reports.
type canaryRecorder struct {
	mu     sync.Mutex
	states []string
	probes []string // "shallow:ok", "deep:miss", ...
	deep   atomic.Int64
}

func (r *canaryRecorder) config(settings config.CanarySettings, badDeep bool) CanaryConfig {
	return CanaryConfig{
		CanarySettings: settings,
		Probe: func(deep bool) (runners.Request, func(runners.Result) error) {
			req := sreq("probe")
			if deep {
				r.deep.Add(1)
				req = sreq("deep-probe")
			}
			return req, func(v runners.Result) error {
				if badDeep && deep {
					return errors.New("deep probe: wrong answer")
				}
				if v != "done:"+req {
					return fmt.Errorf("probe answered %v", v)
				}
				return nil
			}
		},
		OnState: func(s string) {
			r.mu.Lock()
			r.states = append(r.states, s)
			r.mu.Unlock()
		},
		OnProbe: func(depth string, ok bool, _ time.Duration) {
			r.mu.Lock()
			r.probes = append(r.probes, depth+":"+map[bool]string{true: "ok", false: "miss"}[ok])
			r.mu.Unlock()
		},
	}
}

func (r *canaryRecorder) snapshot() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states), slices.Clone(r.probes)
}

func fastCanary() config.CanarySettings {
	return config.CanarySettings{Enabled: true, Tick: 10 * time.Millisecond, Wait: 20 * time.Millisecond,
		ProbeTimeout: 150 * time.Millisecond, DeadMisses: 3, DeepEveryN: 3, DeepProbeTimeout: 150 * time.Millisecond}
}

func TestCanaryProbesIdleWorkersThroughTheQueue(t *testing.T) {
	rec := &canaryRecorder{}
	var jobsDone atomic.Int64
	h := newHarness(t, Config{Canary: rec.config(fastCanary(), false),
		OnJobDone: func(string, time.Duration, time.Duration, string) { jobsDone.Add(1) }}, false, "")
	require.Equal(t, CanaryStatus{Enabled: true, State: CanaryStarting, Alive: true}, h.s.Canary())
	h.start(t)
	waitFor(t, "a successful probe", func() bool { _, p := rec.snapshot(); return slices.Contains(p, "shallow:ok") })
	_, seen := h.seen.Load(sreq("probe"))
	require.True(t, seen, "the probe ran on the runner (a real inference through the queue)")
	waitFor(t, "healthy", func() bool { return h.s.Canary().State == CanaryHealthy })
	states, _ := rec.snapshot()
	require.Equal(t, CanaryStarting, states[0])
	require.Contains(t, states, CanaryProbing)
	require.Zero(t, jobsDone.Load(), "probes are not client jobs (metrics, rate estimate)")
	require.Zero(t, h.s.stats.accepted.Load())
}

func TestCanaryDeadAfterMissesAndRecoversWithTraffic(t *testing.T) {
	rec := &canaryRecorder{}
	h := newHarness(t, Config{Canary: rec.config(fastCanary(), false)}, true, "") // gated: the device hangs
	h.start(t)
	waitFor(t, "suspect", func() bool { return h.s.Canary().State == CanarySuspect })
	waitFor(t, "dead", func() bool { return h.s.Canary().State == CanaryDead })
	st := h.s.Canary()
	require.False(t, st.Alive)
	_, probes := rec.snapshot()
	require.Equal(t, []string{"shallow:miss", "shallow:miss", "shallow:miss"}, probes[:3])

	// A real request that completes proves the model serves again (probes that go out before
	// it take a token each: enough for many).
	for range 90 {
		h.gate <- struct{}{}
	}
	v, err := h.s.Submit(context.Background(), sreq("real"), nil)
	require.NoError(t, err)
	require.Equal(t, sreq("done:real"), v)
	waitFor(t, "healthy again", func() bool { return h.s.Canary().State == CanaryHealthy })
	require.True(t, h.s.Canary().Alive)
}

func TestCanaryDeepMissesAreNotHiddenByShallowSuccesses(t *testing.T) {
	rec := &canaryRecorder{}
	cfg := fastCanary()
	cfg.DeepProbeEnabled, cfg.DeepEveryN, cfg.DeadMisses = true, 2, 2
	h := newHarness(t, Config{Canary: rec.config(cfg, true)}, false, "")
	h.start(t)
	waitFor(t, "dead from deep misses", func() bool { return h.s.Canary().State == CanaryDead })
	_, probes := rec.snapshot()
	require.Contains(t, probes, "shallow:ok")
	require.Contains(t, probes, "deep:miss")
	require.GreaterOrEqual(t, rec.deep.Load(), int64(2))
	// Shallow probes keep passing, but the deep streak keeps the model dead.
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, CanaryDead, h.s.Canary().State)
}

func TestCanaryStartupGraceAndDisabled(t *testing.T) {
	rec := &canaryRecorder{}
	cfg := fastCanary()
	cfg.StartupGrace = time.Hour
	h := newHarness(t, Config{Canary: rec.config(cfg, false)}, false, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	time.Sleep(100 * time.Millisecond)
	_, probes := rec.snapshot()
	require.Empty(t, probes, "no probe during the startup grace")
	require.Equal(t, CanaryStarting, h.s.Canary().State)

	cfg.Enabled = false
	off := newHarness(t, Config{Canary: rec.config(cfg, false)}, false, "")
	require.Equal(t, CanaryStatus{State: CanaryDisabled, Alive: true}, off.s.Canary())
}

func TestCanaryBusyWorkersAreNotProbed(t *testing.T) {
	rec := &canaryRecorder{}
	h := newHarness(t, Config{Canary: rec.config(fastCanary(), false)}, true, "")
	// The monitor's clock stands still until the real job is in flight, so that no probe can go
	// out before it on a slow machine; then it jumps an hour (idle long past CANARY_WAIT, were
	// the worker not busy). Every look at the clock is counted: each tick looks at least once.
	var offset atomic.Int64
	var looks atomic.Int64
	base := time.Now()
	h.s.canary.now = func() time.Time { looks.Add(1); return base.Add(time.Duration(offset.Load())) }
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	// A long real request holds the only worker: the monitor sees traffic, never probes.
	done := make(chan error, 1)
	go func() { _, err := h.s.Submit(context.Background(), sreq("blocker"), nil); done <- err }()
	defer func() { // a failed check still lets the blocker (and any probe ahead of it) end
		for range 5 {
			h.gate <- struct{}{}
		}
		require.NoError(t, <-done)
	}()
	waitFor(t, "the real job in flight", func() bool { return h.s.realInflight.Load() == 1 })
	offset.Store(int64(time.Hour))
	seen := looks.Load()
	waitFor(t, "three more ticks", func() bool { return looks.Load() >= seen+6 }) // a busy tick looks twice
	_, probes := rec.snapshot()
	require.Empty(t, probes)
	require.Equal(t, CanaryHealthy, h.s.Canary().State)
}
