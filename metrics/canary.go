package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// canaryMetrics are HEAD's canary-monitor metrics (telemetry_client.py), with HEAD's names
// (no tt_media_server_ prefix) and labels: the monitor's state, its probe misses and probe
// latency by depth (shallow, deep), and when a probe last succeeded.
type canaryMetrics struct {
	state       *prometheus.GaugeVec
	failures    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
}

func newCanaryMetrics(reg *prometheus.Registry) *canaryMetrics {
	c := &canaryMetrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tt_canary_state",
			Help: "Current canary-monitor state (1 for the active state, 0 otherwise)"}, []string{"model_type", "state"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tt_canary_failures_total",
			Help: "Total number of canary-monitor probe misses (timeout / error / bad answer)"}, []string{"model_type", "depth"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tt_canary_probe_latency_seconds",
			Help: "Round-trip latency of a canary-monitor probe in seconds", Buckets: latencyBuckets}, []string{"model_type", "depth"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tt_canary_last_success_timestamp",
			Help: "Unix timestamp of the last successful canary-monitor probe"}, []string{"model_type"}),
	}
	reg.MustRegister(c.state, c.failures, c.latency, c.lastSuccess)
	return c
}

// CanaryState sets tt_canary_state of model: 1 for state, 0 for the other states.
func (m *Metrics) CanaryState(model, state string, states []string) {
	for _, s := range states {
		v := 0.0
		if s == state {
			v = 1
		}
		m.canary.state.WithLabelValues(model, s).Set(v)
	}
}

// CanaryProbe records one probe's outcome: a miss counts in tt_canary_failures_total; a
// success sets tt_canary_last_success_timestamp and observes its latency.
func (m *Metrics) CanaryProbe(model, depth string, ok bool, latency time.Duration) {
	if !ok {
		m.canary.failures.WithLabelValues(model, depth).Inc()
		return
	}
	m.canary.lastSuccess.WithLabelValues(model).Set(float64(time.Now().UnixNano()) / 1e9)
	m.canary.latency.WithLabelValues(model, depth).Observe(latency.Seconds())
}
