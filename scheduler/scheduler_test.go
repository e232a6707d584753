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
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRunner is a device-boundary fake: it records what reached the "device".
type fakeRunner struct {
	warmErr error
	gate    chan struct{} // when set, Run waits for a token per batch (or the job's ctx)
	panicOn string        // a request equal to this makes Run panic
	seen    *sync.Map     // request → batch size it ran in
	runs    *atomic.Int64
	closed  atomic.Bool
}

func (f *fakeRunner) Warmup(ctx context.Context) error { return f.warmErr }
func (f *fakeRunner) Close() error                     { f.closed.Store(true); return nil }
func (f *fakeRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	f.runs.Add(1)
	out := make([]runners.Outcome, len(tasks))
	if f.gate != nil {
		deadline := tasks[0].Ctx.Done()
		if tasks[0].Request == sreq("blocker") { // holds the device whatever its deadline says
			deadline = nil
		}
		select {
		case <-f.gate:
		case <-deadline:
		case <-ctx.Done():
			// The server stopped (Stop cancels the workers' context once its grace is over):
			// like a real runner, give up, or Stop waits for this batch forever; a test that
			// fails while the gate is shut then hangs until the run's timeout, and its failure
			// message is never printed.
			for i := range out {
				out[i] = runners.Outcome{Err: ctx.Err()}
			}
			return out
		}
	}
	for i, t := range tasks {
		if f.panicOn != "" && t.Request == sreq(f.panicOn) {
			panic("boom")
		}
		f.seen.Store(t.Request, len(tasks))
		if err := t.Ctx.Err(); err != nil {
			out[i] = runners.Outcome{Err: err}
			continue
		}
		if t.Emit != nil {
			if err := t.Emit(sreq("chunk:" + fmt.Sprint(t.Request))); err != nil {
				out[i] = runners.Outcome{Err: err}
				continue
			}
		}
		out[i] = runners.Outcome{Value: sreq("done:" + fmt.Sprint(t.Request))}
	}
	return out
}

type harness struct {
	s     *Scheduler
	seen  *sync.Map
	runs  *atomic.Int64
	made  atomic.Int64
	gate  chan struct{}
	fails atomic.Int64 // warm-ups still to fail
}

func newHarness(t *testing.T, cfg Config, gated bool, panicOn string) *harness {
	t.Helper()
	h := &harness{seen: &sync.Map{}, runs: &atomic.Int64{}}
	if gated {
		h.gate = make(chan struct{}, 100)
	}
	if cfg.Groups == nil {
		cfg.Groups = []config.DeviceGroup{{ID: "0", Devices: []int{0}}}
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 8
	}
	h.s = New(cfg, func(g config.DeviceGroup) (runners.Runner, error) {
		h.made.Add(1)
		r := &fakeRunner{gate: h.gate, panicOn: panicOn, seen: h.seen, runs: h.runs}
		if h.fails.Load() > 0 {
			h.fails.Add(-1)
			r.warmErr = errors.New("device did not come up")
		}
		return r, nil
	})
	return h
}

func (h *harness) start(t *testing.T) {
	t.Helper()
	h.s.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.s.Stop(ctx)
	})
}

// waitFor polls cond until it holds. Its bound only ends a test that already failed, so it is
// generous: a loaded 2-core CI box under -race can stall a test's goroutines for seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestSubmitBeforeReadyIsRefused(t *testing.T) {
	h := newHarness(t, Config{}, false, "")
	_, err := h.s.Submit(context.Background(), sreq("a"), nil)
	require.ErrorIs(t, err, ErrNotReady)
}

func TestSubmitReturnsResultAndStreams(t *testing.T) {
	h := newHarness(t, Config{}, false, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)

	v, err := h.s.Submit(context.Background(), sreq("a"), nil)
	require.NoError(t, err)
	require.Equal(t, sreq("done:a"), v)

	var chunks []runners.Chunk
	v, err = h.s.Submit(context.Background(), sreq("b"), func(c runners.Chunk) error { chunks = append(chunks, c); return nil })
	require.NoError(t, err)
	require.Equal(t, sreq("done:b"), v)
	require.Equal(t, []runners.Chunk{sreq("chunk:b")}, chunks)
}

