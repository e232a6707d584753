package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// rawEnv is the environment → value step. Its envconfig struct tags name each variable and its
// default; gatherVars reads them as envconfig does. Every non-string field type implements
// envconfig.Decoder, so envconfig.Process and our lookup-driven processVars (the environment
// merged with .env) convert values identically (a test checks that they agree).
//
// Variables without a default tag whose "was it set?" matters (DEVICE_IDS,
// NEW_DEVICE_DELAY_SECONDS) use opt* types and get their defaults in Load, because those
// defaults depend on the mode (mock or hardware).
type rawEnv struct {
	ModelRunner                   string `envconfig:"MODEL_RUNNER" default:"tt-sdxl-trace"`
	ModelService                  string `envconfig:"MODEL_SERVICE"`
	Model                         string `envconfig:"MODEL"`
	Device                        string `envconfig:"DEVICE"`
	ModelWeightsPath              string `envconfig:"MODEL_WEIGHTS_PATH"`
	PreprocessingModelWeightsPath string `envconfig:"PREPROCESSING_MODEL_WEIGHTS_PATH"`
	LoRARoot                      string `envconfig:"LORA_ROOT"`

	DeviceIDs             optString  `envconfig:"DEVICE_IDS"`
	IsGalaxy              envBool    `envconfig:"IS_GALAXY" default:"false"`
	DeviceMeshShape       meshEnv    `envconfig:"DEVICE_MESH_SHAPE" default:"(1,1)"`
	TraceRegionSize       envInt     `envconfig:"TRACE_REGION_SIZE" default:"34541598"`
	ResetDeviceCommand    string     `envconfig:"RESET_DEVICE_COMMAND" default:"tt-smi -r"`
	ResetDeviceSleepTime  envSeconds `envconfig:"RESET_DEVICE_SLEEP_TIME" default:"5.0"`
	MockDevicesCount      envInt     `envconfig:"MOCK_DEVICES_COUNT" default:"5"`
	NewDeviceDelaySeconds optSeconds `envconfig:"NEW_DEVICE_DELAY_SECONDS"`
	MaxWorkerRestartCount envInt     `envconfig:"MAX_WORKER_RESTART_COUNT" default:"5"`
	WorkerIsolation       string     `envconfig:"WORKER_ISOLATION"`
	DeviceBackend         string     `envconfig:"DEVICE_BACKEND"`
	PythonExecutable      string     `envconfig:"PYTHON_EXECUTABLE" default:"/usr/bin/python3"`
	PythonRunnerPath      string     `envconfig:"PYTHON_RUNNER_PATH"`
	PythonRunnerClass     string     `envconfig:"PYTHON_RUNNER_CLASS"`
	WorkerCheckSleep      envSeconds `envconfig:"WORKER_CHECK_SLEEP_TIMEOUT" default:"30.0"`
	AllowDeepReset        envBool    `envconfig:"ALLOW_DEEP_RESET" default:"false"`
	DefaultThrottleLevel  string     `envconfig:"DEFAULT_THROTTLE_LEVEL" default:"5"`

	MaxQueueSize      envInt     `envconfig:"MAX_QUEUE_SIZE" default:"64"`
	MaxBatchSize      envInt     `envconfig:"MAX_BATCH_SIZE" default:"1"`
	MaxBatchDelayMS   envInt     `envconfig:"MAX_BATCH_DELAY_MS" default:"0"`
	MaxQueuePerClient envInt     `envconfig:"MAX_QUEUE_PER_CLIENT" default:"0"`
	MaxConnections    envInt     `envconfig:"MAX_CONNECTIONS" default:"2048"`
	ImageMemoryBudget envInt     `envconfig:"IMAGE_MEMORY_BUDGET_BYTES" default:"536870912"`
	AudioMemoryBudget envInt     `envconfig:"AUDIO_MEMORY_BUDGET_BYTES" default:"536870912"`
	LoRAMaxFileBytes  envInt     `envconfig:"LORA_MAX_FILE_BYTES" default:"1073741824"`
	ClientWeights     string     `envconfig:"CLIENT_WEIGHTS"`
	ModelPools        string     `envconfig:"MODEL_POOLS"`
	CanaryInterval    envSeconds `envconfig:"CANARY_INTERVAL_SECONDS" default:"10"`
	InferenceTimeout  envSeconds `envconfig:"DEFAULT_INFERENCE_TIMEOUT_SECONDS" default:"90"`
	BodyStallTimeout  envSeconds `envconfig:"BODY_STALL_TIMEOUT_SECONDS" default:"15"`

	NumInferenceSteps envInt  `envconfig:"NUM_INFERENCE_STEPS" default:"20"`
	ImageReturnFormat string  `envconfig:"IMAGE_RETURN_FORMAT" default:"JPEG"`
	ImageQuality      envInt  `envconfig:"IMAGE_QUALITY" default:"85"`
	NativeCodecs      string  `envconfig:"NATIVE_CODECS" default:"auto"`
	CNNFastPreprocess envBool `envconfig:"CNN_FAST_PREPROCESS" default:"false"`

	AllowAudioPreprocessing envBool  `envconfig:"ALLOW_AUDIO_PREPROCESSING" default:"true"`
	AllowAudioFanout        envBool  `envconfig:"ALLOW_AUDIO_FANOUT" default:"true"`
	MaxAudioDuration        envFloat `envconfig:"MAX_AUDIO_DURATION_SECONDS" default:"60.0"`
	MaxAudioDurationPre     envFloat `envconfig:"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS" default:"300.0"`
	MaxAudioSizeBytes       envInt   `envconfig:"MAX_AUDIO_SIZE_BYTES" default:"52428800"`
	DefaultSampleRate       envInt   `envconfig:"DEFAULT_SAMPLE_RATE" default:"16000"`

	MockWarmup       envSeconds `envconfig:"MOCK_WARMUP_SECONDS" default:"1.0"`
	MockStepLatency  envSeconds `envconfig:"MOCK_STEP_SECONDS" default:"0.05"`
	MockAudioLatency envSeconds `envconfig:"MOCK_AUDIO_SECONDS_PER_SECOND" default:"0.02"`
	MockImageLatency envSeconds `envconfig:"MOCK_CNN_SECONDS" default:"0.005"`
	MockSpeechStep   envSeconds `envconfig:"MOCK_TTS_STEP_SECONDS" default:"0.0065"`
	MockImage        string     `envconfig:"MOCK_IMAGE" default:"scene"`

	LogLevel    string `envconfig:"LOG_LEVEL" default:"INFO"`
	LogFile     string `envconfig:"LOG_FILE"`
	LogFormat   string `envconfig:"LOG_FORMAT" default:"text"`
	PprofAddr   string `envconfig:"PPROF_ADDR"`
	Environment string `envconfig:"ENVIRONMENT" default:"development"`

	ServiceHost   string     `envconfig:"SERVICE_HOST" default:"0.0.0.0"`
	ServicePort   envInt     `envconfig:"SERVICE_PORT" default:"8000"`
	APIKey        string     `envconfig:"API_KEY" default:"your-secret-key"` // DefaultAPIKey
	JWTSecret     string     `envconfig:"JWT_SECRET"`
	JWTRequireExp envBool    `envconfig:"JWT_REQUIRE_EXP" default:"false"`
	HFToken       string     `envconfig:"HF_TOKEN"`
	ShutdownGrace envSeconds `envconfig:"SHUTDOWN_GRACE_SECONDS" default:"30"`
	MetricsAuth   envBool    `envconfig:"METRICS_REQUIRE_AUTH" default:"false"`
	APIKeys       string     `envconfig:"API_KEYS"`
	APIKeysFile   string     `envconfig:"API_KEYS_FILE"`
	AdminAPIKey   string     `envconfig:"ADMIN_API_KEY"`
	JWTPublicKey  string     `envconfig:"JWT_PUBLIC_KEY_FILE"`
	JWTIssuer     string     `envconfig:"JWT_ISSUER"`
	JWTAudience   string     `envconfig:"JWT_AUDIENCE"`
	RateLimit     envFloat   `envconfig:"RATE_LIMIT_PER_SECOND" default:"0"`
	RateBurst     envInt     `envconfig:"RATE_LIMIT_BURST" default:"0"`

	TP2      pyTrue `envconfig:"TP2"`
	SD35Base pyTrue `envconfig:"SD_3_5_BASE"`
	SD35Fast pyTrue `envconfig:"SD_3_5_FAST"`
}

