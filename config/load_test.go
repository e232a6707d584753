package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/require"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// env is a fake environment for LoadFrom.
type env map[string]string

func (e env) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

func load(t *testing.T, e env, mock bool) *Settings {
	t.Helper()
	s, err := LoadFrom(e.lookup, "", mock)
	require.NoError(t, err)
	return s
}

func loadErr(t *testing.T, e env, mock bool) error {
	t.Helper()
	s, err := LoadFrom(e.lookup, "", mock)
	require.Error(t, err, "settings: %+v", s)
	require.Nil(t, s)
	return err
}

func groupIDs(gs []DeviceGroup) []string {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}

func TestDefaults(t *testing.T) {
	for _, mock := range []bool{false, true} {
		s := load(t, env{}, mock)
		require.Equal(t, mock, s.Mock)
		require.Equal(t, "tt-sdxl-trace", s.ModelRunner)
		require.Equal(t, "image", s.ModelService)
		require.Equal(t, "image", s.Service())
		require.Equal(t, "", s.Model)
		require.Equal(t, "", s.Device)
		require.Equal(t, "", s.ModelWeightsPath)
		require.Equal(t, "", s.PreprocessingModelWeightsPath)
		require.False(t, s.IsGalaxy)
		require.Equal(t, MeshShape{1, 1}, s.DeviceMeshShape)
		require.Equal(t, 34541598, s.TraceRegionSize)
		require.Equal(t, DefaultTraceRegionSize, s.TraceRegionSize)
		require.False(t, s.TraceRegionSizeSet, "each model keeps its own trace region")
		require.Equal(t, "tt-smi -r", s.ResetDeviceCommand)
		require.Equal(t, 5*time.Second, s.ResetDeviceSleep)
		require.Equal(t, 5, s.MockDevicesCount)
		require.Equal(t, 5, s.MaxWorkerRestarts)
		require.Equal(t, 30*time.Second, s.WorkerCheckInterval)
		require.False(t, s.AllowDeepReset)
		require.Equal(t, "5", s.DefaultThrottleLevel)
		require.Equal(t, 64, s.MaxQueueSize)
		require.Equal(t, 1, s.MaxBatchSize)
		require.Equal(t, 90*time.Second, s.InferenceTimeout)
		require.Equal(t, 20, s.NumInferenceSteps)
		require.Equal(t, "JPEG", s.ImageReturnFormat)
		require.Equal(t, 85, s.ImageQuality)
		require.Equal(t, 60.0, s.MaxAudioDuration)
		require.Equal(t, 300.0, s.MaxAudioDurationWithPreprocessing)
		require.Equal(t, int64(52428800), s.MaxAudioSizeBytes)
		require.Equal(t, 16000, s.DefaultSampleRate)
		require.True(t, s.AllowAudioPreprocessing)
		require.True(t, s.AllowAudioFanout)
		require.Equal(t, time.Second, s.MockWarmup)
		require.Equal(t, 50*time.Millisecond, s.MockStepLatency)
		require.Equal(t, 20*time.Millisecond, s.MockAudioLatency)
		require.Equal(t, 5*time.Millisecond, s.MockImageLatency)
		require.Equal(t, "INFO", s.LogLevel)
		require.Equal(t, "", s.LogFile)
		require.Equal(t, "development", s.Environment)
		require.Equal(t, "0.0.0.0", s.Host)
		require.Equal(t, 8000, s.Port)
		require.Equal(t, "your-secret-key", s.APIKey)
		require.Equal(t, "", s.JWTSecret)
		require.False(t, s.JWTRequireExp)
		require.Equal(t, "", s.HFToken)
		require.Equal(t, 30*time.Second, s.ShutdownGrace)
		require.False(t, s.TP2 || s.SD35Base || s.SD35Fast)
		if mock {
			require.Equal(t, time.Duration(0), s.NewDeviceDelay)
			require.Equal(t, "(0),(1),(2),(3),(4)", s.DeviceIDs)
			require.Equal(t, []string{"0", "1", "2", "3", "4"}, groupIDs(s.DeviceGroups))
		} else {
			require.Equal(t, 30*time.Second, s.NewDeviceDelay)
			require.Len(t, s.DeviceGroups, 32)
			require.Equal(t, "31", s.DeviceGroups[31].ID)
			require.Equal(t, []int{31}, s.DeviceGroups[31].Devices)
			require.True(t, strings.HasPrefix(s.DeviceIDs, "(0),(1),(2),"))
			require.True(t, strings.HasSuffix(s.DeviceIDs, ",(30),(31)"))
		}
	}
}