func TestQueueFullAndRetryAfter(t *testing.T) {
	h := newHarness(t, Config{QueueSize: 2}, true, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)

	errs := make(chan error, 3)
	for _, r := range []string{"running", "q1", "q2"} {
		go func() { _, err := h.s.Submit(context.Background(), sreq(r), nil); errs <- err }()
		if r == "running" {
			waitFor(t, "first job running", func() bool { return h.runs.Load() == 1 })
		}
	}
	waitFor(t, "queue filled", func() bool { return h.s.QueueLen() == 2 })
	_, err := h.s.Submit(context.Background(), sreq("overflow"), nil)
	require.ErrorIs(t, err, ErrQueueFull)
	ra := h.s.RetryAfter()
	require.GreaterOrEqual(t, ra, time.Second)
	require.LessOrEqual(t, ra, 120*time.Second)

	for range 3 {
		h.gate <- struct{}{}
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
	_, ran := h.seen.Load(sreq("overflow"))
	require.False(t, ran, "a refused job must never reach the device")
}

func TestDeadlineAndCancelWhileQueuedSpendNoDeviceTime(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		timeout time.Duration
		wantErr error
	}{
		{"server timeout", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, 50 * time.Millisecond, ErrTimeout},
		{"client deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, time.Minute, ErrTimeout},
		{"client gone", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, time.Minute, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Timeout: tc.timeout}, true, "")
			h.start(t)
			waitFor(t, "ready", h.s.Ready)
			blocker := make(chan error, 1)
			go func() { _, err := h.s.Submit(context.Background(), sreq("blocker"), nil); blocker <- err }()
			waitFor(t, "blocker running", func() bool { return h.runs.Load() == 1 })

			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			_, err := h.s.Submit(ctx, sreq("waiting"), nil)
			require.ErrorIs(t, err, tc.wantErr)
			require.Less(t, time.Since(start), 2*time.Second)
			require.Equal(t, 0, h.s.QueueLen(), "the expired job must leave the queue at once")

			h.gate <- struct{}{}
			t.Logf("blocker: %v", <-blocker)
			h.gate <- struct{}{}
			time.Sleep(20 * time.Millisecond)
			_, ran := h.seen.Load(sreq("waiting"))
			require.False(t, ran, "an expired job must never reach the device")
		})
	}
}

func TestRunningJobTimesOut(t *testing.T) {
	h := newHarness(t, Config{Timeout: 50 * time.Millisecond}, true, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	_, err := h.s.Submit(context.Background(), sreq("slow"), nil)
	require.ErrorIs(t, err, ErrTimeout)
	require.Contains(t, err.Error(), "50ms")
}

func TestGreedyBatching(t *testing.T) {
	h := newHarness(t, Config{MaxBatchSize: 3}, true, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	var wg sync.WaitGroup
	submit := func(r string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.s.Submit(context.Background(), sreq(r), nil)
			require.NoError(t, err)
		}()
	}
	submit("first")
	waitFor(t, "first running", func() bool { return h.runs.Load() == 1 })
	for _, r := range []string{"b1", "b2", "b3", "b4"} {
		submit(r)
	}
	waitFor(t, "4 queued", func() bool { return h.s.QueueLen() == 4 })
	for range 3 {
		h.gate <- struct{}{}
	}
	wg.Wait()
	size := func(r string) int { v, _ := h.seen.Load(sreq(r)); return v.(int) }
	require.Equal(t, 1, size("first"))
	sizes := map[int]int{}
	for _, r := range []string{"b1", "b2", "b3", "b4"} {
		sizes[size(r)]++
	}
	require.Equal(t, map[int]int{3: 3, 1: 1}, sizes, "4 queued jobs run as a batch of 3 and a batch of 1")
}

func TestRunnerPanicFailsBatchAndWorkerRecovers(t *testing.T) {
	h := newHarness(t, Config{MaxRestarts: 3}, false, "bad")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	_, err := h.s.Submit(context.Background(), sreq("bad"), nil)
	require.ErrorIs(t, err, ErrWorkerFailed)
	waitFor(t, "worker back", h.s.Ready)
	v, err := h.s.Submit(context.Background(), sreq("good"), nil)
	require.NoError(t, err)
	require.Equal(t, sreq("done:good"), v)
	st := h.s.Workers()["0"]
	require.Equal(t, 1, st.RestartCount)
	require.Equal(t, 1, st.ErrorCount)
	require.Equal(t, int64(2), h.made.Load())
}

func TestWarmupFailuresRetryThenFail(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		h := newHarness(t, Config{MaxRestarts: 2}, false, "")
		h.fails.Store(2)
		h.start(t)
		waitFor(t, "ready after 2 failed warm-ups", h.s.Ready)
		require.Equal(t, 2, h.s.Workers()["0"].ErrorCount)
	})
	t.Run("gives up", func(t *testing.T) {
		h := newHarness(t, Config{MaxRestarts: 1}, false, "")
		h.fails.Store(10)
		h.start(t)
		waitFor(t, "failed", func() bool { return h.s.Workers()["0"].State == stateFailed })
		require.False(t, h.s.Ready())
		require.Contains(t, h.s.Workers()["0"].LastError, "device did not come up")
		_, err := h.s.Submit(context.Background(), sreq("x"), nil)
		require.ErrorIs(t, err, ErrNotReady)
	})
}

