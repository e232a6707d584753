package config

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// headEnv holds the settings the Python server gained after the seed (HEAD, 11ac526e0):
// NO_AUTH, SERVED_MODEL_NAME, REQUEST_PROCESSING_TIMEOUT_SECONDS, AUDIO_LANGUAGE, AUDIO_TASK,
// SDXL_IMAGE_RESOLUTION and the canary monitor's CANARY_*. Names and defaults are HEAD's
// config/settings.py (and security/api_key_checker.py for NO_AUTH).
type headEnv struct {
	NoAuth          envBool    `envconfig:"NO_AUTH" default:"false"`
	ServedModelName string     `envconfig:"SERVED_MODEL_NAME"`
	RequestTimeout  optSeconds `envconfig:"REQUEST_PROCESSING_TIMEOUT_SECONDS"`
	AudioLanguage   string     `envconfig:"AUDIO_LANGUAGE" default:"English"`
	AudioTask       string     `envconfig:"AUDIO_TASK" default:"transcribe"`
	SDXLResolution  string     `envconfig:"SDXL_IMAGE_RESOLUTION" default:"(1024, 1024)"`
	// HEAD's spellings of settings the seed did not have.
	MaxBatchDelayTimeMS optInt  `envconfig:"MAX_BATCH_DELAY_TIME_MS"`
	EnableTelemetry     envBool `envconfig:"ENABLE_TELEMETRY" default:"true"`
	PrometheusEndpoint  string  `envconfig:"PROMETHEUS_ENDPOINT" default:"/metrics"`

	CanaryEnabled          envBool    `envconfig:"CANARY_ENABLED" default:"true"`
	CanaryGateReadiness    envBool    `envconfig:"CANARY_GATE_READINESS" default:"false"`
	CanaryWait             envSeconds `envconfig:"CANARY_WAIT_SECONDS" default:"5"`
	CanaryProbeTimeout     envSeconds `envconfig:"CANARY_PROBE_TIMEOUT_SECONDS" default:"3"`
	CanaryTick             envSeconds `envconfig:"CANARY_TICK_SECONDS" default:"1"`
	CanaryDeadMisses       envInt     `envconfig:"CANARY_DEAD_MISSES" default:"3"`
	CanaryStartupGrace     envSeconds `envconfig:"CANARY_STARTUP_GRACE_SECONDS" default:"30"`
	CanaryDeepProbeEnabled envBool    `envconfig:"CANARY_DEEP_PROBE_ENABLED" default:"false"`
	CanaryDeepEveryN       envInt     `envconfig:"CANARY_DEEP_EVERY_N" default:"3"`
	CanaryDeepProbeTimeout envSeconds `envconfig:"CANARY_DEEP_PROBE_TIMEOUT_SECONDS" default:"60"`
}

// CanarySettings configure the canary health monitor (scheduler/canary.go), as HEAD's
// health_monitoring/canary_monitor.py.
type CanarySettings struct {
	Enabled          bool          // CANARY_ENABLED, default true
	GateReadiness    bool          // CANARY_GATE_READINESS, default false: a dead canary makes /tt-liveness and /health 503
	Wait             time.Duration // CANARY_WAIT_SECONDS, default 5: idle time before a probe
	ProbeTimeout     time.Duration // CANARY_PROBE_TIMEOUT_SECONDS, default 3: a slower probe is a miss
	Tick             time.Duration // CANARY_TICK_SECONDS, default 1: the monitor's cadence (at least 50 ms)
	DeadMisses       int           // CANARY_DEAD_MISSES, default 3: consecutive misses before dead
	StartupGrace     time.Duration // CANARY_STARTUP_GRACE_SECONDS, default 30: no probe this long after the model is ready
	DeepProbeEnabled bool          // CANARY_DEEP_PROBE_ENABLED, default false: every Nth probe is a deep one
	DeepEveryN       int           // CANARY_DEEP_EVERY_N, default 3
	DeepProbeTimeout time.Duration // CANARY_DEEP_PROBE_TIMEOUT_SECONDS, default 60
}