// envVar is one variable as envconfig describes it.
type envVar struct {
	key, alt, def string
	field         reflect.Value // settable field of the spec
}

// gatherVars reads spec's variables (a pointer to a flat struct) from its struct tags, as
// envconfig does for an empty prefix: the key is the `envconfig` tag upper-cased (which is also
// envconfig's alternate key), the default the `default` tag. Every field names its variable.
func gatherVars(spec any) ([]envVar, error) {
	v := reflect.ValueOf(spec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("config: %T is not a pointer to a struct", spec)
	}
	v = v.Elem()
	vars := make([]envVar, 0, v.NumField())
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key := strings.ToUpper(f.Tag.Get("envconfig"))
		if key == "" || !f.IsExported() {
			return nil, fmt.Errorf("config: field %s of %T names no variable", f.Name, spec)
		}
		vars = append(vars, envVar{key: key, alt: key, def: f.Tag.Get("default"), field: v.Field(i)})
	}
	return vars, nil
}

// processVars is envconfig.Process with a lookup of our choosing: the key, then the
// alternate key, then the default tag; unset variables without a default are left alone.
func processVars(lookup func(string) (string, bool), spec any) error {
	vars, err := gatherVars(spec)
	if err != nil {
		return err
	}
	for _, v := range vars {
		value, ok := lookup(v.key)
		if !ok && v.alt != "" {
			value, ok = lookup(v.alt)
		}
		if !ok {
			if v.def == "" {
				continue
			}
			value = v.def
		}
		if err := decodeField(v.field, value); err != nil {
			var se *SettingError
			if errors.As(err, &se) {
				return err
			}
			return invalid(v.key, value, "%v", err)
		}
	}
	return nil
}