func TestWorkersStartInSequence(t *testing.T) {
	// The order is read from the workers' own recorded start and ready times, not from when this
	// test's polling happens to look, so a loaded machine's scheduling noise cannot fail it.
	const delay = 500 * time.Millisecond
	groups := []config.DeviceGroup{{ID: "0"}, {ID: "1"}, {ID: "2"}}
	h := newHarness(t, Config{Groups: groups, StartDelay: delay}, false, "")
	h.start(t)
	waitFor(t, "all ready", func() bool {
		for _, w := range h.s.Workers() {
			if !w.IsReady {
				return false
			}
		}
		return true
	})
	ws := h.s.Workers()
	require.True(t, ws["0"].ReadyTime.Before(ws["1"].StartTime),
		"the first worker is ready (and so the scheduler) before the second starts")
	require.GreaterOrEqual(t, ws["1"].StartTime.Sub(ws["0"].StartTime), delay)
	require.GreaterOrEqual(t, ws["2"].StartTime.Sub(ws["1"].StartTime), delay)
}

func TestRestartWorker(t *testing.T) {
	var resets atomic.Int64
	h := newHarness(t, Config{Reset: func(ctx context.Context, g []config.DeviceGroup) error {
		resets.Add(1)
		return nil
	}}, false, "")
	h.start(t)
	waitFor(t, "ready", h.s.Ready)
	_, err := h.s.RestartWorker("7")
	require.ErrorIs(t, err, ErrUnknownWorker)
	rs, err := h.s.RestartWorker("0")
	require.NoError(t, err)
	require.Equal(t, WorkerReset{Worker: "0", State: stateReady, Action: ResetRestart}, rs)
	waitFor(t, "restarted", func() bool { return h.s.Workers()["0"].RestartCount == 1 && h.s.Ready() })
	require.Equal(t, int64(1), resets.Load())
	require.Equal(t, int64(2), h.made.Load())
	_, err = h.s.Submit(context.Background(), sreq("after"), nil)
	require.NoError(t, err)
}

func TestStopFinishesInFlightAndRefusesNew(t *testing.T) {
	h := newHarness(t, Config{}, true, "")
	h.s.Start(context.Background())
	waitFor(t, "ready", h.s.Ready)
	res := make(chan error, 1)
	go func() { _, err := h.s.Submit(context.Background(), sreq("inflight"), nil); res <- err }()
	waitFor(t, "running", func() bool { return h.runs.Load() == 1 })

	stopped := make(chan error, 1)
	go func() { stopped <- h.s.Stop(context.Background()) }()
	waitFor(t, "stopping", func() bool { return !h.s.Ready() })
	_, err := h.s.Submit(context.Background(), sreq("late"), nil)
	require.ErrorIs(t, err, ErrStopping)
	h.gate <- struct{}{}
	require.NoError(t, <-res)
	require.NoError(t, <-stopped)
}

