package scheduler

// The canary health monitor, as the Python server's (HEAD health_monitoring/canary_monitor.py):
// when no real request is in flight, it sends a synthetic probe through this scheduler's own
// queue, so that a worker takes it and its runner runs a real (small) inference on the device,
// in process or in a worker process alike. Consecutive misses move it from healthy to suspect
// to dead; real traffic proves liveness and resets it. States: starting (before the startup
// grace has passed), healthy, probing (a probe is out), suspect, dead. Probes come in two
// tiers with separate miss counts, shallow (the runner's smallest inference) and, every Nth
// probe when enabled, deep (a full-size one with its own timeout), so that a passing shallow
// probe cannot hide a failing deep one. The worker-level liveness probe
// (CANARY_INTERVAL_SECONDS, runners.Prober) is separate: it restarts one worker whose process
// or heartbeats are gone; this monitor judges whether the model serves.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// Canary states (HEAD's CanaryState values).
const (
	CanaryStarting = "starting"
	CanaryHealthy  = "healthy"
	CanaryProbing  = "probing"
	CanarySuspect  = "suspect"
	CanaryDead     = "dead"
	// CanaryDisabled is reported when there is no monitor (CANARY_ENABLED=false, or no probe).
	CanaryDisabled = "disabled"
)

// CanaryStates lists the monitor's states, in HEAD's order.
var CanaryStates = []string{CanaryStarting, CanaryHealthy, CanaryProbing, CanarySuspect, CanaryDead}

// Probe depths, the label of the probe metrics.
const (
	DepthShallow = "shallow"
	DepthDeep    = "deep"
)

// ProbeFunc builds a probe request for the scheduler's runner and the check its result must
// pass; deep asks for the full-size probe.
type ProbeFunc func(deep bool) (req runners.Request, check func(result runners.Result) error)

// CanaryConfig configures the monitor: CANARY_* and the hooks that export what it sees.
type CanaryConfig struct {
	config.CanarySettings
	// Probe builds probes; nil means no monitor.
	Probe ProbeFunc
	// OnState hears every state change; OnProbe every probe's outcome (not a skipped one).
	OnState func(state string)
	OnProbe func(depth string, ok bool, latency time.Duration)
}

// CanaryStatus is what /tt-liveness shows: HEAD's canary_alive and canary_state.
type CanaryStatus struct {
	Enabled bool
	State   string
	// Alive is false only when the state is dead.
	Alive bool
}

// canary is one scheduler's monitor.
type canary struct {
	s   *Scheduler
	cfg CanaryConfig
	now func() time.Time

	mu           sync.Mutex
	state        string
	misses       map[string]int
	lastActivity time.Time
	readySince   time.Time // when the scheduler was first seen ready (the startup grace's start)
	probes       int
	realDone     int64 // realFinished when last looked at
}

func newCanary(s *Scheduler, cfg CanaryConfig) *canary {
	if cfg.Tick < 50*time.Millisecond {
		cfg.Tick = 50 * time.Millisecond
	}
	return &canary{s: s, cfg: cfg, now: time.Now, state: CanaryStarting, misses: map[string]int{DepthShallow: 0, DepthDeep: 0}}
}

// Canary reports the monitor's state; Enabled is false when there is none.
func (s *Scheduler) Canary() CanaryStatus {
	if s.canary == nil {
		return CanaryStatus{State: CanaryDisabled, Alive: true}
	}
	st := s.canary.current()
	return CanaryStatus{Enabled: true, State: st, Alive: st != CanaryDead}
}

func (c *canary) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

func (c *canary) setState(st string) {
	c.mu.Lock()
	changed := c.state != st
	c.state = st
	c.mu.Unlock()
	if changed && c.cfg.OnState != nil {
		c.cfg.OnState(st)
	}
}

// run ticks until ctx ends.
func (c *canary) run(ctx context.Context) {
	if c.cfg.OnState != nil {
		c.cfg.OnState(CanaryStarting)
	}
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.tick(ctx)
		}
	}
}

// tick is one look: wait for readiness and the startup grace; real traffic since the last
// look means alive; after CANARY_WAIT_SECONDS of idleness, probe.
func (c *canary) tick(ctx context.Context) {
	if c.s.stopping.Load() || !c.s.Ready() {
		return // nothing to judge: /tt-liveness already says not ready
	}
	now := c.now()
	c.mu.Lock()
	if c.readySince.IsZero() {
		c.readySince, c.lastActivity = now, now
	}
	inGrace := now.Sub(c.readySince) < c.cfg.StartupGrace
	c.mu.Unlock()
	if inGrace {
		return
	}
	if c.sawRealActivity() {
		c.onRealActivity()
		return
	}
	c.mu.Lock()
	idle := now.Sub(c.lastActivity)
	c.mu.Unlock()
	if idle < c.cfg.Wait {
		return
	}
	c.probeOnce(ctx)
}

