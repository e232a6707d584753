package procrunner

// The environment of a Python worker in the form HEAD's config/settings.py (pydantic-settings)
// parses, with the values this server runs.

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
)

// HeadEnv is the environment that makes HEAD's Settings (get_settings(), which every HEAD runner
// and request model reads) inside a Python worker of runner equal this server's settings: every
// HEAD setting this server has a value for, written as pydantic parses it — tuples as JSON
// ("[1,1]"; "(1,1)" is a SettingsError), integers without a fraction, booleans as true/false.
// The values are the resolved ones (preset and mesh overrides applied), so MODEL is passed empty
// and TP2, SD_3_5_BASE, SD_3_5_FAST and SP_MESH_4X32 false: HEAD must not apply a preset or a
// mesh override a second time (its preset would also replace MODEL_WEIGHTS_PATH). HEAD settings
// this server has no counterpart for keep HEAD's defaults (or what the environment says).
// Entries go after os.Environ() and WorkerEnv's.
func HeadEnv(s *config.Settings, runner string) []string {
	service, groups := s.Service(), s.DeviceIDs
	for _, p := range s.Pools {
		if p.Runner == runner {
			service, groups = p.Service, formatGroups(p.Groups)
		}
	}
	if svc, err := config.ServiceForRunner(runner); err == nil && service == "" {
		service = svc
	}
	c := s.Canary
	vars := [][2]string{
		{"MODEL", ""}, {"TP2", "false"}, {"SD_3_5_BASE", "false"}, {"SD_3_5_FAST", "false"}, {"SP_MESH_4X32", "false"},
		{"ENVIRONMENT", s.Environment},
		{"DEVICE", s.Device},
		{"DEVICE_IDS", groups},
		{"IS_GALAXY", strconv.FormatBool(s.IsGalaxy)},
		{"DEVICE_MESH_SHAPE", jsonPair(s.DeviceMeshShape.Rows, s.DeviceMeshShape.Cols)},
		{"RESET_DEVICE_COMMAND", s.ResetDeviceCommand},
		{"RESET_DEVICE_SLEEP_TIME", seconds(s.ResetDeviceSleep)},
		{"ALLOW_DEEP_RESET", strconv.FormatBool(s.AllowDeepReset)},
		{"MODEL_RUNNER", runner},
		{"MODEL_SERVICE", service},
		{"MODEL_WEIGHTS_PATH", s.ModelWeightsPath},
		{"PREPROCESSING_MODEL_WEIGHTS_PATH", s.PreprocessingModelWeightsPath},
		{"TRACE_REGION_SIZE", strconv.Itoa(s.TraceRegionSize)},
		{"SDXL_IMAGE_RESOLUTION", jsonPair(s.SDXLResolution, s.SDXLResolution)},
		{"MAX_QUEUE_SIZE", strconv.Itoa(s.MaxQueueSize)},
		{"MAX_BATCH_SIZE", strconv.Itoa(s.MaxBatchSize)},
		{"MAX_BATCH_DELAY_TIME_MS", strconv.FormatInt(s.MaxBatchDelay.Milliseconds(), 10)},
		{"NEW_DEVICE_DELAY_SECONDS", wholeSeconds(s.NewDeviceDelay)},
		{"MOCK_DEVICES_COUNT", strconv.Itoa(s.MockDevicesCount)},
		{"MAX_WORKER_RESTART_COUNT", strconv.Itoa(s.MaxWorkerRestarts)},
		{"WORKER_CHECK_SLEEP_TIMEOUT", seconds(s.WorkerCheckInterval)},
		{"DEFAULT_THROTTLE_LEVEL", s.DefaultThrottleLevel},
		{"REQUEST_PROCESSING_TIMEOUT_SECONDS", wholeSeconds(s.InferenceTimeout)},
		{"CANARY_ENABLED", strconv.FormatBool(c.Enabled)},
		{"CANARY_GATE_READINESS", strconv.FormatBool(c.GateReadiness)},
		{"CANARY_WAIT_SECONDS", seconds(c.Wait)},
		{"CANARY_PROBE_TIMEOUT_SECONDS", seconds(c.ProbeTimeout)},
		{"CANARY_TICK_SECONDS", seconds(c.Tick)},
		{"CANARY_DEAD_MISSES", strconv.Itoa(c.DeadMisses)},
		{"CANARY_STARTUP_GRACE_SECONDS", seconds(c.StartupGrace)},
		{"CANARY_DEEP_PROBE_ENABLED", strconv.FormatBool(c.DeepProbeEnabled)},
		{"CANARY_DEEP_EVERY_N", strconv.Itoa(c.DeepEveryN)},
		{"CANARY_DEEP_PROBE_TIMEOUT_SECONDS", seconds(c.DeepProbeTimeout)},
		{"ALLOW_AUDIO_PREPROCESSING", strconv.FormatBool(s.AllowAudioPreprocessing)},
		{"MAX_AUDIO_DURATION_SECONDS", strconv.FormatFloat(s.MaxAudioDuration, 'f', -1, 64)},
		{"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS", strconv.FormatFloat(s.MaxAudioDurationWithPreprocessing, 'f', -1, 64)},
		{"MAX_AUDIO_SIZE_BYTES", strconv.FormatInt(s.MaxAudioSizeBytes, 10)},
		{"DEFAULT_SAMPLE_RATE", strconv.Itoa(s.DefaultSampleRate)},
		{"AUDIO_TASK", s.AudioTask},
		{"AUDIO_LANGUAGE", s.AudioLanguage},
		{"ENABLE_TELEMETRY", strconv.FormatBool(s.EnableTelemetry)},
		{"PROMETHEUS_ENDPOINT", s.PrometheusEndpoint},
	}
	env := make([]string, len(vars))
	for i, kv := range vars {
		env[i] = kv[0] + "=" + kv[1]
	}
	return env
}

// jsonPair is a 2-tuple as pydantic reads a tuple from the environment: JSON.
func jsonPair(a, b int) string { return "[" + strconv.Itoa(a) + "," + strconv.Itoa(b) + "]" }

// seconds is a duration as a float setting.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// wholeSeconds is a duration as an int setting: whole seconds, a fraction rounded up (a
// deadline is never shortened).
func wholeSeconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// formatGroups writes device groups as DEVICE_IDS does: "(0),(1)", "(0,1)".
func formatGroups(groups []config.DeviceGroup) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = "(" + g.ID + ")"
	}
	return strings.Join(parts, ",")
}