// TestParsing sets one variable at a time and checks the field it lands in.
func TestParsing(t *testing.T) {
	tests := []struct {
		key, value string
		get        func(*Settings) any
		want       any
	}{
		{"MODEL_RUNNER", "tt-whisper", func(s *Settings) any { return s.ModelRunner }, "tt-whisper"},
		{"MODEL_SERVICE", "image", func(s *Settings) any { return s.ModelService }, "image"},
		{"MODEL_SERVICE", "IMAGE", func(s *Settings) any { return s.ModelService }, "image"},
		{"MODEL", "vovnet", func(s *Settings) any { return s.Model }, "vovnet"},
		{"DEVICE", "galaxy", func(s *Settings) any { return s.Device }, "galaxy"},
		{"DEVICE", "N300", func(s *Settings) any { return s.Device }, "n300"},
		{"MODEL_WEIGHTS_PATH", "/w/sdxl", func(s *Settings) any { return s.ModelWeightsPath }, "/w/sdxl"},
		{"PREPROCESSING_MODEL_WEIGHTS_PATH", "p/d", func(s *Settings) any { return s.PreprocessingModelWeightsPath }, "p/d"},
		{"DEVICE_IDS", "(0,1),(2,3)", func(s *Settings) any { return groupIDs(s.DeviceGroups) }, []string{"0,1", "2,3"}},
		{"DEVICE_IDS", "(0,1),(2,3)", func(s *Settings) any { return s.DeviceIDs }, "(0,1),(2,3)"},
		{"IS_GALAXY", "True", func(s *Settings) any { return s.IsGalaxy }, true},
		{"DEVICE_MESH_SHAPE", "[1,2]", func(s *Settings) any { return s.DeviceMeshShape }, MeshShape{1, 2}},
		{"DEVICE_MESH_SHAPE", "1x1", func(s *Settings) any { return s.DeviceMeshShape }, MeshShape{1, 1}},
		{"TRACE_REGION_SIZE", " 1000 ", func(s *Settings) any { return s.TraceRegionSize }, 1000},
		{"TRACE_REGION_SIZE", "34541598", func(s *Settings) any { return s.TraceRegionSizeSet }, true},
		{"PPROF_ADDR", "127.0.0.1:6061", func(s *Settings) any { return s.PprofAddr }, "127.0.0.1:6061"},
		{"PPROF_ADDR", "[::1]:0", func(s *Settings) any { return s.PprofAddr }, "[::1]:0"},
		{"RESET_DEVICE_COMMAND", "echo reset", func(s *Settings) any { return s.ResetDeviceCommand }, "echo reset"},
		{"RESET_DEVICE_COMMAND", "", func(s *Settings) any { return s.ResetDeviceCommand }, ""},
		{"RESET_DEVICE_SLEEP_TIME", "0.25", func(s *Settings) any { return s.ResetDeviceSleep }, 250 * time.Millisecond},
		{"MOCK_DEVICES_COUNT", "8", func(s *Settings) any { return s.MockDevicesCount }, 8},
		{"NEW_DEVICE_DELAY_SECONDS", "2", func(s *Settings) any { return s.NewDeviceDelay }, 2 * time.Second},
		{"NEW_DEVICE_DELAY_SECONDS", "0", func(s *Settings) any { return s.NewDeviceDelay }, time.Duration(0)},
		{"MAX_WORKER_RESTART_COUNT", "0", func(s *Settings) any { return s.MaxWorkerRestarts }, 0},
		{"WORKER_CHECK_SLEEP_TIMEOUT", "1.5", func(s *Settings) any { return s.WorkerCheckInterval }, 1500 * time.Millisecond},
		{"ALLOW_DEEP_RESET", "yes", func(s *Settings) any { return s.AllowDeepReset }, true},
		{"DEFAULT_THROTTLE_LEVEL", "", func(s *Settings) any { return s.DefaultThrottleLevel }, ""},
		{"MAX_QUEUE_SIZE", "128", func(s *Settings) any { return s.MaxQueueSize }, 128},
		{"MAX_BATCH_SIZE", "4", func(s *Settings) any { return s.MaxBatchSize }, 4},
		{"DEFAULT_INFERENCE_TIMEOUT_SECONDS", "300", func(s *Settings) any { return s.InferenceTimeout }, 300 * time.Second},
		{"NUM_INFERENCE_STEPS", "30", func(s *Settings) any { return s.NumInferenceSteps }, 30},
		{"IMAGE_RETURN_FORMAT", "png", func(s *Settings) any { return s.ImageReturnFormat }, "PNG"},
		{"IMAGE_QUALITY", "100", func(s *Settings) any { return s.ImageQuality }, 100},
		{"IMAGE_QUALITY", "1", func(s *Settings) any { return s.ImageQuality }, 1},
		{"NATIVE_CODECS", "off", func(s *Settings) any { return s.NativeCodecs }, false},
		{"NATIVE_CODECS", "auto", func(s *Settings) any { return s.NativeCodecs }, true},
		{"CNN_FAST_PREPROCESS", "true", func(s *Settings) any { return s.CNNFastPreprocess }, true},
		{"MOCK_IMAGE", "Solid", func(s *Settings) any { return s.MockImage }, "solid"},
		{"MAX_AUDIO_DURATION_SECONDS", "30.5", func(s *Settings) any { return s.MaxAudioDuration }, 30.5},
		{"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS", "600", func(s *Settings) any { return s.MaxAudioDurationWithPreprocessing }, 600.0},
		{"MAX_AUDIO_SIZE_BYTES", "1024", func(s *Settings) any { return s.MaxAudioSizeBytes }, int64(1024)},
		{"DEFAULT_SAMPLE_RATE", "8000", func(s *Settings) any { return s.DefaultSampleRate }, 8000},
		{"ALLOW_AUDIO_PREPROCESSING", "off", func(s *Settings) any { return s.AllowAudioPreprocessing }, false},
		{"ALLOW_AUDIO_FANOUT", "false", func(s *Settings) any { return s.AllowAudioFanout }, false},
		{"MOCK_WARMUP_SECONDS", "0", func(s *Settings) any { return s.MockWarmup }, time.Duration(0)},
		{"MOCK_STEP_SECONDS", "0.001", func(s *Settings) any { return s.MockStepLatency }, time.Millisecond},
		{"MOCK_AUDIO_SECONDS_PER_SECOND", "0.1", func(s *Settings) any { return s.MockAudioLatency }, 100 * time.Millisecond},
		{"MOCK_CNN_SECONDS", "2", func(s *Settings) any { return s.MockImageLatency }, 2 * time.Second},
		{"LOG_LEVEL", "debug", func(s *Settings) any { return s.LogLevel }, "DEBUG"},
		{"LOG_LEVEL", "WARNING", func(s *Settings) any { return s.LogLevel }, "WARNING"},
		{"LOG_FILE", "/var/log/tt.log", func(s *Settings) any { return s.LogFile }, "/var/log/tt.log"},
		{"ENVIRONMENT", "production", func(s *Settings) any { return s.Environment }, "production"},
		{"SERVICE_HOST", "127.0.0.1", func(s *Settings) any { return s.Host }, "127.0.0.1"},
		{"SERVICE_PORT", "0", func(s *Settings) any { return s.Port }, 0},
		{"SERVICE_PORT", "65535", func(s *Settings) any { return s.Port }, 65535},
		{"API_KEY", "k", func(s *Settings) any { return s.APIKey }, "k"},
		{"JWT_SECRET", "my-secret-string", func(s *Settings) any { return s.JWTSecret }, "my-secret-string"},
		{"JWT_REQUIRE_EXP", "1", func(s *Settings) any { return s.JWTRequireExp }, true},
		{"HF_TOKEN", "hf_x", func(s *Settings) any { return s.HFToken }, "hf_x"},
		{"SHUTDOWN_GRACE_SECONDS", "0", func(s *Settings) any { return s.ShutdownGrace }, time.Duration(0)},
		{"TP2", "false", func(s *Settings) any { return s.TP2 }, false},
		{"SD_3_5_BASE", "1", func(s *Settings) any { return s.SD35Base }, false}, // Python: only "true"
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			s := load(t, env{tt.key: tt.value}, false)
			require.Equal(t, tt.want, tt.get(s))
		})
	}
}

func TestBooleans(t *testing.T) {
	for _, v := range []string{"true", "TRUE", "True", "1", "yes", "YES", "on", "On", "t", "y", " true "} {
		require.True(t, load(t, env{"IS_GALAXY": v}, false).IsGalaxy, v)
	}
	for _, v := range []string{"false", "FALSE", "0", "no", "No", "off", "OFF", "f", "n"} {
		require.False(t, load(t, env{"ALLOW_AUDIO_PREPROCESSING": v}, false).AllowAudioPreprocessing, v)
	}
	err := loadErr(t, env{"JWT_REQUIRE_EXP": "maybe"}, false)
	require.EqualError(t, err, `invalid setting JWT_REQUIRE_EXP="maybe": not a boolean (accepted: true/false, 1/0, yes/no, on/off)`)
}

func TestNewDeviceDelayMockMode(t *testing.T) {
	require.Equal(t, time.Duration(0), load(t, env{}, true).NewDeviceDelay)
	require.Equal(t, 30*time.Second, load(t, env{}, false).NewDeviceDelay)
	require.Equal(t, 3*time.Second, load(t, env{"NEW_DEVICE_DELAY_SECONDS": "3"}, true).NewDeviceDelay)
	require.Equal(t, time.Duration(0), load(t, env{"NEW_DEVICE_DELAY_SECONDS": "0"}, false).NewDeviceDelay)
}

func TestMeshOverrides(t *testing.T) {
	tests := []struct {
		env  env
		want MeshShape
	}{
		{env{"TP2": "true"}, MeshShape{2, 1}},
		{env{"TP2": "TRUE", "SD_3_5_BASE": "true"}, MeshShape{2, 4}},
		{env{"SD_3_5_BASE": "True", "SD_3_5_FAST": "tRuE"}, MeshShape{4, 8}},
		{env{"TP2": "true", "SD_3_5_BASE": "false", "SD_3_5_FAST": "yes"}, MeshShape{2, 1}},
		{env{"TP2": "true", "DEVICE_MESH_SHAPE": "(1,1)"}, MeshShape{2, 1}},
		{env{"DEVICE_MESH_SHAPE": "2x4"}, MeshShape{2, 4}},
	}
	for _, tt := range tests {
		tt.env["DEVICE_IDS"] = "" // one all-devices group: no chip-count check on hardware
		s := load(t, tt.env, false)
		require.Equal(t, tt.want, s.DeviceMeshShape, "%v", tt.env)
	}
	// The raw flags are kept for diagnostics.
	s := load(t, env{"TP2": "TRUE", "SD_3_5_BASE": "true", "DEVICE_IDS": ""}, false)
	require.True(t, s.TP2)
	require.True(t, s.SD35Base)
	require.False(t, s.SD35Fast)
}

