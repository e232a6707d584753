package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHeadSettings(t *testing.T) {
	s := load(t, env{}, true)
	require.False(t, s.NoAuth)
	require.Equal(t, "English", s.AudioLanguage)
	require.Equal(t, "transcribe", s.AudioTask)
	require.Equal(t, 1024, s.SDXLResolution)
	require.True(t, s.EnableTelemetry)
	require.Empty(t, s.HeadNoEffect)
	require.Equal(t, "/metrics", s.PrometheusEndpoint)
	require.Equal(t, 90*time.Second, s.InferenceTimeout, "the seed's DEFAULT_INFERENCE_TIMEOUT_SECONDS when REQUEST_PROCESSING_TIMEOUT_SECONDS is unset")
	require.Equal(t, CanarySettings{Enabled: true, Wait: 5 * time.Second, ProbeTimeout: 3 * time.Second, Tick: time.Second,
		DeadMisses: 3, StartupGrace: 30 * time.Second, DeepEveryN: 3, DeepProbeTimeout: 60 * time.Second}, s.Canary)

	tests := []struct {
		env   env
		check func(t *testing.T, s *Settings)
	}{
		{env{"NO_AUTH": "yes", "SERVED_MODEL_NAME": " my-sdxl "}, func(t *testing.T, s *Settings) {
			require.True(t, s.NoAuth)
			require.Equal(t, "my-sdxl", s.ServedModelName)
		}},
		{env{"REQUEST_PROCESSING_TIMEOUT_SECONDS": "1000", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "90"}, func(t *testing.T, s *Settings) {
			require.Equal(t, 1000*time.Second, s.InferenceTimeout)
			require.True(t, s.RequestTimeoutSet)
		}},
		{env{"AUDIO_TASK": "Translate", "AUDIO_LANGUAGE": "de"}, func(t *testing.T, s *Settings) {
			require.Equal(t, "translate", s.AudioTask)
			require.Equal(t, "de", s.AudioLanguage)
		}},
		{env{"SDXL_IMAGE_RESOLUTION": "(512, 512)"}, func(t *testing.T, s *Settings) { require.Equal(t, 512, s.SDXLResolution) }},
		{env{"SDXL_IMAGE_RESOLUTION": "[512,512]"}, func(t *testing.T, s *Settings) { require.Equal(t, 512, s.SDXLResolution) }},
		{env{"SDXL_IMAGE_RESOLUTION": "512x512"}, func(t *testing.T, s *Settings) { require.Equal(t, 512, s.SDXLResolution) }},
		{env{"SDXL_IMAGE_RESOLUTION": "1024"}, func(t *testing.T, s *Settings) { require.Equal(t, 1024, s.SDXLResolution) }},
		{env{"MAX_BATCH_DELAY_TIME_MS": "25", "ENABLE_TELEMETRY": "false", "PROMETHEUS_ENDPOINT": "/prom"}, func(t *testing.T, s *Settings) {
			require.Equal(t, 25*time.Millisecond, s.MaxBatchDelay, "HEAD's name of MAX_BATCH_DELAY_MS")
			require.False(t, s.EnableTelemetry)
			require.Equal(t, "/prom", s.PrometheusEndpoint)
		}},
		{env{"USE_DYNAMIC_BATCHER": "true", "NEW_RUNNER_DELAY_SECONDS": "2"}, func(t *testing.T, s *Settings) {
			require.ElementsMatch(t, []string{"USE_DYNAMIC_BATCHER", "NEW_RUNNER_DELAY_SECONDS"}, s.HeadNoEffect)
		}},
		{env{"CANARY_ENABLED": "false", "CANARY_GATE_READINESS": "true", "CANARY_DEAD_MISSES": "5", "CANARY_TICK_SECONDS": "0.1"}, func(t *testing.T, s *Settings) {
			require.False(t, s.Canary.Enabled)
			require.True(t, s.Canary.GateReadiness)
			require.Equal(t, 5, s.Canary.DeadMisses)
			require.Equal(t, 100*time.Millisecond, s.Canary.Tick)
		}},
	}
	for _, tc := range tests {
		tc.check(t, load(t, tc.env, true))
	}

	bad := []struct {
		env env
		key string
	}{
		{env{"NO_AUTH": "maybe"}, "NO_AUTH"},
		{env{"AUDIO_TASK": "summarize"}, "AUDIO_TASK"},
		{env{"AUDIO_LANGUAGE": " "}, "AUDIO_LANGUAGE"},
		{env{"SDXL_IMAGE_RESOLUTION": "(768, 768)"}, "SDXL_IMAGE_RESOLUTION"},
		{env{"SDXL_IMAGE_RESOLUTION": "(1024, 512)"}, "SDXL_IMAGE_RESOLUTION"},
		{env{"REQUEST_PROCESSING_TIMEOUT_SECONDS": "-1"}, "REQUEST_PROCESSING_TIMEOUT_SECONDS"},
		{env{"CANARY_DEAD_MISSES": "0"}, "CANARY_DEAD_MISSES"},
		{env{"MAX_BATCH_DELAY_TIME_MS": "-5"}, "MAX_BATCH_DELAY_TIME_MS"},
		{env{"PROMETHEUS_ENDPOINT": "metrics"}, "PROMETHEUS_ENDPOINT"},
		{env{"PROMETHEUS_ENDPOINT": "/health"}, "PROMETHEUS_ENDPOINT"},
		{env{"ENABLE_TELEMETRY": "sometimes"}, "ENABLE_TELEMETRY"},
		{env{"CANARY_PROBE_TIMEOUT_SECONDS": "0"}, "CANARY_PROBE_TIMEOUT_SECONDS"},
		{env{"CANARY_WAIT_SECONDS": "-2"}, "CANARY_WAIT_SECONDS"},
	}
	for _, tc := range bad {
		_, err := LoadFrom(tc.env.lookup, "", true)
		require.ErrorIs(t, err, ErrInvalid, "%v", tc.env)
		require.Contains(t, err.Error(), tc.key)
	}
}