// audioTasks are AUDIO_TASK's values.
var audioTasks = []string{"transcribe", "translate"}

// resolutionRe reads SDXL_IMAGE_RESOLUTION: "1024", "512x512", or the tuple as pydantic
// reads it from the environment ("(512, 512)", "[512, 512]").
var resolutionRe = regexp.MustCompile(`^\s*[\[(]?\s*(\d+)\s*(?:[,x×]\s*(\d+)\s*)?[\])]?\s*$`)

// headNoEffect are HEAD settings of its Python process model that have no counterpart here
// (one Go process, one queue per model, runners built per worker). When set they are named in a
// start-up warning instead of being ignored silently.
var headNoEffect = []string{"NEW_RUNNER_DELAY_SECONDS", "QUEUE_FOR_MULTIPROCESSING", "USE_DYNAMIC_BATCHER",
	"USE_QUEUE_PER_WORKER", "AUDIO_CHUNK_DURATION_SECONDS", "WEIGHTS_DISTRIBUTION_TIMEOUT_SECONDS",
	"USE_GREEDY_BASED_ALLOCATION", "DOWNLOAD_WEIGHTS_FROM_SERVICE", "ENABLE_METRICS"}

// loadHead reads HEAD's settings into s. REQUEST_PROCESSING_TIMEOUT_SECONDS, when set,
// replaces DEFAULT_INFERENCE_TIMEOUT_SECONDS: HEAD renamed the request deadline.
func loadHead(s *Settings, lookup func(string) (string, bool)) error {
	var h headEnv
	if err := processVars(lookup, &h); err != nil {
		return err
	}
	for _, key := range headNoEffect {
		if _, ok := lookup(key); ok {
			s.HeadNoEffect = append(s.HeadNoEffect, key)
		}
	}
	s.NoAuth = bool(h.NoAuth)
	s.ServedModelName = strings.TrimSpace(h.ServedModelName)
	if h.RequestTimeout.set {
		d := time.Duration(h.RequestTimeout.v)
		if d < 0 {
			return negative("REQUEST_PROCESSING_TIMEOUT_SECONDS", d)
		}
		s.InferenceTimeout = d
		s.RequestTimeoutSet = true
	}
	s.AudioLanguage = strings.TrimSpace(h.AudioLanguage)
	if s.AudioLanguage == "" {
		return invalid("AUDIO_LANGUAGE", h.AudioLanguage, "must name a language (e.g. English or en)")
	}
	s.AudioTask = strings.ToLower(strings.TrimSpace(h.AudioTask))
	if !contains(audioTasks, s.AudioTask) {
		return invalid("AUDIO_TASK", h.AudioTask, "accepted: %s", strings.Join(audioTasks, ", "))
	}
	m := resolutionRe.FindStringSubmatch(h.SDXLResolution)
	if m == nil || (m[2] != "" && m[2] != m[1]) || (m[1] != "1024" && m[1] != "512") {
		return invalid("SDXL_IMAGE_RESOLUTION", h.SDXLResolution, "accepted: (1024, 1024) or (512, 512) (also 1024, 512, 512x512)")
	}
	s.SDXLResolution, _ = strconv.Atoi(m[1])
	if h.MaxBatchDelayTimeMS.set { // HEAD's name of MAX_BATCH_DELAY_MS
		if h.MaxBatchDelayTimeMS.v < 0 {
			return invalid("MAX_BATCH_DELAY_TIME_MS", itoa(int(h.MaxBatchDelayTimeMS.v)), "must be >= 0")
		}
		s.MaxBatchDelay = time.Duration(h.MaxBatchDelayTimeMS.v) * time.Millisecond
	}
	s.EnableTelemetry = bool(h.EnableTelemetry)
	s.PrometheusEndpoint = strings.TrimSpace(h.PrometheusEndpoint)
	if !strings.HasPrefix(s.PrometheusEndpoint, "/") || strings.ContainsAny(s.PrometheusEndpoint, " ?#*:") || s.PrometheusEndpoint == "/" {
		return invalid("PROMETHEUS_ENDPOINT", h.PrometheusEndpoint, "must be a path such as /metrics")
	}
	for _, taken := range []string{"/v1", "/tt-", "/ui", "/image", "/audio", "/cnn", "/health", "/docs", "/openapi.json"} {
		if strings.HasPrefix(s.PrometheusEndpoint, taken) {
			return invalid("PROMETHEUS_ENDPOINT", h.PrometheusEndpoint, "%s... is an API route's path", taken)
		}
	}

	c := CanarySettings{
		Enabled: bool(h.CanaryEnabled), GateReadiness: bool(h.CanaryGateReadiness),
		Wait: time.Duration(h.CanaryWait), ProbeTimeout: time.Duration(h.CanaryProbeTimeout),
		Tick: time.Duration(h.CanaryTick), DeadMisses: int(h.CanaryDeadMisses),
		StartupGrace: time.Duration(h.CanaryStartupGrace), DeepProbeEnabled: bool(h.CanaryDeepProbeEnabled),
		DeepEveryN: int(h.CanaryDeepEveryN), DeepProbeTimeout: time.Duration(h.CanaryDeepProbeTimeout),
	}
	for key, d := range map[string]time.Duration{"CANARY_WAIT_SECONDS": c.Wait, "CANARY_STARTUP_GRACE_SECONDS": c.StartupGrace} {
		if d < 0 {
			return negative(key, d)
		}
	}
	for key, d := range map[string]time.Duration{"CANARY_PROBE_TIMEOUT_SECONDS": c.ProbeTimeout,
		"CANARY_TICK_SECONDS": c.Tick, "CANARY_DEEP_PROBE_TIMEOUT_SECONDS": c.DeepProbeTimeout} {
		if d <= 0 {
			return invalid(key, secs(d), "must be a number of seconds > 0")
		}
	}
	if c.DeadMisses < 1 {
		return invalid("CANARY_DEAD_MISSES", itoa(c.DeadMisses), "must be at least 1")
	}
	if c.DeepEveryN < 1 {
		return invalid("CANARY_DEEP_EVERY_N", itoa(c.DeepEveryN), "must be at least 1")
	}
	s.Canary = c
	return nil
}