// Submits and canary probes racing Stop: each is answered (a result or ErrStopping), none hangs,
// and under -race the in-flight count's Add never races Stop's Wait (the CI failure of
// stop 24: a probe's Add while Stop waited with the count at zero).
func TestSubmitsAndProbesRacingStopAreAnsweredWithoutARace(t *testing.T) {
	for round := range 20 {
		rec := &canaryRecorder{}
		cfg := fastCanary()
		cfg.Tick, cfg.Wait = time.Millisecond, time.Millisecond
		h := newHarness(t, Config{Canary: rec.config(cfg, false), QueueSize: 64}, false, "")
		h.s.Start(context.Background())
		waitFor(t, "ready", h.s.Ready)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := h.s.Submit(context.Background(), sreq(fmt.Sprintf("r%d-%d", round, i)), nil)
				errs <- err
			}()
		}
		require.NoError(t, h.s.Stop(context.Background()))
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				require.ErrorIs(t, err, ErrStopping)
			}
		}
	}
}

func TestStopGraceExpiredFailsQueuedJobs(t *testing.T) {
	h := newHarness(t, Config{}, true, "")
	h.s.Start(context.Background())
	waitFor(t, "ready", h.s.Ready)
	errs := make(chan error, 2)
	go func() { _, err := h.s.Submit(context.Background(), sreq("running"), nil); errs <- err }()
	waitFor(t, "running", func() bool { return h.runs.Load() == 1 })
	go func() { _, err := h.s.Submit(context.Background(), sreq("queued"), nil); errs <- err }()
	waitFor(t, "queued", func() bool { return h.s.QueueLen() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The gate stays shut: the running batch outlives the grace (the device gives up when Stop
	// cancels the workers' context).
	require.Error(t, h.s.Stop(ctx))
	got := []error{<-errs, <-errs}
	require.True(t, errors.Is(got[0], ErrStopping) || errors.Is(got[1], ErrStopping), "queued job answered with ErrStopping: %v", got)
}

// TestStopEndsABatchTheDeviceHoldsPastTheGrace: when the shutdown grace ends while the device
// still holds a batch (its jobs have no deadline), Stop answers the jobs ErrStopping and
// returns once the runner gives up on the cancelled worker context. The fake device used to
// ignore that context, so Stop waited for it forever: on a loaded machine
// TestStopGraceExpiredFailsQueuedJobs could let the worker take its queued job behind a gate
// that never opened again, and any test failing while the gate was shut hung the whole run
// until its timeout instead of printing its failure.
func TestStopEndsABatchTheDeviceHoldsPastTheGrace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		held   string // the request the device holds when the grace ends
		before bool   // a batch ran first, and the worker took the held job from the queue
	}{
		{"a queued job taken just before the grace ended", "queued", true},
		{"a batch held whatever its deadline", "blocker", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{}, true, "")
			h.s.Start(context.Background())
			waitFor(t, "ready", h.s.Ready)
			first := make(chan error, 1)
			if tc.before {
				go func() { _, err := h.s.Submit(context.Background(), sreq("running"), nil); first <- err }()
				waitFor(t, "running", func() bool { return h.runs.Load() == 1 })
			}
			held := make(chan error, 1)
			go func() { _, err := h.s.Submit(context.Background(), sreq(tc.held), nil); held <- err }()
			if tc.before {
				waitFor(t, "queued", func() bool { return h.s.QueueLen() == 1 })
				h.gate <- struct{}{} // the running batch ends; the worker takes the queued job
				require.NoError(t, <-first)
			}
			batches := int64(1)
			if tc.before {
				batches = 2
			}
			waitFor(t, "held on the device", func() bool { return h.runs.Load() == batches })

			grace, cancel := context.WithCancel(context.Background())
			cancel() // the grace is over
			stopped := make(chan error, 1)
			go func() { stopped <- h.s.Stop(grace) }()
			select {
			case err := <-stopped:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(20 * time.Second): // a bound on failure only: Stop returns at once
				h.gate <- struct{}{} // let the worker end, so that this test fails instead of hanging
				t.Fatal("Stop did not return: it waits for a batch the device holds after the server stopped")
			}
			require.ErrorIs(t, <-held, ErrStopping)
		})
	}
}

// lostRunner reports its device lost on the first batch.
type lostRunner struct{ runs *atomic.Int64 }

func (l *lostRunner) Warmup(context.Context) error { return nil }
func (l *lostRunner) Close() error                 { return nil }
func (l *lostRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i := range tasks {
		if l.runs.Add(1) == 1 {
			out[i] = runners.Outcome{Err: fmt.Errorf("child exited: %w", runners.ErrDeviceLost)}
		} else {
			out[i] = runners.Outcome{Value: sreq("ok")}
		}
	}
	return out
}

