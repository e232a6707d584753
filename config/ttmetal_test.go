package config

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTTMetalEnvFrom(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want TTMetalEnv
	}{
		{"none", nil, TTMetalEnv{}},
		{"all", map[string]string{"TT_METAL_CACHE": "/c", "TT_METAL_OPERATION_TIMEOUT_SECONDS": "", "TT_VISIBLE_DEVICES": "2,3", "DEVICE_BACKEND": "sim"},
			TTMetalEnv{Cache: "/c", OperationTimeoutSet: true, VisibleDevices: "2,3", DeviceBackend: "sim"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := TTMetalEnvFrom(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSlogLevel(t *testing.T) {
	tests := []struct {
		level string
		want  slog.Level
	}{
		{"DEBUG", slog.LevelDebug}, {"debug", slog.LevelDebug}, {"INFO", slog.LevelInfo}, {"NOTSET", slog.LevelInfo},
		{"WARNING", slog.LevelWarn}, {"WARN", slog.LevelWarn}, {"ERROR", slog.LevelError},
		{"CRITICAL", slog.LevelError}, {"FATAL", slog.LevelError}, {"bogus", slog.LevelInfo},
	}
	for _, tc := range tests {
		t.Run(tc.level, func(t *testing.T) {
			require.Equal(t, tc.want, (&Settings{LogLevel: tc.level}).SlogLevel())
		})
	}
}