func TestPresets(t *testing.T) {
	ids32Group := "(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31)"
	ids32 := "(0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12),(13),(14),(15),(16),(17),(18),(19),(20),(21),(22),(23),(24),(25),(26),(27),(28),(29),(30),(31)"
	tests := []struct {
		model, device string
		runner        string
		weights       string
		mesh          MeshShape
		galaxy        bool
		ids           string
		batch         int // 0: the cell leaves MAX_BATCH_SIZE alone
	}{
		{"stable-diffusion-xl-base-1.0", "n150", "tt-sdxl-trace", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{1, 1}, false, "(0)", 1},
		{"stable-diffusion-xl-base-1.0", "n300", "tt-sdxl-trace", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{2, 1}, false, "(0)", 1},
		{"stable-diffusion-xl-base-1.0", "t3k", "tt-sdxl-trace", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{2, 1}, false, "(0),(1),(2),(3)", 1},
		{"stable-diffusion-xl-base-1.0", "galaxy", "tt-sdxl-trace", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{1, 1}, true, ids32, 1},
		{"stable-diffusion-3.5-large", "t3k", "tt-sd3.5", "stabilityai/stable-diffusion-3.5-large", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"stable-diffusion-3.5-large", "galaxy", "tt-sd3.5", "stabilityai/stable-diffusion-3.5-large", MeshShape{4, 8}, false, ids32Group, 1},
		{"distil-whisper/distil-large-v3", "n150", "tt-whisper", "distil-whisper/distil-large-v3", MeshShape{1, 1}, false, "(0)", 1},
		{"distil-whisper/distil-large-v3", "n300", "tt-whisper", "distil-whisper/distil-large-v3", MeshShape{1, 1}, false, "(0)", 1},
		{"distil-whisper/distil-large-v3", "t3k", "tt-whisper", "distil-whisper/distil-large-v3", MeshShape{1, 1}, false, "(0),(1),(2),(3)", 2},
		{"distil-whisper/distil-large-v3", "galaxy", "tt-whisper", "distil-whisper/distil-large-v3", MeshShape{1, 1}, true, ids32, 2},
		{"openai-whisper-large-v3", "n150", "tt-whisper", "openai/whisper-large-v3", MeshShape{1, 1}, false, "(0)", 1},
		{"openai-whisper-large-v3", "n300", "tt-whisper", "openai/whisper-large-v3", MeshShape{1, 1}, false, "(0)", 1},
		{"openai-whisper-large-v3", "t3k", "tt-whisper", "openai/whisper-large-v3", MeshShape{1, 1}, false, "(0),(1),(2),(3)", 2},
		{"openai-whisper-large-v3", "galaxy", "tt-whisper", "openai/whisper-large-v3", MeshShape{1, 1}, true, ids32, 2},
		{"microsoft/resnet-50", "n150", "tt-xla-resnet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"microsoft/resnet-50", "n300", "tt-xla-resnet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"vovnet", "n150", "tt-xla-vovnet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"vovnet", "n300", "tt-xla-vovnet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"mobilenetv2", "n150", "tt-xla-mobilenetv2", "", MeshShape{1, 1}, false, "(0)", 0},
		{"mobilenetv2", "n300", "tt-xla-mobilenetv2", "", MeshShape{1, 1}, false, "(0)", 0},
		{"efficientnet", "n150", "tt-xla-efficientnet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"efficientnet", "n300", "tt-xla-efficientnet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"vit", "n150", "tt-xla-vit", "", MeshShape{1, 1}, false, "(0)", 0},
		{"vit", "n300", "tt-xla-vit", "", MeshShape{1, 1}, false, "(0)", 0},
		{"segformer", "n150", "tt-xla-segformer", "", MeshShape{1, 1}, false, "(0)", 0},
		{"segformer", "n300", "tt-xla-segformer", "", MeshShape{1, 1}, false, "(0)", 0},
		{"unet", "n150", "tt-xla-unet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"unet", "n300", "tt-xla-unet", "", MeshShape{1, 1}, false, "(0)", 0},
		{"yolox_nano", "n150", "tt-xla-yolox-nano", "Megvii-BaseDetection/YOLOX-Nano", MeshShape{1, 1}, false, "(0)", 0},
		{"SDXL-512", "n150", "tt-xla-sdxl", "hotshotco/SDXL-512", MeshShape{1, 1}, false, "(0)", 1},
		{"speecht5_tts", "n150", "tt-speecht5-tts", "microsoft/speecht5_tts", MeshShape{1, 1}, false, "(0)", 1},
		{"speecht5_tts", "n300", "tt-speecht5-tts", "microsoft/speecht5_tts", MeshShape{1, 1}, false, "(0)", 1},
		{"FLUX.1-dev", "t3k", "tt-flux.1-dev", "black-forest-labs/FLUX.1-dev", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"FLUX.1-dev", "galaxy", "tt-flux.1-dev", "black-forest-labs/FLUX.1-dev", MeshShape{4, 8}, false, ids32Group, 1},
		{"FLUX.1-schnell", "t3k", "tt-flux.1-schnell", "black-forest-labs/FLUX.1-schnell", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"FLUX.1-schnell", "galaxy", "tt-flux.1-schnell", "black-forest-labs/FLUX.1-schnell", MeshShape{4, 8}, false, ids32Group, 1},
		{"Motif-Image-6B-Preview", "t3k", "tt-motif-image-6b-preview", "Motif-Technologies/Motif-Image-6B-Preview", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"Motif-Image-6B-Preview", "galaxy", "tt-motif-image-6b-preview", "Motif-Technologies/Motif-Image-6B-Preview", MeshShape{4, 8}, false, ids32Group, 1},
		{"Qwen-Image", "t3k", "tt-qwen-image", "Qwen/Qwen-Image", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"Qwen-Image", "galaxy", "tt-qwen-image", "Qwen/Qwen-Image", MeshShape{4, 8}, false, ids32Group, 1},
		{"Qwen-Image-2512", "t3k", "tt-qwen-image-2512", "Qwen/Qwen-Image-2512", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"Qwen-Image-2512", "galaxy", "tt-qwen-image-2512", "Qwen/Qwen-Image-2512", MeshShape{4, 8}, false, ids32Group, 1},
		// HEAD's SDXL image-to-image and edit cells, and its video runners' (Galaxy, T3K, n150).
		{"stable-diffusion-xl-base-1.0-img-2-img", "n150", "tt-sdxl-image-to-image", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{1, 1}, false, "(0)", 1},
		{"stable-diffusion-xl-base-1.0-img-2-img", "n300", "tt-sdxl-image-to-image", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{2, 1}, false, "(0)", 1},
		{"stable-diffusion-xl-base-1.0-img-2-img", "t3k", "tt-sdxl-image-to-image", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{2, 1}, false, "(0),(1),(2),(3)", 1},
		{"stable-diffusion-xl-base-1.0-img-2-img", "galaxy", "tt-sdxl-image-to-image", "stabilityai/stable-diffusion-xl-base-1.0", MeshShape{1, 1}, true, ids32, 1},
		{"stable-diffusion-xl-1.0-inpainting-0.1", "n150", "tt-sdxl-edit", "diffusers/stable-diffusion-xl-1.0-inpainting-0.1", MeshShape{1, 1}, false, "(0)", 1},
		{"stable-diffusion-xl-1.0-inpainting-0.1", "n300", "tt-sdxl-edit", "diffusers/stable-diffusion-xl-1.0-inpainting-0.1", MeshShape{2, 1}, false, "(0)", 1},
		{"stable-diffusion-xl-1.0-inpainting-0.1", "t3k", "tt-sdxl-edit", "diffusers/stable-diffusion-xl-1.0-inpainting-0.1", MeshShape{2, 1}, false, "(0),(1),(2),(3)", 1},
		{"stable-diffusion-xl-1.0-inpainting-0.1", "galaxy", "tt-sdxl-edit", "diffusers/stable-diffusion-xl-1.0-inpainting-0.1", MeshShape{1, 1}, true, ids32, 1},
		{"mochi-1-preview", "t3k", "tt-mochi-1", "genmo/mochi-1-preview", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"mochi-1-preview", "galaxy", "tt-mochi-1", "genmo/mochi-1-preview", MeshShape{4, 8}, false, ids32Group, 1},
		{"Wan2.2-T2V-A14B-Diffusers", "n150", "tt-wan2.2", "Wan-AI/Wan2.2-T2V-A14B-Diffusers", MeshShape{1, 1}, false, "(0)", 1},
		{"Wan2.2-T2V-A14B-Diffusers", "t3k", "tt-wan2.2", "Wan-AI/Wan2.2-T2V-A14B-Diffusers", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"Wan2.2-T2V-A14B-Diffusers", "galaxy", "tt-wan2.2", "Wan-AI/Wan2.2-T2V-A14B-Diffusers", MeshShape{4, 8}, false, ids32Group, 1},
		{"Wan2.2-T2V-A14B-Prodia", "galaxy", "tt-wan2.2-t2v-prodia", "Wan-AI/Wan2.2-T2V-A14B-Diffusers", MeshShape{4, 8}, false, ids32Group, 1},
		{"Wan2.2-I2V-A14B-Diffusers", "t3k", "tt-wan2.2-i2v", "Wan-AI/Wan2.2-I2V-A14B-Diffusers", MeshShape{2, 4}, false, "(0,1,2,3)", 1},
		{"Wan2.2-I2V-A14B-Diffusers", "galaxy", "tt-wan2.2-i2v", "Wan-AI/Wan2.2-I2V-A14B-Diffusers", MeshShape{4, 8}, false, ids32Group, 1},
		{"Wan2.2-I2V-A14B-Prodia", "galaxy", "tt-wan2.2-i2v-prodia", "Wan-AI/Wan2.2-I2V-A14B-Diffusers", MeshShape{4, 8}, false, ids32Group, 1},
		{"LTX-2.3-distilled", "galaxy", "tt-ltx-2.3-distilled", "Lightricks/LTX-2.3:ltx-2.3-22b-distilled-1.1.safetensors", MeshShape{4, 8}, false, ids32Group, 1},
		{"MiniMax-H3", "galaxy", "tt-minimax-h3-t2va", "MiniMaxAI/MiniMax-H3", MeshShape{4, 8}, false, ids32Group, 1},
	}
	type presetKey struct{ runner, device string }
	covered := map[presetKey]bool{}
	for _, tt := range tests {
		covered[presetKey{tt.runner, tt.device}] = true
	}
	cells := 0
	for _, m := range catalogue.Models() {
		cells += len(m.Presets)
	}
	require.Len(t, covered, cells, "every ModelConfigs cell has a row")
	for _, tt := range tests {
		t.Run(tt.model+"@"+tt.device, func(t *testing.T) {
			// MODEL_RUNNER and MODEL_WEIGHTS_PATH are the cell's model's even when set (HEAD
			// sets them outside the cell); the cell's own keys are unset here, so the cell's
			// values apply (TestPresetYieldsToTheEnvironment: set ones win, as at HEAD).
			e := env{
				"MODEL": tt.model, "DEVICE": tt.device,
				"MODEL_RUNNER": "tt-yolov4", "MODEL_WEIGHTS_PATH": "/mine",
			}
			s := load(t, e, false)
			require.Equal(t, tt.runner, s.ModelRunner)
			require.Equal(t, tt.mesh, s.DeviceMeshShape)
			require.Equal(t, tt.galaxy, s.IsGalaxy)
			require.Equal(t, tt.ids, s.DeviceIDs)
			wantGroups, err := ParseDeviceIDs(tt.ids)
			require.NoError(t, err)
			require.Equal(t, wantGroups, s.DeviceGroups)
			if tt.batch == 0 {
				require.Equal(t, 1, s.MaxBatchSize, "MAX_BATCH_SIZE's default")
			} else {
				require.Equal(t, tt.batch, s.MaxBatchSize)
			}
			if tt.weights == "" {
				require.Equal(t, "/mine", s.ModelWeightsPath)
			} else {
				require.Equal(t, tt.weights, s.ModelWeightsPath)
			}
			svc, err := ServiceForRunner(tt.runner)
			require.NoError(t, err)
			require.Equal(t, svc, s.ModelService)
		})
	}
}

// TestPresetYieldsToTheEnvironment: a ModelConfigs key set in the environment keeps its value,
// as HEAD's Settings._set_config_overrides does ("env vars take precedence"); the keys left unset
// take the cell's.
func TestPresetYieldsToTheEnvironment(t *testing.T) {
	tests := []struct {
		name      string
		env       env
		mesh      MeshShape
		galaxy    bool
		ids       string
		batch     int
		runner    string
		weightsOf string
	}{
		{"every cell key set", env{"MODEL": "openai-whisper-large-v3", "DEVICE": "galaxy", "DEVICE_IDS": "(4),(5)",
			"MAX_BATCH_SIZE": "4", "DEVICE_MESH_SHAPE": "(1,1)", "IS_GALAXY": "false", "MODEL_RUNNER": "tt-yolov4"},
			MeshShape{1, 1}, false, "(4),(5)", 4, "tt-whisper", "openai/whisper-large-v3"},
		{"only DEVICE_IDS set", env{"MODEL": "openai-whisper-large-v3", "DEVICE": "galaxy", "DEVICE_IDS": "(7)"},
			MeshShape{1, 1}, true, "(7)", 2, "tt-whisper", "openai/whisper-large-v3"},
		{"only MAX_BATCH_SIZE set", env{"MODEL": "openai-whisper-large-v3", "DEVICE": "n150", "MAX_BATCH_SIZE": "3"},
			MeshShape{1, 1}, false, "(0)", 3, "tt-whisper", "openai/whisper-large-v3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := load(t, tt.env, false)
			require.Equal(t, tt.mesh, s.DeviceMeshShape)
			require.Equal(t, tt.galaxy, s.IsGalaxy)
			require.Equal(t, tt.ids, s.DeviceIDs)
			require.Equal(t, tt.batch, s.MaxBatchSize)
			require.Equal(t, tt.runner, s.ModelRunner, "MODEL_RUNNER is the cell's model's, as at HEAD")
			require.Equal(t, tt.weightsOf, s.ModelWeightsPath)
		})
	}
}