func TestDeviceLostRestartsWorker(t *testing.T) {
	var runs atomic.Int64
	var made atomic.Int64
	var resets atomic.Int64
	s := New(Config{Groups: []config.DeviceGroup{{ID: "0,1", Devices: []int{0, 1}}}, QueueSize: 4, MaxRestarts: 2,
		Reset: func(_ context.Context, g []config.DeviceGroup) error {
			require.Equal(t, "0,1", g[0].ID)
			resets.Add(1)
			return nil
		}},
		func(config.DeviceGroup) (runners.Runner, error) { made.Add(1); return &lostRunner{runs: &runs}, nil })
	s.Start(context.Background())
	defer func() { _ = s.Stop(context.Background()) }()
	waitFor(t, "ready", s.Ready)
	_, err := s.Submit(context.Background(), sreq("x"), nil)
	require.ErrorIs(t, err, ErrWorkerFailed)
	require.ErrorIs(t, err, runners.ErrDeviceLost)
	waitFor(t, "restarted", func() bool { return s.Workers()["0,1"].RestartCount == 1 && s.Ready() })
	v, err := s.Submit(context.Background(), sreq("y"), nil)
	require.NoError(t, err)
	require.Equal(t, sreq("ok"), v)
	require.Equal(t, int64(1), resets.Load())
	require.Equal(t, int64(2), made.Load())
}

// probeRunner fails its probe once, while idle.
type probeRunner struct {
	probes *atomic.Int64
}

func (p *probeRunner) Warmup(context.Context) error { return nil }
func (p *probeRunner) Close() error                 { return nil }
func (p *probeRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i := range out {
		out[i] = runners.Outcome{Value: sreq("ok")}
	}
	return out
}
func (p *probeRunner) Probe(context.Context) error {
	if p.probes.Add(1) == 2 {
		return fmt.Errorf("child exited: %w", runners.ErrDeviceLost)
	}
	return nil
}

func TestIdleCanaryFindsDeadDevice(t *testing.T) {
	var probes, made atomic.Int64
	s := New(Config{Groups: []config.DeviceGroup{{ID: "0"}}, QueueSize: 2, MaxRestarts: 3, CanaryInterval: 20 * time.Millisecond},
		func(config.DeviceGroup) (runners.Runner, error) {
			made.Add(1)
			return &probeRunner{probes: &probes}, nil
		})
	s.Start(context.Background())
	defer func() { _ = s.Stop(context.Background()) }()
	waitFor(t, "restart after the failed probe", func() bool { return s.Workers()["0"].RestartCount == 1 && s.Ready() })
	require.Equal(t, int64(2), made.Load())
	require.Contains(t, s.Workers()["0"].LastError, "canary probe")
	v, err := s.Submit(context.Background(), sreq("x"), nil)
	require.NoError(t, err)
	require.Equal(t, sreq("ok"), v)
}

// earlyDeadlineRunner reports the job's deadline before this process's timer fires, as a
// worker process on its own clock can.
type earlyDeadlineRunner struct{}

func (earlyDeadlineRunner) Warmup(context.Context) error { return nil }
func (earlyDeadlineRunner) Close() error                 { return nil }
func (earlyDeadlineRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i := range out {
		out[i] = runners.Outcome{Err: fmt.Errorf("cancelled before step 9: %w", context.DeadlineExceeded)}
	}
	return out
}

func TestRunnerDeadlineIsATimeout(t *testing.T) {
	s := New(Config{Groups: []config.DeviceGroup{{ID: "0"}}, QueueSize: 2, Timeout: time.Minute},
		func(config.DeviceGroup) (runners.Runner, error) { return earlyDeadlineRunner{}, nil })
	s.Start(context.Background())
	defer func() { _ = s.Stop(context.Background()) }()
	waitFor(t, "ready", s.Ready)
	_, err := s.Submit(context.Background(), sreq("x"), nil)
	require.ErrorIs(t, err, ErrTimeout)
	require.Zero(t, s.Workers()["0"].ErrorCount, "a deadline is not a worker error")
}
