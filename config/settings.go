// Package config loads the server's settings from the environment and a .env file, with the
// same variable names, defaults and MODEL x DEVICE presets as the Python tt-media-server, and
// validates them so that a bad configuration fails at start-up with one clear line.
package config

import (
	"fmt"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// DefaultTraceRegionSize is TRACE_REGION_SIZE's default (the Python server's, SDXL's region);
// rawEnv's default tag spells the same number, which a test checks.
const DefaultTraceRegionSize = catalogue.DefaultTraceRegionSize

// DeviceGroup is one worker's devices, as parsed from DEVICE_IDS: "(0,1)" → ID "0,1",
// Devices [0 1]. An empty ID (DEVICE_IDS="") means "all visible devices".
type DeviceGroup struct {
	ID      string
	Devices []int
}

// MeshShape is rows x cols of a device mesh.
type MeshShape struct {
	Rows int
	Cols int
}

// Chips is the number of chips the mesh spans (rows*cols).
func (m MeshShape) Chips() int { return m.Rows * m.Cols }

// String formats the mesh as Python prints the tuple: "(2,4)".
func (m MeshShape) String() string { return fmt.Sprintf("(%d,%d)", m.Rows, m.Cols) }

// Settings is the process configuration. Field comments name the environment variable.
type Settings struct {
	// Mock is true in mock-device mode (every build without the ttnn tag). Not an env var.
	Mock bool

	// Model selection.
	ModelRunner                   string // MODEL_RUNNER, default SDXL (env.go's tag, catalogue.RunnerSDXL)
	ModelService                  string // MODEL_SERVICE: image|audio|cnn; deduced from the runner when empty
	Model                         string // MODEL (with DEVICE selects a preset)
	Device                        string // DEVICE: n150|n300|t3k|galaxy
	ModelWeightsPath              string // MODEL_WEIGHTS_PATH ("" = the runner's default)
	PreprocessingModelWeightsPath string // PREPROCESSING_MODEL_WEIGHTS_PATH ("" = pyannote/speaker-diarization-3.0)
	LoRARoot                      string // LORA_ROOT: directory of the LoRA .safetensors files lora_path names ("" = LoRA off)

	// Pools are the models this process serves: one per MODEL_POOLS entry, or the single
	// pool of MODEL_RUNNER on DeviceGroups.
	Pools []Pool

	// Devices.
	DeviceIDs       string        // DEVICE_IDS as used (the default or preset when not set explicitly)
	DeviceGroups    []DeviceGroup // parsed DEVICE_IDS: one worker per group
	IsGalaxy        bool          // IS_GALAXY, default false
	DeviceMeshShape MeshShape     // DEVICE_MESH_SHAPE, after TP2/SD_3_5_* overrides
	TraceRegionSize int           // TRACE_REGION_SIZE, default 34541598 (DefaultTraceRegionSize)
	// TraceRegionSizeSet says TRACE_REGION_SIZE was set (environment or .env): only then does
	// it replace a model's own trace region (runners' catalogue); unset, each model keeps its own.
	TraceRegionSizeSet   bool
	ResetDeviceCommand   string        // RESET_DEVICE_COMMAND, default "tt-smi -r"
	ResetDeviceSleep     time.Duration // RESET_DEVICE_SLEEP_TIME (seconds, float), default 5
	MockDevicesCount     int           // MOCK_DEVICES_COUNT, default 5: chips of the simulated machine
	NewDeviceDelay       time.Duration // NEW_DEVICE_DELAY_SECONDS, default 30 (0 in mock mode unless set)
	MaxWorkerRestarts    int           // MAX_WORKER_RESTART_COUNT, default 5
	WorkerIsolation      string        // WORKER_ISOLATION: "process" (one child process per group) or "inprocess"; default process on hardware, inprocess in mock mode
	WorkerCheckInterval  time.Duration // WORKER_CHECK_SLEEP_TIMEOUT (seconds, float), default 30
	CanaryInterval       time.Duration // CANARY_INTERVAL_SECONDS: idle probe period (0: off), default 10
	AllowDeepReset       bool          // ALLOW_DEEP_RESET, default false
	DefaultThrottleLevel string        // DEFAULT_THROTTLE_LEVEL, default "5" (TT_MM_THROTTLE_PERF; "" = unset)

	// Python workers (DEVICE_BACKEND=python or a MODEL_POOLS entry runner@python).
	// DeviceBackend is DEVICE_BACKEND: "sim" (the C simulator; every build without the ttnn tag),
	// "metal" (tt-mlir; ttnn builds) or "python" (every pool's runners are Tenstorrent's Python
	// model runners in workers/python processes; nothing is simulated). "" = the build's default.
	DeviceBackend string
	// PythonExecutable (PYTHON_EXECUTABLE, default /usr/bin/python3) runs the Python workers;
	// PythonRunnerPath (PYTHON_RUNNER_PATH, os.PathListSeparator-separated) goes in front of
	// their sys.path; PythonRunnerClass (PYTHON_RUNNER_CLASS, "module:Class") replaces the
	// MODEL_RUNNER → runner-class table. The worker reads the last two from its environment.
	PythonExecutable, PythonRunnerPath, PythonRunnerClass string

	// Queueing.
	MaxQueueSize      int           // MAX_QUEUE_SIZE, default 64
	MaxBatchSize      int           // MAX_BATCH_SIZE
	MaxBatchDelay     time.Duration // MAX_BATCH_DELAY_MS: wait at most this long to fill a batch (0: greedy)
	MaxQueuePerClient int           // MAX_QUEUE_PER_CLIENT: queued jobs per client (0: no cap)
	// MaxConnections is MAX_CONNECTIONS (2048; 0: no cap): open HTTP connections. At the cap
	// the longest-idle connection is closed for a new one; with none idle the new one gets 503.
	MaxConnections int
	// ImageMemoryBudget is IMAGE_MEMORY_BUDGET_BYTES (512 MiB): the memory that the decoded
	// pixels of all image uploads in flight may take (each measured from its header before
	// decoding: pixels x bytes per pixel). An image that alone needs more is refused 413;
	// others wait up to 10 s for room, then 429.
	ImageMemoryBudget int64
	// AudioMemoryBudget is AUDIO_MEMORY_BUDGET_BYTES (512 MiB): the memory that decoding the
	// audio uploads in flight may take (each estimated from its container's frame count before
	// its samples are decoded, then the samples it keeps until answered; a decode stops if its
	// reservation cannot grow). An upload that alone needs more is refused 413; others wait up
	// to 10 s for room, then 429.
	AudioMemoryBudget int64
	// LoRAMaxFileBytes is LORA_MAX_FILE_BYTES (1 GiB): the largest LoRA file read (413 above).
	LoRAMaxFileBytes int64
	ClientWeights    map[string]int // CLIENT_WEIGHTS "api_key=2,jwt:team=1": fair-share weights, default 1
	InferenceTimeout time.Duration  // DEFAULT_INFERENCE_TIMEOUT_SECONDS, default 90 (the code; README says 60)
	// BodyStallTimeout is BODY_STALL_TIMEOUT_SECONDS (15): a request body that makes no
	// progress (not one byte arrives) for this long is answered 408 and its connection closed,
	// so a stalled upload stops holding a connection (and a MAX_CONNECTIONS slot).
	BodyStallTimeout time.Duration

	// Image.
	NumInferenceSteps int    // NUM_INFERENCE_STEPS, default 20
	ImageReturnFormat string // IMAGE_RETURN_FORMAT: JPEG (default) or PNG, upper-cased
	ImageQuality      int    // IMAGE_QUALITY, default 85, 1..100
	// NativeCodecs is NATIVE_CODECS: auto (default) loads libjpeg-turbo and libwebp at run time
	// when present; off uses the pure-Go codecs (media/turbojpeg, media/webp).
	NativeCodecs bool
	// CNNFastPreprocess is CNN_FAST_PREPROCESS (false): decode JPEG uploads at the smallest DCT
	// scale whose shorter side is still ≥ 2×256 (Pillow's Image.draft), not exactly as
	// torchvision-on-PIL; docs/ARCHITECTURE.md gives the measured difference.
	CNNFastPreprocess bool

	// HEAD's settings (config/head.go): the Python server's after the seed.
	NoAuth             bool           // NO_AUTH: no credential is needed on the API routes
	ServedModelName    string         // SERVED_MODEL_NAME: the model id /v1/models lists first
	RequestTimeoutSet  bool           // REQUEST_PROCESSING_TIMEOUT_SECONDS was set (it then is InferenceTimeout)
	AudioLanguage      string         // AUDIO_LANGUAGE, default "English": the Python dialect's transcription language
	AudioTask          string         // AUDIO_TASK: transcribe (default) or translate; the legacy audio route's task and path
	SDXLResolution     int            // SDXL_IMAGE_RESOLUTION: 1024 (default) or 512, square
	Canary             CanarySettings // CANARY_*: the canary health monitor
	HeadNoEffect       []string       // HEAD settings that were set but mean nothing here (logged at start-up)
	EnableTelemetry    bool           // ENABLE_TELEMETRY, default true: false unmounts the metrics route
	PrometheusEndpoint string         // PROMETHEUS_ENDPOINT, default "/metrics": the metrics route's path

	// Video is the video service's job store, result files and encoder (config/video.go).
	Video VideoSettings

	// Audio.
	MaxAudioDuration                  float64 // MAX_AUDIO_DURATION_SECONDS (60)
	MaxAudioDurationWithPreprocessing float64 // MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS (300)
	MaxAudioSizeBytes                 int64   // MAX_AUDIO_SIZE_BYTES (52428800)
	DefaultSampleRate                 int     // DEFAULT_SAMPLE_RATE (16000)
	AllowAudioPreprocessing           bool    // ALLOW_AUDIO_PREPROCESSING (true)
	// AllowAudioFanout is ALLOW_AUDIO_FANOUT (true): a pre-processed transcription whose speech
	// spans more than one 30 s chunk is split into one job per chunk, spread over the workers
	// and merged in order (runners/whisper/fanout). false: one job per request, as Python.
	AllowAudioFanout bool

	// Mock device latency model (mock-device mode only).
	MockWarmup       time.Duration // MOCK_WARMUP_SECONDS, default 1.0
	MockStepLatency  time.Duration // MOCK_STEP_SECONDS: per denoising step, default 0.05
	MockAudioLatency time.Duration // MOCK_AUDIO_SECONDS_PER_SECOND: per second of audio, default 0.02
	MockImageLatency time.Duration // MOCK_CNN_SECONDS: per classified image, default 0.005
	// MockSpeechStep is MOCK_TTS_STEP_SECONDS: per SpeechT5 decoder step (two mel frames, 32 ms
	// of speech) with its postnet, default 0.0065.
	MockSpeechStep time.Duration
	// MockImage is MOCK_IMAGE: "scene" (default: a picture that depends on the request) or
	// "solid" (the Python mock runner's solid 1024² image, for like-for-like benchmarks).
	MockImage string

	// Logging.
	LogLevel string // LOG_LEVEL, default INFO; upper-cased, one of DEBUG INFO WARNING WARN ERROR CRITICAL FATAL NOTSET
	LogFile  string // LOG_FILE
	// PprofAddr (PPROF_ADDR) is the loopback host:port of net/http/pprof's listener; "" = off.
	PprofAddr   string
	LogFormat   string // LOG_FORMAT: text (default) or json ("" = console only)
	Environment string // ENVIRONMENT, default "development"

	// HTTP and auth.
	Host          string        // SERVICE_HOST, default 0.0.0.0
	Port          int           // SERVICE_PORT, default 8000 (0 = any free port)
	APIKey        string        // API_KEY, default "your-secret-key"
	JWTSecret     string        // JWT_SECRET: when set, HS256 bearer tokens signed with it are accepted
	JWTRequireExp bool          // JWT_REQUIRE_EXP: reject tokens without exp, default false
	HFToken       string        // HF_TOKEN (accepted for compatibility; never logged)
	ShutdownGrace time.Duration // SHUTDOWN_GRACE_SECONDS, default 30
	MetricsAuth   bool          // METRICS_REQUIRE_AUTH: /metrics needs the API key too (default false)
	// APIKeys maps client names to API keys: "api_key" → API_KEY, plus API_KEYS ("name=key,...")
	// and API_KEYS_FILE (one "name=key" per line). Names appear in logs, metrics and fair share.
	APIKeys          map[string]string
	APIKeysFile      string  // API_KEYS_FILE
	AdminAPIKey      string  // ADMIN_API_KEY: when set, the only key the maintenance routes accept
	JWTPublicKeyFile string  // JWT_PUBLIC_KEY_FILE: PEM RSA or EC P-256 public key (RS256 / ES256 tokens)
	JWTPublicKey     any     // the parsed key (*rsa.PublicKey or *ecdsa.PublicKey)
	JWTIssuer        string  // JWT_ISSUER: required iss, when set
	JWTAudience      string  // JWT_AUDIENCE: required aud, when set
	RateLimit        float64 // RATE_LIMIT_PER_SECOND per client (0: off)
	RateBurst        int     // RATE_LIMIT_BURST (0: max(1, ceil(rate)))

	// Raw mesh overrides as read (for liveness/diagnostics): "true", case-insensitively.
	TP2, SD35Base, SD35Fast bool
}

// DefaultAPIKey is API_KEY's default, the Python server's: anyone who has read its README
// knows it, so a server listening beyond loopback with it warns at start-up.
const DefaultAPIKey = "your-secret-key"

// Service is the API family this process mounts: "image", "audio" or "cnn". Load always fills
// ModelService; for a hand-built Settings it falls back to the runner's service ("" if unknown).
func (s *Settings) Service() string {
	if s.ModelService != "" {
		return s.ModelService
	}
	svc, err := ServiceForRunner(s.ModelRunner)
	if err != nil {
		return ""
	}
	return svc
}

// redactedMark replaces a secret that is set.
const redactedMark = "***"

func redact(secret string) string {
	if secret == "" {
		return ""
	}
	return redactedMark
}

// Redacted returns every setting keyed by its environment variable name, for a start-up log
// line. API_KEY, JWT_SECRET and HF_TOKEN read "***" when set ("" when not). Durations are float
// seconds; DEVICE_MESH_SHAPE is "(rows,cols)"; DEVICE_GROUPS (derived) lists the worker ids.
func (s *Settings) Redacted() map[string]any {
	groups := make([]string, len(s.DeviceGroups))
	for i, g := range s.DeviceGroups {
		groups[i] = g.ID
	}
	m := map[string]any{
		"MOCK_MODE":                         s.Mock,
		"MODEL_RUNNER":                      s.ModelRunner,
		"MODEL_SERVICE":                     s.Service(),
		"MODEL":                             s.Model,
		"DEVICE":                            s.Device,
		"MODEL_WEIGHTS_PATH":                s.ModelWeightsPath,
		"PREPROCESSING_MODEL_WEIGHTS_PATH":  s.PreprocessingModelWeightsPath,
		"LORA_ROOT":                         s.LoRARoot,
		"DEVICE_IDS":                        s.DeviceIDs,
		"DEVICE_GROUPS":                     groups,
		"IS_GALAXY":                         s.IsGalaxy,
		"DEVICE_MESH_SHAPE":                 s.DeviceMeshShape.String(),
		"TRACE_REGION_SIZE":                 s.TraceRegionSize,
		"RESET_DEVICE_COMMAND":              s.ResetDeviceCommand,
		"RESET_DEVICE_SLEEP_TIME":           s.ResetDeviceSleep.Seconds(),
		"MOCK_DEVICES_COUNT":                s.MockDevicesCount,
		"NEW_DEVICE_DELAY_SECONDS":          s.NewDeviceDelay.Seconds(),
		"MAX_WORKER_RESTART_COUNT":          s.MaxWorkerRestarts,
		"WORKER_ISOLATION":                  s.WorkerIsolation,
		"DEVICE_BACKEND":                    s.DeviceBackend,
		"PYTHON_EXECUTABLE":                 s.PythonExecutable,
		"PYTHON_RUNNER_PATH":                s.PythonRunnerPath,
		"PYTHON_RUNNER_CLASS":               s.PythonRunnerClass,
		"WORKER_CHECK_SLEEP_TIMEOUT":        s.WorkerCheckInterval.Seconds(),
		"CANARY_INTERVAL_SECONDS":           s.CanaryInterval.Seconds(),
		"ALLOW_DEEP_RESET":                  s.AllowDeepReset,
		"DEFAULT_THROTTLE_LEVEL":            s.DefaultThrottleLevel,
		"MAX_QUEUE_SIZE":                    s.MaxQueueSize,
		"MAX_BATCH_SIZE":                    s.MaxBatchSize,
		"LOG_FORMAT":                        s.LogFormat,
		"MODEL_POOLS":                       formatPools(s.Pools),
		"METRICS_REQUIRE_AUTH":              s.MetricsAuth,
		"API_KEYS":                          redactKeys(s.APIKeys),
		"API_KEYS_FILE":                     s.APIKeysFile,
		"ADMIN_API_KEY":                     redact(s.AdminAPIKey),
		"JWT_PUBLIC_KEY_FILE":               s.JWTPublicKeyFile,
		"JWT_ISSUER":                        s.JWTIssuer,
		"JWT_AUDIENCE":                      s.JWTAudience,
		"RATE_LIMIT_PER_SECOND":             s.RateLimit,
		"RATE_LIMIT_BURST":                  s.RateBurst,
		"MAX_BATCH_DELAY_MS":                s.MaxBatchDelay.Milliseconds(),
		"MAX_QUEUE_PER_CLIENT":              s.MaxQueuePerClient,
		"MAX_CONNECTIONS":                   s.MaxConnections,
		"IMAGE_MEMORY_BUDGET_BYTES":         s.ImageMemoryBudget,
		"LORA_MAX_FILE_BYTES":               s.LoRAMaxFileBytes,
		"AUDIO_MEMORY_BUDGET_BYTES":         s.AudioMemoryBudget,
		"CLIENT_WEIGHTS":                    s.ClientWeights,
		"DEFAULT_INFERENCE_TIMEOUT_SECONDS": s.InferenceTimeout.Seconds(),
		"BODY_STALL_TIMEOUT_SECONDS":        s.BodyStallTimeout.Seconds(),
		"NUM_INFERENCE_STEPS":               s.NumInferenceSteps,
		"IMAGE_RETURN_FORMAT":               s.ImageReturnFormat,
		"IMAGE_QUALITY":                     s.ImageQuality,
		"NATIVE_CODECS":                     map[bool]string{true: "auto", false: "off"}[s.NativeCodecs],
		"CNN_FAST_PREPROCESS":               s.CNNFastPreprocess,
		"MAX_AUDIO_DURATION_SECONDS":        s.MaxAudioDuration,
		"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS": s.MaxAudioDurationWithPreprocessing,
		"MAX_AUDIO_SIZE_BYTES":                          s.MaxAudioSizeBytes,
		"DEFAULT_SAMPLE_RATE":                           s.DefaultSampleRate,
		"ALLOW_AUDIO_PREPROCESSING":                     s.AllowAudioPreprocessing,
		"ALLOW_AUDIO_FANOUT":                            s.AllowAudioFanout,
		"MOCK_WARMUP_SECONDS":                           s.MockWarmup.Seconds(),
		"MOCK_STEP_SECONDS":                             s.MockStepLatency.Seconds(),
		"MOCK_AUDIO_SECONDS_PER_SECOND":                 s.MockAudioLatency.Seconds(),
		"MOCK_CNN_SECONDS":                              s.MockImageLatency.Seconds(),
		"MOCK_TTS_STEP_SECONDS":                         s.MockSpeechStep.Seconds(),
		"MOCK_IMAGE":                                    s.MockImage,
		"LOG_LEVEL":                                     s.LogLevel,
		"LOG_FILE":                                      s.LogFile,
		"PPROF_ADDR":                                    s.PprofAddr,
		"ENVIRONMENT":                                   s.Environment,
		"SERVICE_HOST":                                  s.Host,
		"SERVICE_PORT":                                  s.Port,
		"API_KEY":                                       redact(s.APIKey),
		"JWT_SECRET":                                    redact(s.JWTSecret),
		"JWT_REQUIRE_EXP":                               s.JWTRequireExp,
		"HF_TOKEN":                                      redact(s.HFToken),
		"SHUTDOWN_GRACE_SECONDS":                        s.ShutdownGrace.Seconds(),
		"TP2":                                           s.TP2,
		"SD_3_5_BASE":                                   s.SD35Base,
		"SD_3_5_FAST":                                   s.SD35Fast,
	}
	s.headRedacted(m)
	s.videoRedacted(m)
	return m
}