func TestPresetNeedsBoth(t *testing.T) {
	s := load(t, env{"MODEL": "openai-whisper-large-v3"}, false)
	require.Equal(t, "tt-sdxl-trace", s.ModelRunner, "MODEL alone applies nothing, as in Python")
	s = load(t, env{"DEVICE": "n300", "MODEL": ""}, false)
	require.Equal(t, "tt-sdxl-trace", s.ModelRunner)
	require.Len(t, s.DeviceGroups, 32)
}

func TestPresetThenMeshOverride(t *testing.T) {
	s := load(t, env{"MODEL": "stable-diffusion-3.5-large", "DEVICE": "galaxy", "SD_3_5_BASE": "true"}, false)
	require.Equal(t, MeshShape{2, 4}, s.DeviceMeshShape)
	require.Equal(t, "tt-sd3.5", s.ModelRunner)
	require.Equal(t, []string{"0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"}, groupIDs(s.DeviceGroups),
		"HEAD's cell: one group of the Galaxy's 32 chips")
}

func TestMockGroups(t *testing.T) {
	tests := []struct {
		env  env
		want []string
	}{
		{env{}, []string{"0", "1", "2", "3", "4"}},
		{env{"MOCK_DEVICES_COUNT": "1"}, []string{"0"}},
		{env{"MOCK_DEVICES_COUNT": "8", "SD_3_5_BASE": "true"}, []string{"0,1,2,3,4,5,6,7"}},
		{env{"MOCK_DEVICES_COUNT": "5", "TP2": "true"}, []string{"0,1", "2,3"}},
		{env{"MOCK_DEVICES_COUNT": "32", "SD_3_5_FAST": "true"}, []string{"0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31"}},
		{env{"DEVICE_IDS": "(4),(2)"}, []string{"4", "2"}},
		{env{"DEVICE_IDS": ""}, []string{""}},
		{env{"DEVICE_IDS": "", "SD_3_5_BASE": "true", "MOCK_DEVICES_COUNT": "8"}, []string{""}},
		{env{"MODEL": "openai-whisper-large-v3", "DEVICE": "t3k"}, []string{"0", "1", "2", "3"}},
	}
	for _, tt := range tests {
		s := load(t, tt.env, true)
		require.Equal(t, tt.want, groupIDs(s.DeviceGroups), "%v", tt.env)
		again, err := ParseDeviceIDs(s.DeviceIDs)
		require.NoError(t, err)
		require.Equal(t, s.DeviceGroups, again, "DeviceIDs must describe the groups")
	}
}

