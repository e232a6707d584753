package config

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// Defaults that depend on the mode, so they are not envconfig default tags.
const (
	defaultNewDeviceDelay = 30 * time.Second // NEW_DEVICE_DELAY_SECONDS on hardware
	mockNewDeviceDelay    = 0                // ... in mock-device mode
)

// WORKER_ISOLATION values.
const (
	// IsolationProcess runs each device group's runner in its own child process
	// ("tt-media-server device-worker"); the default on hardware.
	IsolationProcess = "process"
	// IsolationInProcess runs the runners as goroutines of the server process; the default
	// in mock-device mode.
	IsolationInProcess = "inprocess"
)

// isolation applies WORKER_ISOLATION's mode-dependent default: process on hardware, where a
// crash or hang inside TT-Metal must not take the server down, inprocess in mock-device mode,
// where the runners are pure Go unless a worker process opens the simulator.
func isolation(v string, mock bool) string {
	v = strings.ToLower(strings.TrimSpace(v))
	switch {
	case v != "":
		return v
	case mock:
		return IsolationInProcess
	}
	return IsolationProcess
}

// logLevels are LOG_LEVEL's accepted values (Python's logging names) in the order the error
// message lists them, each with the slog level it logs at (NOTSET: Python's root default, INFO).
var logLevels = []struct {
	name  string
	level slog.Level
}{
	{"DEBUG", slog.LevelDebug}, {"INFO", slog.LevelInfo}, {"WARNING", slog.LevelWarn}, {"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError}, {"CRITICAL", slog.LevelError}, {"FATAL", slog.LevelError}, {"NOTSET", slog.LevelInfo},
}

// SlogLevel is the slog level of LOG_LEVEL (INFO for a value Load would refuse): the one
// LOG_LEVEL parser, used by the server's and the device workers' loggers.
func (s *Settings) SlogLevel() slog.Level {
	name := strings.ToUpper(strings.TrimSpace(s.LogLevel))
	for _, l := range logLevels {
		if l.name == name {
			return l.level
		}
	}
	return slog.LevelInfo
}

var imageFormats = []string{"JPEG", "PNG"}

// Load reads the environment (and a .env file in dir, if present; real env vars win; unknown
// keys in .env are ignored, as the newer Python server does) and returns validated settings.
// As pydantic-settings does, a variable missing under its upper-case name is also looked up
// case-insensitively. mock reports whether the build is mock-device mode (true for every build
// without the ttnn tag); it changes two defaults: NEW_DEVICE_DELAY_SECONDS defaults to 0
// unless set, and when DEVICE_IDS is unset the groups are (0)…(MOCK_DEVICES_COUNT−1) (groups
// of rows*cols chips when the mesh is larger than 1x1). In mock mode an explicit DEVICE_IDS
// must only name chips < MOCK_DEVICES_COUNT.
func Load(dir string, mock bool) (*Settings, error) {
	return LoadFrom(osLookup(os.Environ()), filepath.Join(dir, ".env"), mock)
}

// osLookup looks a key up exactly, then case-insensitively, in environ (KEY=VALUE strings).
func osLookup(environ []string) func(string) (string, bool) {
	exact := make(map[string]string, len(environ))
	folded := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		exact[k] = v
		if _, dup := folded[strings.ToUpper(k)]; !dup {
			folded[strings.ToUpper(k)] = v
		}
	}
	return func(key string) (string, bool) {
		if v, ok := exact[key]; ok {
			return v, true
		}
		v, ok := folded[strings.ToUpper(key)]
		return v, ok
	}
}