func decodeField(field reflect.Value, value string) error {
	if field.CanAddr() {
		if d, ok := field.Addr().Interface().(envconfig.Decoder); ok {
			return d.Decode(value)
		}
	}
	if field.Kind() == reflect.String {
		field.SetString(value)
		return nil
	}
	return fmt.Errorf("config: field of type %s has no decoder", field.Type())
}

// envInt is a decimal integer; surrounding spaces are ignored, as pydantic does.
type envInt int64

func (v *envInt) Decode(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	*v = envInt(n)
	return nil
}

// envFloat is a finite decimal number.
type envFloat float64

func (v *envFloat) Decode(s string) error {
	f, err := parseFinite(s)
	if err != nil {
		return err
	}
	*v = envFloat(f)
	return nil
}

func parseFinite(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("not a finite number")
	}
	return f, nil
}

// envSeconds is a duration written as float seconds ("5", "0.05").
type envSeconds time.Duration

func (v *envSeconds) Decode(s string) error {
	f, err := parseFinite(s)
	if err != nil {
		return errors.New("not a number of seconds")
	}
	ns := math.Round(f * float64(time.Second))
	if math.Abs(ns) >= math.MaxInt64 {
		return errors.New("number of seconds out of range")
	}
	*v = envSeconds(time.Duration(ns))
	return nil
}

// opt is a value decoded by its type T that remembers whether it was set (DEVICE_IDS="" and
// NEW_DEVICE_DELAY_SECONDS=0 are not the same as unset).
type opt[T any, PT interface {
	*T
	envconfig.Decoder
}] struct {
	v   T
	set bool
}

func (o *opt[T, PT]) Decode(s string) error {
	if err := PT(&o.v).Decode(s); err != nil {
		return err
	}
	o.set = true
	return nil
}

// The opt types of the settings.
type (
	optSeconds = opt[envSeconds, *envSeconds]
	optInt     = opt[envInt, *envInt]
	optString  = opt[envString, *envString]
)

// envString is a string as it is written.
type envString string

func (v *envString) Decode(s string) error {
	*v = envString(s)
	return nil
}

// envBool accepts what pydantic accepts, case-insensitively: true/false, 1/0, yes/no,
// on/off, t/f, y/n.
type envBool bool

func (v *envBool) Decode(s string) error {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "t", "yes", "y", "on":
		*v = true
	case "0", "false", "f", "no", "n", "off":
		*v = false
	default:
		return errors.New("not a boolean (accepted: true/false, 1/0, yes/no, on/off)")
	}
	return nil
}

// pyTrue is how the Python server reads TP2 and SD_3_5_*: on only when the value is "true",
// case-insensitively; any other value (including "1" or "yes") is off.
type pyTrue bool

func (v *pyTrue) Decode(s string) error {
	*v = pyTrue(strings.EqualFold(s, "true"))
	return nil
}

// meshEnv is DEVICE_MESH_SHAPE.
type meshEnv MeshShape

func (v *meshEnv) Decode(s string) error {
	m, err := parseMesh(s)
	if err != nil {
		return err
	}
	*v = meshEnv(m)
	return nil
}