// sawRealActivity reports real jobs in flight, or finished since the last look.
func (c *canary) sawRealActivity() bool {
	done := c.s.realFinished.Load()
	c.mu.Lock()
	finished := done != c.realDone
	c.realDone = done
	c.mu.Unlock()
	return finished || c.s.realInflight.Load() > 0
}

// onRealActivity: a real request ran the full model, which proves both tiers.
func (c *canary) onRealActivity() {
	c.mu.Lock()
	c.lastActivity = c.now()
	c.misses[DepthShallow], c.misses[DepthDeep] = 0, 0
	c.mu.Unlock()
	c.setState(CanaryHealthy)
}

func (c *canary) probeOnce(ctx context.Context) {
	c.mu.Lock()
	c.probes++
	deep := c.cfg.DeepProbeEnabled && c.probes%max(1, c.cfg.DeepEveryN) == 0
	before := c.state
	c.mu.Unlock()
	depth, timeout := DepthShallow, c.cfg.ProbeTimeout
	if deep {
		depth, timeout = DepthDeep, c.cfg.DeepProbeTimeout
	}
	req, check := c.cfg.Probe(deep)
	pctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w: canary %s probe after %s", ErrTimeout, depth, timeout))
	defer cancel()
	start := c.now()
	v, err := c.s.submitProbe(pctx, req, func() {
		// HEAD shows probing for every probe; here a suspect or dead model stays so while it
		// is probed, so that readiness (CANARY_GATE_READINESS) does not flap with each probe.
		if before != CanarySuspect && before != CanaryDead {
			c.setState(CanaryProbing)
		}
	})
	latency := c.now().Sub(start)
	if errors.Is(err, errProbeSkipped) {
		return // the queue is full (busy, not dead) or the scheduler stops: not a miss
	}
	if ctx.Err() != nil {
		return // shutting down
	}
	if c.sawRealActivity() { // a real request during the probe proves liveness
		c.onRealActivity()
		return
	}
	if err == nil && check != nil {
		err = check(v)
	}
	ok := err == nil
	if c.cfg.OnProbe != nil {
		c.cfg.OnProbe(depth, ok, latency)
	}
	c.mu.Lock()
	if ok {
		c.misses[depth] = 0
		c.lastActivity = c.now()
	} else {
		c.misses[depth]++
	}
	worst := max(c.misses[DepthShallow], c.misses[DepthDeep])
	count := c.misses[depth]
	c.mu.Unlock()
	next := CanaryHealthy
	switch {
	case worst >= c.cfg.DeadMisses:
		next = CanaryDead
	case worst > 0:
		next = CanarySuspect
	}
	switch {
	case !ok && next == CanaryDead && before != CanaryDead:
		c.s.log.Error("canary monitor: model declared dead", "misses", count, "depth", depth, "err", err)
	case !ok:
		c.s.log.Warn("canary probe missed", "depth", depth, "miss", count, "of", c.cfg.DeadMisses, "err", err)
	case before == CanaryDead && next != CanaryDead:
		c.s.log.Info("canary monitor: probe recovered", "depth", depth, "state", next)
	}
	c.setState(next)
}

// errProbeSkipped: the probe was not queued (queue full, or stopping).
var errProbeSkipped = errors.New("canary probe skipped")

// submitProbe runs a probe job through the queue, as Submit does, but it bypasses the
// readiness check (the monitor feeds readiness) and deadline admission, is not counted as
// client traffic, and a full queue skips it. queued is called once it is in the queue.
func (s *Scheduler) submitProbe(ctx context.Context, req runners.Request, queued func()) (runners.Result, error) {
	if s.stopping.Load() {
		return nil, errProbeSkipped
	}
	j := &job{ctx: ctx, req: req, cost: 1, probe: true, client: "canary", done: make(chan runners.Outcome, 1)}
	if c, ok := req.(Costed); ok && c.Cost() > 0 {
		j.cost = c.Cost()
	}
	if b, ok := req.(Batchable); ok {
		j.batchKey = b.BatchKey()
	}
	if !s.enter() {
		return nil, errProbeSkipped
	}
	defer s.inflight.Done()
	j.queued = time.Now()
	if s.q.push(j) != pushed {
		return nil, errProbeSkipped
	}
	queued()
	select {
	case o := <-j.done:
		return o.Value, o.Err
	case <-ctx.Done():
		s.q.remove(j)
		err := context.Cause(ctx)
		if j.finishWith(runners.Outcome{Err: err}) {
			return nil, err
		}
		o := <-j.done
		return o.Value, o.Err
	}
}

// realTraffic counts a client job from admission to its outcome, for the monitor.
type realTraffic struct {
	realInflight atomic.Int64
	realFinished atomic.Int64
}

func (r *realTraffic) begin() func() {
	r.realInflight.Add(1)
	return func() {
		r.realInflight.Add(-1)
		r.realFinished.Add(1)
	}
}