// LoadFrom is Load with an explicit environment lookup (for tests): lookup(key) (value, ok).
// dotenvPath names the .env file ("" for none; a missing file is not an error).
//
// Order, as in the Python Settings.__init__:
//  1. variables from lookup, else from .env, else the defaults;
//  2. the MODEL x DEVICE preset, when both are set. Like Python, the preset overrides values
//     set explicitly in the environment (MODEL_RUNNER, DEVICE_IDS, DEVICE_MESH_SHAPE,
//     IS_GALAXY, MAX_BATCH_SIZE for the cells that set it, and MODEL_WEIGHTS_PATH when the
//     model has known weights). A cell's request timeout is the exception: an explicitly set
//     deadline wins over it (applyPresetTimeout). Unlike Python, a MODEL or DEVICE that has no
//     table cell is an error instead of silently applying nothing;
//  3. the mesh overrides: SD_3_5_FAST (4,8), else SD_3_5_BASE (2,4), else TP2 (2,1);
//  4. MODEL_SERVICE deduced from the runner when empty;
//  5. validation and the device groups.
func LoadFrom(lookup func(string) (string, bool), dotenvPath string, mock bool) (*Settings, error) {
	dot, err := readDotenv(dotenvPath)
	if err != nil {
		return nil, err
	}
	merged := func(key string) (string, bool) {
		if v, ok := lookup(key); ok {
			return v, true
		}
		v, ok := dot[strings.ToUpper(key)]
		return v, ok
	}
	var raw rawEnv
	if err := processVars(merged, &raw); err != nil {
		return nil, err
	}
	backend := strings.ToLower(strings.TrimSpace(raw.DeviceBackend))
	if backend == BackendPython {
		mock = false // Python runners drive whatever devices they open: nothing is simulated
	}
	s := fromRaw(&raw, mock)
	if err := loadHead(s, merged); err != nil {
		return nil, err
	}
	if err := loadVideo(s, merged); err != nil {
		return nil, err
	}
	_, s.TraceRegionSizeSet = merged("TRACE_REGION_SIZE")
	if v := strings.ToLower(strings.TrimSpace(raw.NativeCodecs)); v != "auto" && v != "off" {
		return nil, invalid("NATIVE_CODECS", raw.NativeCodecs, "accepted: auto, off")
	}
	s.DeviceBackend = backend
	if err := checkBackend(s); err != nil {
		return nil, err
	}
	if s.MockImage != "scene" && s.MockImage != "solid" {
		return nil, invalid("MOCK_IMAGE", raw.MockImage, "accepted: scene, solid")
	}

	idsSource := "DEVICE_IDS"
	meshSource := "DEVICE_MESH_SHAPE"
	if raw.Model != "" || raw.Device != "" {
		applied, err := applyPreset(s, &raw, merged)
		if err != nil {
			return nil, err
		}
		if applied {
			idsSource = "the MODEL=" + s.Model + " DEVICE=" + s.Device + " preset"
			meshSource = idsSource
		}
	}
	switch {
	case s.SD35Fast:
		s.DeviceMeshShape, meshSource = MeshShape{4, 8}, "SD_3_5_FAST=true"
	case s.SD35Base:
		s.DeviceMeshShape, meshSource = MeshShape{2, 4}, "SD_3_5_BASE=true"
	case s.TP2:
		s.DeviceMeshShape, meshSource = MeshShape{2, 1}, "TP2=true"
	}

	if err := checkModel(s); err != nil {
		return nil, err
	}
	if err := checkScalars(s); err != nil {
		return nil, err
	}
	if err := checkPprofAddr(s.PprofAddr); err != nil {
		return nil, err
	}
	weights, err := ParseClientWeights(raw.ClientWeights)
	if err != nil {
		return nil, err
	}
	s.ClientWeights = weights
	if err := loadAuth(s, raw.APIKeys); err != nil {
		return nil, err
	}
	if raw.NewDeviceDelaySeconds.set {
		s.NewDeviceDelay = time.Duration(raw.NewDeviceDelaySeconds.v)
	} else if mock {
		s.NewDeviceDelay = mockNewDeviceDelay
	} else {
		s.NewDeviceDelay = defaultNewDeviceDelay
	}
	if s.NewDeviceDelay < 0 {
		return nil, negative("NEW_DEVICE_DELAY_SECONDS", s.NewDeviceDelay)
	}
	if err := buildGroups(s, raw.DeviceIDs, idsSource, meshSource); err != nil {
		return nil, err
	}
	if strings.TrimSpace(raw.ModelPools) != "" {
		pools, err := parsePools(s, raw.ModelPools)
		if err != nil {
			return nil, err
		}
		// The first pool stands in for the single-model settings (logs, liveness).
		s.Pools, s.ModelRunner, s.ModelService = pools, pools[0].Runner, pools[0].Service
		s.DeviceGroups = nil
		for _, p := range pools {
			s.DeviceGroups = append(s.DeviceGroups, p.Groups...)
		}
		s.DeviceIDs = formatGroups(s.DeviceGroups)
	} else {
		s.Pools = []Pool{{Runner: s.ModelRunner, Service: s.Service(), Groups: s.DeviceGroups}}
	}
	return s, nil
}