// headRedacted adds HEAD's settings to Redacted's map.
func (s *Settings) headRedacted(m map[string]any) {
	m["NO_AUTH"] = s.NoAuth
	m["SERVED_MODEL_NAME"] = s.ServedModelName
	m["REQUEST_PROCESSING_TIMEOUT_SECONDS"] = s.InferenceTimeout.Seconds()
	m["AUDIO_LANGUAGE"] = s.AudioLanguage
	m["AUDIO_TASK"] = s.AudioTask
	m["MAX_BATCH_DELAY_TIME_MS"] = s.MaxBatchDelay.Milliseconds()
	m["ENABLE_TELEMETRY"] = s.EnableTelemetry
	m["PROMETHEUS_ENDPOINT"] = s.PrometheusEndpoint
	m["SDXL_IMAGE_RESOLUTION"] = "(" + itoa(s.SDXLResolution) + ", " + itoa(s.SDXLResolution) + ")"
	c := s.Canary
	m["CANARY_ENABLED"] = c.Enabled
	m["CANARY_GATE_READINESS"] = c.GateReadiness
	m["CANARY_WAIT_SECONDS"] = c.Wait.Seconds()
	m["CANARY_PROBE_TIMEOUT_SECONDS"] = c.ProbeTimeout.Seconds()
	m["CANARY_TICK_SECONDS"] = c.Tick.Seconds()
	m["CANARY_DEAD_MISSES"] = c.DeadMisses
	m["CANARY_STARTUP_GRACE_SECONDS"] = c.StartupGrace.Seconds()
	m["CANARY_DEEP_PROBE_ENABLED"] = c.DeepProbeEnabled
	m["CANARY_DEEP_EVERY_N"] = c.DeepEveryN
	m["CANARY_DEEP_PROBE_TIMEOUT_SECONDS"] = c.DeepProbeTimeout.Seconds()
}
