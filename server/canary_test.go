package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/metrics"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// TestLivenessCanary: /tt-liveness carries HEAD's canary_alive and canary_state; a dead canary
// makes it and /health 503 only with CANARY_GATE_READINESS.
func TestLivenessCanary(t *testing.T) {
	tests := []struct {
		state          string // fakeSched.canary ("" = no monitor)
		gate           bool
		wantState      string
		alive          bool
		liveness, heal int
	}{
		{"", false, scheduler.CanaryDisabled, true, 200, 200},
		{scheduler.CanaryHealthy, true, scheduler.CanaryHealthy, true, 200, 200},
		{scheduler.CanarySuspect, true, scheduler.CanarySuspect, true, 200, 200},
		{scheduler.CanaryDead, false, scheduler.CanaryDead, false, 200, 200},
		{scheduler.CanaryDead, true, scheduler.CanaryDead, false, 503, 503},
	}
	for _, tc := range tests {
		cfg := testSettings()
		cfg.Canary.GateReadiness = tc.gate
		h := New(Deps{Settings: cfg, Service: runners.ServiceImage, Sched: &fakeSched{ready: true, canary: tc.state}}).Handler()
		w := do(h, "GET", "/tt-liveness", "", "", nil)
		require.Equal(t, tc.liveness, w.Code, "%+v: %s", tc, w.Body.String())
		var m map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m))
		require.Equal(t, tc.wantState, m["canary_state"])
		require.Equal(t, tc.alive, m["canary_alive"])
		hw := do(h, "GET", "/health", "", "", nil)
		require.Equal(t, tc.heal, hw.Code)
		if tc.heal == 503 {
			require.JSONEq(t, `{"detail":"Canary monitor: model not serving"}`, hw.Body.String())
			require.Equal(t, "Canary monitor: model not serving", m["detail"])
		}
	}
}

// TestTelemetrySettings: HEAD's ENABLE_TELEMETRY=false unmounts the metrics route,
// PROMETHEUS_ENDPOINT moves it.
func TestTelemetrySettings(t *testing.T) {
	tests := []struct {
		enable         bool
		path           string
		metrics, moved int
	}{
		{true, "/metrics", 200, 404},
		{true, "/prom", 404, 200},
		{false, "/metrics", 404, 404},
	}
	for _, tc := range tests {
		cfg := testSettings()
		cfg.EnableTelemetry, cfg.PrometheusEndpoint = tc.enable, tc.path
		h := New(Deps{Settings: cfg, Service: runners.ServiceImage, Sched: &fakeSched{ready: true}, Metrics: metrics.New()}).Handler()
		require.Equal(t, tc.metrics, do(h, "GET", "/metrics", "", "", nil).Code, "%+v", tc)
		require.Equal(t, tc.moved, do(h, "GET", "/prom", "", "", nil).Code, "%+v", tc)
	}
}