func fromRaw(r *rawEnv, mock bool) *Settings {
	return &Settings{
		Mock:                          mock,
		ModelRunner:                   r.ModelRunner,
		ModelService:                  strings.ToLower(r.ModelService),
		Model:                         r.Model,
		Device:                        strings.ToLower(r.Device),
		ModelWeightsPath:              r.ModelWeightsPath,
		PreprocessingModelWeightsPath: r.PreprocessingModelWeightsPath,
		LoRARoot:                      r.LoRARoot,
		IsGalaxy:                      bool(r.IsGalaxy),
		DeviceMeshShape:               MeshShape(r.DeviceMeshShape),
		TraceRegionSize:               int(r.TraceRegionSize),
		ResetDeviceCommand:            r.ResetDeviceCommand,
		ResetDeviceSleep:              time.Duration(r.ResetDeviceSleepTime),
		MockDevicesCount:              int(r.MockDevicesCount),
		MaxWorkerRestarts:             int(r.MaxWorkerRestartCount),
		WorkerIsolation:               isolation(r.WorkerIsolation, mock),
		PythonExecutable:              strings.TrimSpace(r.PythonExecutable),
		PythonRunnerPath:              r.PythonRunnerPath,
		PythonRunnerClass:             strings.TrimSpace(r.PythonRunnerClass),
		WorkerCheckInterval:           time.Duration(r.WorkerCheckSleep),
		CanaryInterval:                time.Duration(r.CanaryInterval),
		AllowDeepReset:                bool(r.AllowDeepReset),
		DefaultThrottleLevel:          r.DefaultThrottleLevel,

		MaxQueueSize:      int(r.MaxQueueSize),
		MaxBatchSize:      int(r.MaxBatchSize),
		MaxBatchDelay:     time.Duration(r.MaxBatchDelayMS) * time.Millisecond,
		MaxQueuePerClient: int(r.MaxQueuePerClient),
		MaxConnections:    int(r.MaxConnections),
		ImageMemoryBudget: int64(r.ImageMemoryBudget),
		LoRAMaxFileBytes:  int64(r.LoRAMaxFileBytes),
		AudioMemoryBudget: int64(r.AudioMemoryBudget),
		InferenceTimeout:  time.Duration(r.InferenceTimeout),
		BodyStallTimeout:  time.Duration(r.BodyStallTimeout),

		NumInferenceSteps: int(r.NumInferenceSteps),
		ImageReturnFormat: strings.ToUpper(strings.TrimSpace(r.ImageReturnFormat)),
		ImageQuality:      int(r.ImageQuality),
		NativeCodecs:      !strings.EqualFold(strings.TrimSpace(r.NativeCodecs), "off"),
		CNNFastPreprocess: bool(r.CNNFastPreprocess),

		MaxAudioDuration:                  float64(r.MaxAudioDuration),
		MaxAudioDurationWithPreprocessing: float64(r.MaxAudioDurationPre),
		MaxAudioSizeBytes:                 int64(r.MaxAudioSizeBytes),
		DefaultSampleRate:                 int(r.DefaultSampleRate),
		AllowAudioPreprocessing:           bool(r.AllowAudioPreprocessing),
		AllowAudioFanout:                  bool(r.AllowAudioFanout),

		MockWarmup:       time.Duration(r.MockWarmup),
		MockStepLatency:  time.Duration(r.MockStepLatency),
		MockAudioLatency: time.Duration(r.MockAudioLatency),
		MockImageLatency: time.Duration(r.MockImageLatency),
		MockSpeechStep:   time.Duration(r.MockSpeechStep),
		MockImage:        strings.ToLower(strings.TrimSpace(r.MockImage)),

		LogLevel:    strings.ToUpper(strings.TrimSpace(r.LogLevel)),
		LogFile:     r.LogFile,
		PprofAddr:   strings.TrimSpace(r.PprofAddr),
		LogFormat:   strings.ToLower(strings.TrimSpace(r.LogFormat)),
		Environment: r.Environment,

		Host:             r.ServiceHost,
		Port:             int(r.ServicePort),
		APIKey:           r.APIKey,
		JWTSecret:        r.JWTSecret,
		JWTRequireExp:    bool(r.JWTRequireExp),
		HFToken:          r.HFToken,
		ShutdownGrace:    time.Duration(r.ShutdownGrace),
		MetricsAuth:      bool(r.MetricsAuth),
		APIKeysFile:      r.APIKeysFile,
		AdminAPIKey:      r.AdminAPIKey,
		JWTPublicKeyFile: r.JWTPublicKey,
		JWTIssuer:        r.JWTIssuer,
		JWTAudience:      r.JWTAudience,
		RateLimit:        float64(r.RateLimit),
		RateBurst:        int(r.RateBurst),

		TP2:      bool(r.TP2),
		SD35Base: bool(r.SD35Base),
		SD35Fast: bool(r.SD35Fast),
	}
}

