package config

// The checks of single loaded values: MODEL_RUNNER/MODEL_SERVICE, the ranges of scalar
// settings and PPROF_ADDR. LoadFrom calls them after the preset is applied.

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// checkModel validates MODEL_RUNNER and MODEL_SERVICE and fills MODEL_SERVICE when empty.
func checkModel(s *Settings) error {
	if !contains(KnownRunners(), s.ModelRunner) {
		return invalid("MODEL_RUNNER", s.ModelRunner, "accepted: %s", strings.Join(KnownRunners(), ", "))
	}
	want, err := ServiceForRunner(s.ModelRunner)
	if s.ModelService == "" {
		if err != nil {
			return err
		}
		s.ModelService = want
		return nil
	}
	if !contains(knownServices(), s.ModelService) {
		return invalid("MODEL_SERVICE", s.ModelService, "accepted: %s", strings.Join(knownServices(), ", "))
	}
	if err == nil && s.ModelService != want {
		return invalid("MODEL_SERVICE", s.ModelService, "MODEL_RUNNER=%s serves %q; leave MODEL_SERVICE unset or set it to %s", s.ModelRunner, want, want)
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }

func negative(key string, d time.Duration) error {
	return invalid(key, secs(d), "must be a number of seconds >= 0")
}

// checkScalars validates the ranges of single settings.
func checkScalars(s *Settings) error {
	intMin := []struct {
		key string
		v   int64
		min int64
	}{
		{"MAX_QUEUE_SIZE", int64(s.MaxQueueSize), 1},
		{"MAX_BATCH_SIZE", int64(s.MaxBatchSize), 1},
		{"MAX_BATCH_DELAY_MS", int64(s.MaxBatchDelay / time.Millisecond), 0},
		{"MAX_QUEUE_PER_CLIENT", int64(s.MaxQueuePerClient), 0},
		{"MAX_CONNECTIONS", int64(s.MaxConnections), 0},
		{"IMAGE_MEMORY_BUDGET_BYTES", s.ImageMemoryBudget, 1 << 20},
		{"LORA_MAX_FILE_BYTES", s.LoRAMaxFileBytes, 1},
		{"AUDIO_MEMORY_BUDGET_BYTES", s.AudioMemoryBudget, 1 << 20},
		{"TRACE_REGION_SIZE", int64(s.TraceRegionSize), 0},
		{"MOCK_DEVICES_COUNT", int64(s.MockDevicesCount), map[bool]int64{true: 1, false: 0}[s.Mock]},
		{"MAX_WORKER_RESTART_COUNT", int64(s.MaxWorkerRestarts), 0},
		{"NUM_INFERENCE_STEPS", int64(s.NumInferenceSteps), 1},
		{"MAX_AUDIO_SIZE_BYTES", s.MaxAudioSizeBytes, 1},
		{"DEFAULT_SAMPLE_RATE", int64(s.DefaultSampleRate), 1},
	}
	for _, c := range intMin {
		if c.v < c.min {
			return invalid(c.key, strconv.FormatInt(c.v, 10), "must be an integer >= %d", c.min)
		}
	}
	if s.ImageQuality < 1 || s.ImageQuality > 100 {
		return invalid("IMAGE_QUALITY", itoa(s.ImageQuality), "must be an integer from 1 to 100")
	}
	if s.Port < 0 || s.Port > 65535 {
		return invalid("SERVICE_PORT", itoa(s.Port), "must be a port number from 0 (any free port) to 65535")
	}
	if !contains(imageFormats, s.ImageReturnFormat) {
		return invalid("IMAGE_RETURN_FORMAT", s.ImageReturnFormat, "accepted: %s", strings.Join(imageFormats, ", "))
	}
	if s.WorkerIsolation != IsolationProcess && s.WorkerIsolation != IsolationInProcess {
		return invalid("WORKER_ISOLATION", s.WorkerIsolation, "accepted: %s, %s", IsolationProcess, IsolationInProcess)
	}
	if s.LogFormat != "text" && s.LogFormat != "json" {
		return invalid("LOG_FORMAT", s.LogFormat, "accepted: text, json")
	}
	levelNames := make([]string, len(logLevels))
	for i, l := range logLevels {
		levelNames[i] = l.name
	}
	if !contains(levelNames, s.LogLevel) {
		return invalid("LOG_LEVEL", s.LogLevel, "accepted: %s", strings.Join(levelNames, ", "))
	}
	for _, c := range []struct {
		key string
		v   float64
	}{
		{"MAX_AUDIO_DURATION_SECONDS", s.MaxAudioDuration},
		{"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS", s.MaxAudioDurationWithPreprocessing},
	} {
		if c.v <= 0 {
			return invalid(c.key, strconv.FormatFloat(c.v, 'g', -1, 64), "must be a number of seconds > 0")
		}
	}
	for _, c := range []struct {
		key      string
		d        time.Duration
		positive bool
	}{
		{"RESET_DEVICE_SLEEP_TIME", s.ResetDeviceSleep, false},
		{"WORKER_CHECK_SLEEP_TIMEOUT", s.WorkerCheckInterval, true},
		{"DEFAULT_INFERENCE_TIMEOUT_SECONDS", s.InferenceTimeout, true},
		{"BODY_STALL_TIMEOUT_SECONDS", s.BodyStallTimeout, true},
		{"SHUTDOWN_GRACE_SECONDS", s.ShutdownGrace, false},
		{"MOCK_WARMUP_SECONDS", s.MockWarmup, false},
		{"MOCK_STEP_SECONDS", s.MockStepLatency, false},
		{"MOCK_AUDIO_SECONDS_PER_SECOND", s.MockAudioLatency, false},
		{"MOCK_CNN_SECONDS", s.MockImageLatency, false},
		{"MOCK_TTS_STEP_SECONDS", s.MockSpeechStep, false},
	} {
		if c.positive && c.d <= 0 {
			return invalid(c.key, secs(c.d), "must be a number of seconds > 0")
		}
		if c.d < 0 {
			return negative(c.key, c.d)
		}
	}
	return nil
}

// checkPprofAddr accepts an empty PPROF_ADDR (no profiler) or a loopback host:port: the
// profiler shows the process's internals and must not be reachable from another machine.
func checkPprofAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return invalid("PPROF_ADDR", addr, "not host:port (%v)", err)
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return invalid("PPROF_ADDR", addr, "must be a loopback host:port (127.0.0.1:6061, [::1]:6061 or localhost:6061)")
	}
	return nil
}