func TestHardwareMeshFitsGroups(t *testing.T) {
	// An n300 card is one PCIe device with two chips: TP2 fits DEVICE_IDS=(0) there.
	s := load(t, env{"TP2": "true", "DEVICE_IDS": "(0)", "DEVICE": "n300"}, false)
	require.Equal(t, MeshShape{2, 1}, s.DeviceMeshShape)
	// DEVICE unset: chips per id unknown, the check is skipped (Python's TP2 recipe).
	load(t, env{"TP2": "true"}, false)
	load(t, env{"TP2": "true", "DEVICE_IDS": "(0,1),(2,3)", "DEVICE": "galaxy"}, false)
	err := loadErr(t, env{"TP2": "true", "DEVICE_IDS": "(0),(1)", "DEVICE": "galaxy"}, false)
	require.EqualError(t, err, `invalid setting DEVICE_MESH_SHAPE="(2,1)": the mesh (from TP2=true) needs 2 chips but DEVICE_IDS group (0) has 1; give each group rows*cols chips`)
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		env  env
		mock bool
		want string
	}{
		{"unknown runner", env{"MODEL_RUNNER": "tt-llama"}, false,
			`invalid setting MODEL_RUNNER="tt-llama": accepted: tt-sdxl-trace, tt-sd3.5, tt-sdxl-image-to-image, tt-sdxl-edit, tt-flux.1-dev, tt-flux.1-schnell, tt-motif-image-6b-preview, tt-qwen-image, tt-qwen-image-2512, tt-xla-sdxl, tt-z-image-turbo, tt-whisper, tt-yolov4, tt-xla-resnet, tt-xla-vovnet, tt-xla-mobilenetv2, tt-xla-efficientnet, tt-xla-vit, tt-xla-segformer, tt-xla-unet, tt-xla-yolox-nano, tt-speecht5-tts, tt-mochi-1, tt-wan2.2, tt-wan2.2-t2v-prodia, tt-wan2.2-i2v, tt-wan2.2-i2v-prodia, tt-wan2.2-i2v-anisora, tt-wan2.2-i2v-distill, tt-wan2.2-i2v-lora, tt-wan2.2-i2v-lightning, tt-ltx-2.3-distilled, tt-minimax-h3-t2va, mock`},
		{"unknown service", env{"MODEL_SERVICE": "llm"}, false,
			`invalid setting MODEL_SERVICE="llm": accepted: image, audio, cnn, video, text_to_speech`},
		{"video runner, image service", env{"MODEL_SERVICE": "video"}, false,
			`invalid setting MODEL_SERVICE="video": MODEL_RUNNER=tt-sdxl-trace serves "image"; leave MODEL_SERVICE unset or set it to image`},
		{"job count", env{"MODEL_RUNNER": "tt-wan2.2", "MAX_JOBS": "0"}, false, `invalid setting MAX_JOBS="0": must be at least 1`},
		{"export preset", env{"MODEL_RUNNER": "tt-wan2.2", "TT_VIDEO_EXPORT_PRESET": "quick"}, false,
			`invalid setting TT_VIDEO_EXPORT_PRESET="quick": accepted: ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow, placebo`},
		{"job database url", env{"MODEL_RUNNER": "tt-wan2.2", "JOB_DATABASE_URL": "mysql://x"}, false,
			`invalid setting JOB_DATABASE_URL="(redacted)": must be a postgres:// or postgresql:// URL`},
		{"inconsistent service", env{"MODEL_SERVICE": "audio"}, false,
			`invalid setting MODEL_SERVICE="audio": MODEL_RUNNER=tt-sdxl-trace serves "image"; leave MODEL_SERVICE unset or set it to image`},
		{"mock without service", env{"MODEL_RUNNER": "mock"}, true,
			`invalid setting MODEL_SERVICE="": MODEL_RUNNER=mock serves no fixed service; set MODEL_SERVICE to one of image|audio|cnn|video|text_to_speech`},
		{"queue size", env{"MAX_QUEUE_SIZE": "0"}, false, `invalid setting MAX_QUEUE_SIZE="0": must be an integer >= 1`},
		{"connections", env{"MAX_CONNECTIONS": "-1"}, false, `invalid setting MAX_CONNECTIONS="-1": must be an integer >= 0`},
		{"image memory budget", env{"IMAGE_MEMORY_BUDGET_BYTES": "1000"}, false, `invalid setting IMAGE_MEMORY_BUDGET_BYTES="1000": must be an integer >= 1048576`},
		{"queue size text", env{"MAX_QUEUE_SIZE": "many"}, false, `invalid setting MAX_QUEUE_SIZE="many": not an integer`},
		{"queue size empty", env{"MAX_QUEUE_SIZE": ""}, false, `invalid setting MAX_QUEUE_SIZE="": not an integer`},
		{"batch size", env{"MAX_BATCH_SIZE": "-1"}, false, `invalid setting MAX_BATCH_SIZE="-1": must be an integer >= 1`},
		{"device ids garbage", env{"DEVICE_IDS": "(0),(x)"}, false,
			`invalid setting DEVICE_IDS="(0),(x)": expected a chip id, found 'x' at position 6 (accepted: "(0),(1),(2)", "(0,1),(2,3)", "0", or "" for one worker on all devices)`},
		{"duplicate chip", env{"DEVICE_IDS": "(0,1),(1,2)"}, false,
			`invalid setting DEVICE_IDS="(0,1),(1,2)": chip 1 appears in groups (0,1) and (1,2); each chip may belong to one group only`},
		{"mesh too big for group", env{"DEVICE_MESH_SHAPE": "[2,4]", "DEVICE_IDS": "(0,1,2,3)"}, true,
			`invalid setting DEVICE_MESH_SHAPE="(2,4)": the mesh (from DEVICE_MESH_SHAPE) needs 8 chips but DEVICE_IDS group (0,1,2,3) has 4; give each group rows*cols chips`},
		{"mesh too big for all devices (mock)", env{"SD_3_5_BASE": "true", "DEVICE_IDS": ""}, true,
			`invalid setting DEVICE_MESH_SHAPE="(2,4)": the mesh (from SD_3_5_BASE=true) needs 8 chips but DEVICE_IDS group "" (all MOCK_DEVICES_COUNT chips) has 5; give each group rows*cols chips`},
		{"mock count too small for mesh", env{"SD_3_5_BASE": "true"}, true,
			`invalid setting MOCK_DEVICES_COUNT="5": DEVICE_MESH_SHAPE 2x4 needs at least 8 simulated chips; raise MOCK_DEVICES_COUNT or set DEVICE_IDS`},
		{"preset mesh in mock", env{"MODEL": "stable-diffusion-3.5-large", "DEVICE": "t3k"}, true,
			`invalid setting DEVICE_MESH_SHAPE="(2,4)": the mesh (from the MODEL=stable-diffusion-3.5-large DEVICE=t3k preset) needs 8 chips but DEVICE_IDS group (0,1,2,3) (set by the MODEL=stable-diffusion-3.5-large DEVICE=t3k preset) has 4; give each group rows*cols chips`},
		{"mock chip out of range", env{"DEVICE_IDS": "(0),(5)"}, true,
			`invalid setting DEVICE_IDS="(0),(5)": chip 5 does not exist: mock mode simulates MOCK_DEVICES_COUNT=5 chips (0..4)`},
		{"mock preset chip out of range", env{"MODEL": "openai-whisper-large-v3", "DEVICE": "galaxy"}, true,
			`invalid setting DEVICE_IDS="(0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12),(13),(14),(15),(16),(17),(18),(19),(20),(21),(22),(23),(24),(25),(26),(27),(28),(29),(30),(31)": chip 5 does not exist (set by the MODEL=openai-whisper-large-v3 DEVICE=galaxy preset): mock mode simulates MOCK_DEVICES_COUNT=5 chips (0..4)`},
		{"mock count zero", env{"MOCK_DEVICES_COUNT": "0"}, true, `invalid setting MOCK_DEVICES_COUNT="0": must be an integer >= 1`},
		{"mesh garbage", env{"DEVICE_MESH_SHAPE": "2x"}, false,
			`invalid setting DEVICE_MESH_SHAPE="2x": accepted: "[2,4]", "(2,4)", "2,4" or "2x4", each at least 1`},
		{"mesh zero", env{"DEVICE_MESH_SHAPE": "[0,4]"}, false,
			`invalid setting DEVICE_MESH_SHAPE="[0,4]": accepted: "[2,4]", "(2,4)", "2,4" or "2x4", each at least 1`},
		{"negative reset sleep", env{"RESET_DEVICE_SLEEP_TIME": "-1"}, false, `invalid setting RESET_DEVICE_SLEEP_TIME="-1": must be a number of seconds >= 0`},
		{"negative delay", env{"NEW_DEVICE_DELAY_SECONDS": "-0.5"}, false, `invalid setting NEW_DEVICE_DELAY_SECONDS="-0.5": must be a number of seconds >= 0`},
		{"zero check period", env{"WORKER_CHECK_SLEEP_TIMEOUT": "0"}, false, `invalid setting WORKER_CHECK_SLEEP_TIMEOUT="0": must be a number of seconds > 0`},
		{"zero timeout", env{"DEFAULT_INFERENCE_TIMEOUT_SECONDS": "0"}, false, `invalid setting DEFAULT_INFERENCE_TIMEOUT_SECONDS="0": must be a number of seconds > 0`},
		{"negative grace", env{"SHUTDOWN_GRACE_SECONDS": "-3"}, false, `invalid setting SHUTDOWN_GRACE_SECONDS="-3": must be a number of seconds >= 0`},
		{"negative mock step", env{"MOCK_STEP_SECONDS": "-0.01"}, true, `invalid setting MOCK_STEP_SECONDS="-0.01": must be a number of seconds >= 0`},
		{"NaN seconds", env{"MOCK_CNN_SECONDS": "NaN"}, true, `invalid setting MOCK_CNN_SECONDS="NaN": not a number of seconds`},
		{"seconds text", env{"MOCK_WARMUP_SECONDS": "1s"}, true, `invalid setting MOCK_WARMUP_SECONDS="1s": not a number of seconds`},
		{"huge seconds", env{"SHUTDOWN_GRACE_SECONDS": "1e300"}, false, `invalid setting SHUTDOWN_GRACE_SECONDS="1e300": number of seconds out of range`},
		{"port high", env{"SERVICE_PORT": "65536"}, false, `invalid setting SERVICE_PORT="65536": must be a port number from 0 (any free port) to 65535`},
		{"port negative", env{"SERVICE_PORT": "-1"}, false, `invalid setting SERVICE_PORT="-1": must be a port number from 0 (any free port) to 65535`},
		{"quality zero", env{"IMAGE_QUALITY": "0"}, false, `invalid setting IMAGE_QUALITY="0": must be an integer from 1 to 100`},
		{"quality high", env{"IMAGE_QUALITY": "101"}, false, `invalid setting IMAGE_QUALITY="101": must be an integer from 1 to 100`},
		{"image format", env{"IMAGE_RETURN_FORMAT": "gif"}, false, `invalid setting IMAGE_RETURN_FORMAT="GIF": accepted: JPEG, PNG`},
		{"native codecs", env{"NATIVE_CODECS": "maybe"}, false, `invalid setting NATIVE_CODECS="maybe": accepted: auto, off`},
		{"mock image", env{"MOCK_IMAGE": "noise"}, false, `invalid setting MOCK_IMAGE="noise": accepted: scene, solid`},
		{"log level", env{"LOG_LEVEL": "verbose"}, false, `invalid setting LOG_LEVEL="VERBOSE": accepted: DEBUG, INFO, WARNING, WARN, ERROR, CRITICAL, FATAL, NOTSET`},
		{"unknown model", env{"MODEL": "llama"}, false,
			`invalid setting MODEL="llama": accepted: stable-diffusion-xl-base-1.0, stable-diffusion-3.5-large, stable-diffusion-xl-base-1.0-img-2-img, stable-diffusion-xl-1.0-inpainting-0.1, FLUX.1-dev, FLUX.1-schnell, Motif-Image-6B-Preview, Qwen-Image, Qwen-Image-2512, SDXL-512, Z-Image-Turbo, distil-whisper/distil-large-v3, openai-whisper-large-v3, microsoft/resnet-50, vovnet, mobilenetv2, efficientnet, vit, segformer, unet, yolox_nano, speecht5_tts, mochi-1-preview, Wan2.2-T2V-A14B-Diffusers, Wan2.2-T2V-A14B-Prodia, Wan2.2-I2V-A14B-Diffusers, Wan2.2-I2V-A14B-Prodia, Wan2.2-I2V-AniSora-V3.2, Wan2.2-I2V-Distill-LightX2V, Wan2.2-I2V-LoRA, Wan2.2-I2V-Lightning, LTX-2.3-distilled, MiniMax-H3`},
		{"unknown device", env{"DEVICE": "p150"}, false, `invalid setting DEVICE="p150": accepted: n150, n300, t3k, galaxy`},
		{"no preset", env{"MODEL": "stable-diffusion-3.5-large", "DEVICE": "n150"}, false,
			`invalid setting MODEL="stable-diffusion-3.5-large": has no preset for DEVICE=n150 (presets: t3k, galaxy)`},
		{"no preset cnn", env{"MODEL": "vovnet", "DEVICE": "galaxy"}, false,
			`invalid setting MODEL="vovnet": has no preset for DEVICE=galaxy (presets: n150, n300)`},
		{"preset vs service", env{"MODEL": "vovnet", "DEVICE": "n150", "MODEL_SERVICE": "image"}, false,
			`invalid setting MODEL_SERVICE="image": MODEL_RUNNER=tt-xla-vovnet serves "cnn"; leave MODEL_SERVICE unset or set it to cnn`},
		{"trace region", env{"TRACE_REGION_SIZE": "-1"}, false, `invalid setting TRACE_REGION_SIZE="-1": must be an integer >= 0`},
		{"restart count", env{"MAX_WORKER_RESTART_COUNT": "-1"}, false, `invalid setting MAX_WORKER_RESTART_COUNT="-1": must be an integer >= 0`},
		{"steps", env{"NUM_INFERENCE_STEPS": "0"}, false, `invalid setting NUM_INFERENCE_STEPS="0": must be an integer >= 1`},
		{"audio bytes", env{"MAX_AUDIO_SIZE_BYTES": "0"}, false, `invalid setting MAX_AUDIO_SIZE_BYTES="0": must be an integer >= 1`},
		{"sample rate", env{"DEFAULT_SAMPLE_RATE": "0"}, false, `invalid setting DEFAULT_SAMPLE_RATE="0": must be an integer >= 1`},
		{"audio duration", env{"MAX_AUDIO_DURATION_SECONDS": "0"}, false, `invalid setting MAX_AUDIO_DURATION_SECONDS="0": must be a number of seconds > 0`},
		{"audio duration pre", env{"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS": "-5"}, false, `invalid setting MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS="-5": must be a number of seconds > 0`},
		{"audio duration inf", env{"MAX_AUDIO_DURATION_SECONDS": "inf"}, false, `invalid setting MAX_AUDIO_DURATION_SECONDS="inf": not a finite number`},
		{"pprof beyond loopback", env{"PPROF_ADDR": "0.0.0.0:6061"}, false,
			`invalid setting PPROF_ADDR="0.0.0.0:6061": must be a loopback host:port (127.0.0.1:6061, [::1]:6061 or localhost:6061)`},
		{"pprof without port", env{"PPROF_ADDR": "127.0.0.1"}, false,
			`invalid setting PPROF_ADDR="127.0.0.1": not host:port (address 127.0.0.1: missing port in address)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := loadErr(t, tt.env, tt.mock)
			require.ErrorIs(t, err, ErrInvalid)
			require.EqualError(t, err, tt.want)
			require.NotContains(t, err.Error(), "\n", "one line")
			var se *SettingError
			require.True(t, errors.As(err, &se))
			require.Contains(t, tt.want, se.Key)
		})
	}
}

func TestServiceForRunner(t *testing.T) {
	want := map[string]string{
		"tt-sdxl-trace": "image", "tt-sd3.5": "image", "tt-sdxl-image-to-image": "image", "tt-sdxl-edit": "image", "tt-whisper": "audio", "tt-yolov4": "cnn",
		"tt-xla-resnet": "cnn", "tt-xla-vovnet": "cnn", "tt-xla-mobilenetv2": "cnn", "tt-speecht5-tts": "text_to_speech",
		"tt-flux.1-dev": "image", "tt-flux.1-schnell": "image", "tt-motif-image-6b-preview": "image", "tt-qwen-image": "image",
		"tt-qwen-image-2512": "image", "tt-xla-sdxl": "image", "tt-z-image-turbo": "image", "tt-xla-efficientnet": "cnn", "tt-xla-vit": "cnn",
		"tt-xla-segformer": "cnn", "tt-xla-unet": "cnn", "tt-xla-yolox-nano": "cnn",
	}
	var videoRunners []string
	for _, m := range catalogue.Models() {
		if m.Service == catalogue.ServiceVideo {
			videoRunners = append(videoRunners, m.Name)
		}
	}
	for _, r := range videoRunners {
		want[r] = "video"
	}
	require.Equal(t, append(append([]string{"tt-sdxl-trace", "tt-sd3.5", "tt-sdxl-image-to-image", "tt-sdxl-edit",
		"tt-flux.1-dev", "tt-flux.1-schnell", "tt-motif-image-6b-preview", "tt-qwen-image", "tt-qwen-image-2512", "tt-xla-sdxl", "tt-z-image-turbo",
		"tt-whisper", "tt-yolov4", "tt-xla-resnet", "tt-xla-vovnet", "tt-xla-mobilenetv2", "tt-xla-efficientnet", "tt-xla-vit",
		"tt-xla-segformer", "tt-xla-unet", "tt-xla-yolox-nano", "tt-speecht5-tts"}, videoRunners...), "mock"), KnownRunners())
	for _, r := range KnownRunners() {
		svc, err := ServiceForRunner(r)
		if r == "mock" {
			require.ErrorIs(t, err, ErrInvalid)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, want[r], svc, r)
	}
	_, err := ServiceForRunner("nope")
	require.ErrorIs(t, err, ErrInvalid)
	// KnownRunners returns a copy.
	KnownRunners()[0] = "changed"
	require.Equal(t, "tt-sdxl-trace", KnownRunners()[0])
}

func TestMockRunnerServices(t *testing.T) {
	for _, svc := range []string{"image", "audio", "cnn"} {
		s := load(t, env{"MODEL_RUNNER": "mock", "MODEL_SERVICE": svc}, true)
		require.Equal(t, svc, s.Service())
	}
}

func TestService(t *testing.T) {
	require.Equal(t, "audio", (&Settings{ModelRunner: "tt-whisper"}).Service())
	require.Equal(t, "cnn", (&Settings{ModelRunner: "mock", ModelService: "cnn"}).Service())
	require.Equal(t, "", (&Settings{ModelRunner: "mock"}).Service())
}

func TestRedacted(t *testing.T) {
	s := load(t, env{"API_KEY": "k1", "JWT_SECRET": "s2", "HF_TOKEN": "hf3", "TP2": "true", "DEVICE_IDS": "(0,1)"}, true)
	r := s.Redacted()
	require.Equal(t, "***", r["API_KEY"])
	require.Equal(t, "***", r["JWT_SECRET"])
	require.Equal(t, "***", r["HF_TOKEN"])
	require.Equal(t, "(2,1)", r["DEVICE_MESH_SHAPE"])
	require.Equal(t, []string{"0,1"}, r["DEVICE_GROUPS"])
	require.Equal(t, 90.0, r["DEFAULT_INFERENCE_TIMEOUT_SECONDS"])
	require.Equal(t, 64, r["MAX_QUEUE_SIZE"])
	for k, v := range r {
		require.NotContains(t, []any{"k1", "s2", "hf3"}, v, k)
	}
	// Every variable envconfig knows is in the map (plus the derived entries).
	vars, err := gatherVars(&rawEnv{})
	require.NoError(t, err)
	head, err := gatherVars(&headEnv{})
	require.NoError(t, err)
	vars = append(vars, head...)
	video, err := gatherVars(&videoEnv{})
	require.NoError(t, err)
	vars = append(vars, video...)
	for _, v := range vars {
		require.Contains(t, r, v.key)
	}
	require.Len(t, r, len(vars)+2) // MOCK_MODE, DEVICE_GROUPS

	empty := load(t, env{"API_KEY": ""}, false).Redacted()
	require.Equal(t, "", empty["API_KEY"])
	require.Equal(t, "", empty["JWT_SECRET"])
}

// TestEnvconfigAgrees runs envconfig.Process itself on rawEnv against the real environment and
// compares with processVars: the lookup-driven path must read exactly what envconfig reads.
func TestEnvconfigAgrees(t *testing.T) {
	set := env{
		"MODEL_RUNNER": "tt-whisper", "DEVICE_IDS": "(0,1)", "IS_GALAXY": "on", "DEVICE_MESH_SHAPE": "2x1",
		"RESET_DEVICE_SLEEP_TIME": "0.5", "NEW_DEVICE_DELAY_SECONDS": "7", "MAX_QUEUE_SIZE": "9",
		"MAX_AUDIO_DURATION_SECONDS": "12.5", "TP2": "TRUE", "API_KEY": "",
	}
	for k, v := range set {
		t.Setenv(k, v)
	}
	var viaEnvconfig, viaLookup rawEnv
	require.NoError(t, envconfig.Process("", &viaEnvconfig))
	require.NoError(t, processVars(os.LookupEnv, &viaLookup))
	require.Equal(t, viaEnvconfig, viaLookup)
	require.Equal(t, envInt(9), viaLookup.MaxQueueSize)
	require.Equal(t, optSeconds{v: envSeconds(7 * time.Second), set: true}, viaLookup.NewDeviceDelaySeconds)
	require.Equal(t, "", viaLookup.APIKey)
	require.Equal(t, envInt(16000), viaLookup.DefaultSampleRate)

	vars, err := gatherVars(&rawEnv{})
	require.NoError(t, err)
	require.Len(t, vars, reflect.TypeOf(rawEnv{}).NumField(), "every rawEnv field is a variable")
}

func TestDotenvPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	content := `# settings for the test
max_queue_size=7
MAX_BATCH_SIZE = 2
export LOG_LEVEL="debug"
API_KEY='from-dotenv' # comment
SOME_UNKNOWN_KEY=ignored
HF_TOKEN=
MODEL_RUNNER=tt-whisper
`
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	s, err := LoadFrom(env{"MAX_QUEUE_SIZE": "9"}.lookup, path, false)
	require.NoError(t, err)
	require.Equal(t, 9, s.MaxQueueSize, "the environment beats .env")
	require.Equal(t, 2, s.MaxBatchSize)
	require.Equal(t, "DEBUG", s.LogLevel)
	require.Equal(t, "from-dotenv", s.APIKey)
	require.Equal(t, "", s.HFToken)
	require.Equal(t, "audio", s.ModelService)

	// An empty value in the environment still wins over .env.
	s, err = LoadFrom(env{"API_KEY": ""}.lookup, path, false)
	require.NoError(t, err)
	require.Equal(t, "", s.APIKey)
	require.Equal(t, 7, s.MaxQueueSize)

	// A missing .env is fine; a bad one fails with its line.
	_, err = LoadFrom(env{}.lookup, filepath.Join(dir, "absent.env"), false)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("A=1\nnot a pair\n"), 0o600))
	_, err = LoadFrom(env{}.lookup, path, false)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, ".env line 2: expected KEY=VALUE")
	// A .env that is a directory is an I/O error, not silently ignored.
	_, err = LoadFrom(env{}.lookup, dir, false)
	require.Error(t, err)
	// Values from .env are validated like the environment's.
	require.NoError(t, os.WriteFile(path, []byte("MAX_QUEUE_SIZE=0\n"), 0o600))
	_, err = LoadFrom(env{}.lookup, path, false)
	require.EqualError(t, err, `invalid setting MAX_QUEUE_SIZE="0": must be an integer >= 1`)
}

// TestLoad covers Load itself: the real environment (through t.Setenv) and dir/.env.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".env"), []byte("MAX_QUEUE_SIZE=7\nMAX_BATCH_SIZE=3\nNUM_INFERENCE_STEPS=25\n"), 0o600))
	t.Setenv("MAX_QUEUE_SIZE", "11")
	t.Setenv("num_inference_steps", "30") // pydantic-settings matches names case-insensitively
	t.Setenv("MOCK_DEVICES_COUNT", "2")
	s, err := Load(dir, true)
	require.NoError(t, err)
	require.Equal(t, 11, s.MaxQueueSize)
	require.Equal(t, 3, s.MaxBatchSize)
	require.Equal(t, 30, s.NumInferenceSteps)
	require.Equal(t, []string{"0", "1"}, groupIDs(s.DeviceGroups))
	require.True(t, s.Mock)

	t.Setenv("MAX_QUEUE_SIZE", "0")
	_, err = Load(dir, true)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestOSLookup(t *testing.T) {
	l := osLookup([]string{"A=1", "b_c=2", "B_C=3", "EMPTY=", "junk"})
	v, ok := l("A")
	require.True(t, ok)
	require.Equal(t, "1", v)
	v, ok = l("B_C")
	require.True(t, ok)
	require.Equal(t, "3", v, "the exact name wins")
	v, ok = l("b_C")
	require.True(t, ok)
	require.Equal(t, "2", v)
	v, ok = l("EMPTY")
	require.True(t, ok)
	require.Equal(t, "", v)
	_, ok = l("JUNK")
	require.False(t, ok)
}

func TestParseClientWeights(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]int
		wantErr string
	}{
		{"", map[string]int{}, ""},
		{"api_key=2, jwt:team-a=1", map[string]int{"api_key": 2, "jwt:team-a": 1}, ""},
		{"api_key", nil, `"api_key" is not client=weight`},
		{"api_key=0", nil, "from 1 to 1000"},
		{"api_key=x", nil, "from 1 to 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseClientWeights(tc.in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.Contains(t, err.Error(), tc.wantErr)
				require.Contains(t, err.Error(), "CLIENT_WEIGHTS")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// A cell's request_processing_timeout_seconds (HEAD's ModelConfigs) is the deadline of the
// model's requests, or of its video jobs, unless the environment sets one: HEAD's
// _set_config_overrides skips a key that is in the environment.
func TestPresetRequestTimeout(t *testing.T) {
	const wan = "Wan2.2-T2V-A14B-Diffusers"
	tests := []struct {
		env          env
		request, job time.Duration
	}{
		{env{"MODEL": "stable-diffusion-xl-base-1.0", "DEVICE": "n150"}, 90 * time.Second, 0},
		{env{"MODEL": "stable-diffusion-xl-base-1.0", "DEVICE": "n300"}, 3000 * time.Second, 0},
		{env{"MODEL": "stable-diffusion-xl-base-1.0", "DEVICE": "n300", "REQUEST_PROCESSING_TIMEOUT_SECONDS": "7"}, 7 * time.Second, 0},
		{env{"MODEL": "stable-diffusion-xl-base-1.0", "DEVICE": "n300", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "8"}, 8 * time.Second, 0},
		{env{"MODEL": "stable-diffusion-3.5-large", "DEVICE": "t3k"}, 2000 * time.Second, 0},
		{env{"MODEL": "FLUX.1-dev", "DEVICE": "galaxy"}, 5000 * time.Second, 0},
		{env{"MODEL": "Qwen-Image", "DEVICE": "galaxy"}, 90 * time.Second, 0},
		{env{"MODEL": "SDXL-512", "DEVICE": "n150"}, 3000 * time.Second, 0},
		{env{"MODEL": "openai-whisper-large-v3", "DEVICE": "galaxy"}, 5000 * time.Second, 0},
		{env{"MODEL": "microsoft/resnet-50", "DEVICE": "n150"}, 90 * time.Second, 0},
		{env{"MODEL": wan, "DEVICE": "t3k"}, 90 * time.Second, 5000 * time.Second},
		{env{"MODEL": wan, "DEVICE": "t3k", "VIDEO_JOB_TIMEOUT_SECONDS": "60"}, 90 * time.Second, time.Minute},
		{env{"MODEL": wan, "DEVICE": "t3k", "REQUEST_PROCESSING_TIMEOUT_SECONDS": "7"}, 7 * time.Second, 5000 * time.Second},
		{env{"MODEL": "mochi-1-preview", "DEVICE": "galaxy"}, 90 * time.Second, 0},
		{env{"MODEL": "mochi-1-preview", "DEVICE": "t3k"}, 90 * time.Second, 5000 * time.Second},
		{env{"MODEL": "LTX-2.3-distilled", "DEVICE": "galaxy"}, 90 * time.Second, 7200 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.env["MODEL"]+"@"+tt.env["DEVICE"], func(t *testing.T) {
			s := load(t, tt.env, false)
			require.Equal(t, tt.request, s.InferenceTimeout, "the request deadline")
			require.Equal(t, tt.job, s.Video.JobTimeout, "the video job limit")
		})
	}
}