// applyPreset validates MODEL and DEVICE and, when both are set, applies their ModelConfigs
// cell. As HEAD's Settings._set_config_overrides does ("env vars take precedence"), a cell's
// key that is set in the environment (lookup) keeps the environment's value: DEVICE_MESH_SHAPE,
// IS_GALAXY, DEVICE_IDS, MAX_BATCH_SIZE and the request timeout; MODEL_RUNNER and
// MODEL_WEIGHTS_PATH are the cell's model's, always (HEAD sets them outside the cell). It
// reports whether a cell was applied and marks DEVICE_IDS as set.
func applyPreset(s *Settings, raw *rawEnv, lookup func(string) (string, bool)) (bool, error) {
	var model catalogue.Model
	var name catalogue.ModelName
	if s.Model != "" {
		m, n, ok := catalogue.ModelByName(s.Model)
		if !ok {
			return false, invalid("MODEL", s.Model, "accepted: %s", modelNames())
		}
		model, name = m, n
	}
	if s.Device != "" && !contains(catalogue.Devices(), s.Device) {
		return false, invalid("DEVICE", raw.Device, "accepted: %s", strings.Join(catalogue.Devices(), ", "))
	}
	if s.Model == "" || s.Device == "" {
		return false, nil // Python applies a preset only when both are set
	}
	p, ok := model.Presets[s.Device]
	if !ok {
		return false, invalid("MODEL", s.Model, "has no preset for DEVICE=%s (presets: %s)", s.Device, strings.Join(devicesWithPreset(model), ", "))
	}
	s.ModelRunner = model.Name
	if name.Weights != "" {
		s.ModelWeightsPath = name.Weights
	}
	inEnv := func(key string) bool { _, ok := lookup(key); return ok }
	if !inEnv("DEVICE_MESH_SHAPE") {
		s.DeviceMeshShape = MeshShape{Rows: p.Mesh[0], Cols: p.Mesh[1]}
	}
	if !inEnv("IS_GALAXY") {
		s.IsGalaxy = p.IsGalaxy
	}
	if !inEnv("DEVICE_IDS") {
		raw.DeviceIDs = optString{v: envString(p.DeviceIDs), set: true}
	}
	if p.MaxBatchSize > 0 && !inEnv("MAX_BATCH_SIZE") {
		s.MaxBatchSize = p.MaxBatchSize
	}
	applyPresetTimeout(s, model.Service, p.RequestTimeout, lookup)
	return true, nil
}

// applyPresetTimeout makes a cell's request_processing_timeout_seconds the deadline of the
// model's jobs, as HEAD's Settings._set_config_overrides does unless the variable is in the
// environment: here, unless the deadline is set explicitly: REQUEST_PROCESSING_TIMEOUT_SECONDS
// or DEFAULT_INFERENCE_TIMEOUT_SECONDS for a request, VIDEO_JOB_TIMEOUT_SECONDS for a video
// job (which the request deadline does not bound). A cell without one (0) changes nothing.
func applyPresetTimeout(s *Settings, svc catalogue.Service, cell time.Duration, lookup func(string) (string, bool)) {
	if cell <= 0 {
		return
	}
	set := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := lookup(k); ok {
				return true
			}
		}
		return false
	}
	if svc == catalogue.ServiceVideo {
		if !set("VIDEO_JOB_TIMEOUT_SECONDS") {
			s.Video.JobTimeout = cell
		}
		return
	}
	if !set("REQUEST_PROCESSING_TIMEOUT_SECONDS", "DEFAULT_INFERENCE_TIMEOUT_SECONDS") {
		s.InferenceTimeout = cell
	}
}

// ParseClientWeights parses CLIENT_WEIGHTS: comma-separated client=weight pairs, where a
// client is "api_key" or "jwt:<sub or token_id>" and a weight an integer from 1 to 1000.
func ParseClientWeights(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.LastIndex(part, "=")
		if i <= 0 {
			return nil, invalid("CLIENT_WEIGHTS", v, "%q is not client=weight", part)
		}
		w, err := strconv.Atoi(strings.TrimSpace(part[i+1:]))
		if err != nil || w < 1 || w > 1000 {
			return nil, invalid("CLIENT_WEIGHTS", v, "weight of %q must be an integer from 1 to 1000", part[:i])
		}
		out[strings.TrimSpace(part[:i])] = w
	}
	return out, nil
}
