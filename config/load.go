package config

import (
	"log/slog"
	"net"
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
//     model has known weights). Unlike Python, a MODEL or DEVICE that has no table cell is an
//     error instead of silently applying nothing;
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
		applied, err := applyPreset(s, &raw)
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
		s.NewDeviceDelay = raw.NewDeviceDelaySeconds.d
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
// cell (overriding explicit values, as Python does). It reports whether a cell was applied and
// marks DEVICE_IDS as set by it.
func applyPreset(s *Settings, raw *rawEnv) (bool, error) {
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
	s.DeviceMeshShape = MeshShape{Rows: p.Mesh[0], Cols: p.Mesh[1]}
	s.IsGalaxy = p.IsGalaxy
	raw.DeviceIDs = optString{s: p.DeviceIDs, set: true}
	if p.MaxBatchSize > 0 {
		s.MaxBatchSize = p.MaxBatchSize
	}
	return true, nil
}

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

// chipsPerID is how many chips one DEVICE_IDS entry stands for on hardware, where an entry is a
// PCIe device: an n300 card (alone or four in a T3K) carries two chips. 0 means unknown (DEVICE
// unset), and the mesh-versus-group check is skipped.
func chipsPerID(device string) int {
	switch device {
	case catalogue.DeviceN150, catalogue.DeviceGalaxy:
		return 1
	case catalogue.DeviceN300, catalogue.DeviceT3K:
		return 2
	}
	return 0
}

// buildGroups parses DEVICE_IDS (or derives the default) and checks the groups against the
// mesh and, in mock mode, against MOCK_DEVICES_COUNT.
func buildGroups(s *Settings, ids optString, idsSource, meshSource string) error {
	mesh := s.DeviceMeshShape
	if s.Mock && !ids.set {
		groups, err := mockGroups(s.MockDevicesCount, mesh)
		if err != nil {
			return err
		}
		s.DeviceGroups, s.DeviceIDs = groups, formatGroups(groups)
		return nil
	}
	raw := deviceIDs32
	if ids.set {
		raw = ids.s
	}
	groups, err := ParseDeviceIDs(raw)
	if err != nil {
		return err
	}
	s.DeviceGroups, s.DeviceIDs = groups, raw
	where := ""
	if idsSource != "DEVICE_IDS" {
		where = " (set by " + idsSource + ")"
	}
	perID := 1
	if !s.Mock {
		perID = chipsPerID(s.Device)
	}
	for _, g := range groups {
		if s.Mock {
			for _, d := range g.Devices {
				if d >= s.MockDevicesCount {
					return invalid("DEVICE_IDS", raw, "chip %d does not exist%s: mock mode simulates MOCK_DEVICES_COUNT=%d chips (0..%d)",
						d, where, s.MockDevicesCount, s.MockDevicesCount-1)
				}
			}
		}
		chips := len(g.Devices) * perID
		if len(g.Devices) == 0 { // "" = all devices
			if !s.Mock {
				continue
			}
			chips = s.MockDevicesCount
		}
		if perID == 0 || mesh.Chips() <= chips {
			continue
		}
		group := "(" + g.ID + ")"
		if g.ID == "" {
			group = `"" (all MOCK_DEVICES_COUNT chips)`
		}
		return invalid("DEVICE_MESH_SHAPE", mesh.String(),
			"the mesh (from %s) needs %d chips but DEVICE_IDS group %s%s has %d; give each group rows*cols chips",
			meshSource, mesh.Chips(), group, where, chips)
	}
	return nil
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
