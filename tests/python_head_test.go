package tests

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// headOnlySettings are HEAD's Settings fields this server has no counterpart for (its process
// model, video jobs, LLM, training): the worker leaves them at HEAD's defaults (or what the
// environment says). Every other field must equal the server's value.
var headOnlySettings = []string{
	"use_greedy_based_allocation", "download_weights_from_service", "training_model", "chat_template_kwargs",
	"tokenizer_type", "use_dynamic_batcher", "use_queue_per_worker", "queue_for_multiprocessing",
	"new_runner_delay_seconds", "weights_distribution_timeout_seconds", "video_request_timeout_seconds",
	"sp_warmup_timeout_seconds", "max_jobs", "job_cleanup_interval_seconds", "job_retention_seconds",
	"job_max_stuck_time_seconds", "enable_job_persistence", "job_database_path", "vllm",
	"audio_chunk_duration_seconds", "use_async_video", "lora_adapter",
}

// serverSettings reads the settings the server logged at start-up (LOG_FORMAT=json): every
// setting of its config.Settings, keyed by environment variable.
func serverSettings(t *testing.T, s *server) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(s.stderr.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg      string         `json:"msg"`
			Settings map[string]any `json:"settings"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "starting tt-media-server" {
			return rec.Settings
		}
	}
	t.Fatalf("no start-up settings line in the server's log:\n%s", s.stderr.String())
	return nil
}

// pairOf reads "(r,c)" / "(r, c)" as the JSON list HEAD's tuple dumps to.
func pairOf(t *testing.T, v any) []any {
	t.Helper()
	m := regexp.MustCompile(`^\((\d+),\s*(\d+)\)$`).FindStringSubmatch(v.(string))
	require.NotNil(t, m, "pair %v", v)
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	return []any{float64(a), float64(b)}
}

// TestPythonHeadSettings: inside a Python worker, HEAD's own get_settings() (config/settings.py,
// pydantic-settings parsing the environment the server gave the worker) equals the server's
// settings, field by field — with values off every default, and DEVICE_MESH_SHAPE and
// SDXL_IMAGE_RESOLUTION given to the server in the tuple spelling HEAD itself cannot parse.
func TestPythonHeadSettings(t *testing.T) {
	t.Parallel()
	road := e2e.HeadRoad(t, repoRoot)
	dump := filepath.Join(t.TempDir(), "settings.json")
	s := startPython(t, road, map[string]string{
		"MODEL_RUNNER": "tt-xla-resnet", "DEVICE_IDS": "(0,1)", "DEVICE_MESH_SHAPE": "(1,2)", "LOG_FORMAT": "json",
		"FAKE_RUNNER_SETTINGS_DUMP": dump, "ENVIRONMENT": "production", "DEVICE": "n300", "IS_GALAXY": "false",
		"MODEL_WEIGHTS_PATH": "/weights/resnet", "PREPROCESSING_MODEL_WEIGHTS_PATH": "/weights/vad",
		"TRACE_REGION_SIZE": "123456", "SDXL_IMAGE_RESOLUTION": "(512, 512)", "MAX_QUEUE_SIZE": "17",
		"MAX_BATCH_SIZE": "2", "MAX_BATCH_DELAY_MS": "7", "MOCK_DEVICES_COUNT": "4", "MAX_WORKER_RESTART_COUNT": "3",
		"WORKER_CHECK_SLEEP_TIMEOUT": "12.5", "DEFAULT_THROTTLE_LEVEL": "3", "RESET_DEVICE_SLEEP_TIME": "0.25",
		"ALLOW_DEEP_RESET": "true", "REQUEST_PROCESSING_TIMEOUT_SECONDS": "77", "CANARY_ENABLED": "false",
		"CANARY_GATE_READINESS": "true", "CANARY_WAIT_SECONDS": "7.5", "CANARY_PROBE_TIMEOUT_SECONDS": "2.5",
		"CANARY_TICK_SECONDS": "0.5", "CANARY_DEAD_MISSES": "4", "CANARY_STARTUP_GRACE_SECONDS": "11",
		"CANARY_DEEP_PROBE_ENABLED": "true", "CANARY_DEEP_EVERY_N": "5", "CANARY_DEEP_PROBE_TIMEOUT_SECONDS": "61",
		"ALLOW_AUDIO_PREPROCESSING": "false", "MAX_AUDIO_DURATION_SECONDS": "45.5",
		"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS": "250", "MAX_AUDIO_SIZE_BYTES": "1234567",
		"AUDIO_TASK": "translate", "AUDIO_LANGUAGE": "German", "PROMETHEUS_ENDPOINT": "/prom",
	})
	eventually(t, 30*time.Second, "the worker dumped HEAD's settings", func() bool {
		_, err := os.Stat(dump)
		return err == nil
	})
	data, err := os.ReadFile(dump)
	require.NoError(t, err)
	var head map[string]any
	require.NoError(t, json.Unmarshal(data, &head))
	ours := serverSettings(t, s)

	same := func(key string) any { return ours[key] }
	whole := func(key string) func() any { // a float of seconds HEAD holds as an int
		return func() any { return math.Ceil(ours[key].(float64)) }
	}
	want := map[string]func() any{
		"environment": func() any { return same("ENVIRONMENT") }, "device": func() any { return same("DEVICE") },
		"device_ids": func() any { return same("DEVICE_IDS") }, "is_galaxy": func() any { return same("IS_GALAXY") },
		"device_mesh_shape":                             func() any { return pairOf(t, ours["DEVICE_MESH_SHAPE"]) },
		"reset_device_command":                          func() any { return same("RESET_DEVICE_COMMAND") },
		"reset_device_sleep_time":                       func() any { return same("RESET_DEVICE_SLEEP_TIME") },
		"allow_deep_reset":                              func() any { return same("ALLOW_DEEP_RESET") },
		"model_runner":                                  func() any { return same("MODEL_RUNNER") },
		"model_service":                                 func() any { return same("MODEL_SERVICE") },
		"model_weights_path":                            func() any { return same("MODEL_WEIGHTS_PATH") },
		"preprocessing_model_weights_path":              func() any { return same("PREPROCESSING_MODEL_WEIGHTS_PATH") },
		"trace_region_size":                             func() any { return same("TRACE_REGION_SIZE") },
		"sdxl_image_resolution":                         func() any { return pairOf(t, ours["SDXL_IMAGE_RESOLUTION"]) },
		"max_queue_size":                                func() any { return same("MAX_QUEUE_SIZE") },
		"max_batch_size":                                func() any { return same("MAX_BATCH_SIZE") },
		"max_batch_delay_time_ms":                       func() any { return same("MAX_BATCH_DELAY_TIME_MS") },
		"new_device_delay_seconds":                      whole("NEW_DEVICE_DELAY_SECONDS"),
		"mock_devices_count":                            func() any { return same("MOCK_DEVICES_COUNT") },
		"max_worker_restart_count":                      func() any { return same("MAX_WORKER_RESTART_COUNT") },
		"worker_check_sleep_timeout":                    func() any { return same("WORKER_CHECK_SLEEP_TIMEOUT") },
		"default_throttle_level":                        func() any { return same("DEFAULT_THROTTLE_LEVEL") },
		"request_processing_timeout_seconds":            whole("REQUEST_PROCESSING_TIMEOUT_SECONDS"),
		"allow_audio_preprocessing":                     func() any { return same("ALLOW_AUDIO_PREPROCESSING") },
		"max_audio_duration_seconds":                    func() any { return same("MAX_AUDIO_DURATION_SECONDS") },
		"max_audio_duration_with_preprocessing_seconds": func() any { return same("MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS") },
		"max_audio_size_bytes":                          func() any { return same("MAX_AUDIO_SIZE_BYTES") },
		"default_sample_rate":                           func() any { return same("DEFAULT_SAMPLE_RATE") },
		"audio_task":                                    func() any { return same("AUDIO_TASK") },
		"audio_language":                                func() any { return same("AUDIO_LANGUAGE") },
		"enable_telemetry":                              func() any { return same("ENABLE_TELEMETRY") },
		"prometheus_endpoint":                           func() any { return same("PROMETHEUS_ENDPOINT") },
	}
	for _, k := range []string{"ENABLED", "GATE_READINESS", "WAIT_SECONDS", "PROBE_TIMEOUT_SECONDS", "TICK_SECONDS",
		"DEAD_MISSES", "STARTUP_GRACE_SECONDS", "DEEP_PROBE_ENABLED", "DEEP_EVERY_N", "DEEP_PROBE_TIMEOUT_SECONDS"} {
		want["canary_"+strings.ToLower(k)] = func() any { return same("CANARY_" + k) }
	}

	var unknown []string
	for field := range head {
		if _, ok := want[field]; !ok && !contains(headOnlySettings, field) {
			unknown = append(unknown, field)
		}
	}
	sort.Strings(unknown)
	require.Empty(t, unknown, "HEAD settings neither given by the server nor listed as HEAD's own")
	for field, w := range want {
		require.Containsf(t, head, field, "HEAD has no setting %s", field)
		expected := w()
		require.NotNilf(t, expected, "the server logged no value for HEAD's %s", field)
		if f, ok := expected.(float64); ok { // JSON numbers: int and float compare as numbers
			require.InDeltaf(t, f, head[field], 1e-9, "HEAD's %s", field)
			continue
		}
		require.Equalf(t, expected, head[field], "HEAD's %s", field)
	}
	// The values are off HEAD's defaults, so equality means the server's environment arrived.
	require.Equal(t, []any{float64(1), float64(2)}, head["device_mesh_shape"])
	require.Equal(t, []any{float64(512), float64(512)}, head["sdxl_image_resolution"])
	require.EqualValues(t, 17, head["max_queue_size"])
	require.EqualValues(t, 77, head["request_processing_timeout_seconds"])
	require.Equal(t, "(0,1)", head["device_ids"])
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
