package config

import (
	"fmt"
	"strings"
)

// Runner names (MODEL_RUNNER), as the Python ModelRunners enum.
const (
	RunnerSDXL        = "tt-sdxl-trace"
	RunnerSD35        = "tt-sd3.5"
	RunnerSDXLImg2Img = "tt-sdxl-image-to-image"
	RunnerSDXLEdit    = "tt-sdxl-edit"
	RunnerWhisper     = "tt-whisper"
	RunnerYOLOv4      = "tt-yolov4"
	RunnerResNet      = "tt-xla-resnet"
	RunnerVoVNet      = "tt-xla-vovnet"
	RunnerMobileNetV2 = "tt-xla-mobilenetv2"
	RunnerSpeechT5    = "tt-speecht5-tts"
	RunnerMock        = "mock"
)

// Video runners (HEAD's ModelRunners for MODEL_SERVICE=video).
var videoRunners = []string{"tt-mochi-1", "tt-wan2.2", "tt-wan2.2-t2v-prodia", "tt-wan2.2-i2v",
	"tt-wan2.2-i2v-prodia", "tt-wan2.2-i2v-anisora", "tt-wan2.2-i2v-distill", "tt-wan2.2-i2v-lora",
	"tt-wan2.2-i2v-lightning", "tt-ltx-2.3-distilled", "tt-minimax-h3-t2va"}

// Service names (MODEL_SERVICE), as the Python ModelServices enum.
const (
	ServiceImage = "image"
	ServiceAudio = "audio"
	ServiceCNN   = "cnn"
	ServiceVideo = "video"
	// ServiceTextToSpeech is HEAD's text_to_speech service (SpeechT5).
	ServiceTextToSpeech = "text_to_speech"
)

// Device types (DEVICE), as the Python DeviceTypes enum.
const (
	DeviceN150   = "n150"
	DeviceN300   = "n300"
	DeviceT3K    = "t3k"
	DeviceGalaxy = "galaxy"
)

// knownRunners is the Python ModelRunners enum, in its order.
var knownRunners = []string{
	RunnerSDXL, RunnerSD35, RunnerSDXLImg2Img, RunnerSDXLEdit, RunnerWhisper, RunnerYOLOv4,
	RunnerResNet, RunnerVoVNet, RunnerMobileNetV2, RunnerSpeechT5, RunnerMock,
}

func init() {
	knownRunners = append(knownRunners[:len(knownRunners)-1:len(knownRunners)-1], append(videoRunners, RunnerMock)...)
	for _, r := range videoRunners {
		runnerService[r] = ServiceVideo
	}
}

// runnerService is MODEL_SERVICE_RUNNER_MAP inverted; "mock" is in no service.
var runnerService = map[string]string{
	RunnerSDXL:        ServiceImage,
	RunnerSD35:        ServiceImage,
	RunnerSDXLImg2Img: ServiceImage,
	RunnerSDXLEdit:    ServiceImage,
	RunnerWhisper:     ServiceAudio,
	RunnerResNet:      ServiceCNN,
	RunnerVoVNet:      ServiceCNN,
	RunnerMobileNetV2: ServiceCNN,
	RunnerYOLOv4:      ServiceCNN,
	RunnerSpeechT5:    ServiceTextToSpeech,
}

var knownServices = []string{ServiceImage, ServiceAudio, ServiceCNN, ServiceVideo, ServiceTextToSpeech}

var knownDevices = []string{DeviceN150, DeviceN300, DeviceT3K, DeviceGalaxy}

// modelInfo is one ModelNames entry: the MODEL value, its runner
// (MODEL_RUNNER_TO_MODEL_NAMES_MAP) and the SupportedModels weights, when there are any.
type modelInfo struct {
	name    string
	runner  string
	weights string
}

var knownModels = []modelInfo{
	{"stable-diffusion-xl-base-1.0", RunnerSDXL, "stabilityai/stable-diffusion-xl-base-1.0"},
	{"stable-diffusion-3.5-large", RunnerSD35, "stabilityai/stable-diffusion-3.5-large"},
	{"distil-whisper/distil-large-v3", RunnerWhisper, "distil-whisper/distil-large-v3"},
	{"openai-whisper-large-v3", RunnerWhisper, "openai/whisper-large-v3"},
	{"microsoft/resnet-50", RunnerResNet, ""},
	{"vovnet", RunnerVoVNet, ""},
	{"mobilenetv2", RunnerMobileNetV2, ""},
	{"speecht5_tts", RunnerSpeechT5, "microsoft/speecht5_tts"},
}

// DeviceIds values of the Python constants.
const (
	deviceIDs1   = "(0)"
	deviceIDs2   = "(0),(1)"
	deviceIDs4   = "(0),(1),(2),(3)"
	deviceIDsAll = "" // one worker that sees every device
)

var (
	deviceIDs16 = singleChipGroups(16)
	deviceIDs32 = singleChipGroups(32) // the DEVICE_IDS default on hardware
)

// singleChipGroups renders "(0),(1),…,(n-1)".
func singleChipGroups(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("(%d)", i)
	}
	return strings.Join(parts, ",")
}

// preset is one ModelConfigs cell. Every cell sets the mesh, IS_GALAXY and DEVICE_IDS;
// maxBatchSize 0 means the cell leaves MAX_BATCH_SIZE alone (the CNN cells).
type preset struct {
	mesh         MeshShape
	isGalaxy     bool
	deviceIDs    string
	maxBatchSize int
}

type presetKey struct{ runner, device string }

// modelConfigs is the Python ModelConfigs table (config/constants.py@a8e7d0bd8).
var modelConfigs = func() map[presetKey]preset {
	one := MeshShape{1, 1}
	m := map[presetKey]preset{
		{RunnerSDXL, DeviceN150}:      {one, false, deviceIDs1, 1},
		{RunnerSDXL, DeviceN300}:      {one, false, deviceIDs2, 1},
		{RunnerSDXL, DeviceGalaxy}:    {one, true, deviceIDs16, 1},
		{RunnerSDXL, DeviceT3K}:       {one, false, deviceIDs4, 1},
		{RunnerSD35, DeviceGalaxy}:    {MeshShape{4, 8}, false, deviceIDsAll, 1},
		{RunnerSD35, DeviceT3K}:       {MeshShape{2, 4}, false, deviceIDsAll, 1},
		{RunnerWhisper, DeviceN150}:   {one, false, deviceIDs1, 1},
		{RunnerWhisper, DeviceN300}:   {one, false, deviceIDs2, 1},
		{RunnerWhisper, DeviceGalaxy}: {one, true, deviceIDs16, 1},
		{RunnerWhisper, DeviceT3K}:    {one, false, deviceIDs4, 1},
	}
	for _, r := range []string{RunnerResNet, RunnerVoVNet, RunnerMobileNetV2} {
		m[presetKey{r, DeviceN150}] = preset{one, false, deviceIDs1, 0}
		m[presetKey{r, DeviceN300}] = preset{one, false, deviceIDs2, 0}
	}
	return m
}()

// KnownRunners lists the MODEL_RUNNER names, in the order of the Python ModelRunners enum:
// tt-sdxl-trace, tt-sd3.5, tt-whisper, tt-yolov4, tt-xla-resnet, tt-xla-vovnet,
// tt-xla-mobilenetv2, mock.
func KnownRunners() []string {
	return append([]string(nil), knownRunners...)
}

// ServiceForRunner maps a MODEL_RUNNER to the service that mounts it ("image", "audio" or
// "cnn"), as the Python MODEL_SERVICE_RUNNER_MAP. "mock" serves any of them, so it needs
// MODEL_SERVICE, and is an error here as it is in Python.
func ServiceForRunner(runner string) (string, error) {
	if svc, ok := runnerService[runner]; ok {
		return svc, nil
	}
	if runner == RunnerMock {
		return "", invalid("MODEL_SERVICE", "", "MODEL_RUNNER=mock serves no fixed service; set MODEL_SERVICE to one of %s", strings.Join(knownServices, "|"))
	}
	return "", invalid("MODEL_RUNNER", runner, "accepted: %s", strings.Join(knownRunners, ", "))
}

func lookupModel(name string) (modelInfo, bool) {
	for _, m := range knownModels {
		if m.name == name {
			return m, true
		}
	}
	return modelInfo{}, false
}

func modelNames() string {
	names := make([]string, len(knownModels))
	for i, m := range knownModels {
		names[i] = m.name
	}
	return strings.Join(names, ", ")
}

// devicesWithPreset lists, in knownDevices order, the devices that have a cell for runner.
func devicesWithPreset(runner string) []string {
	var out []string
	for _, d := range knownDevices {
		if _, ok := modelConfigs[presetKey{runner, d}]; ok {
			out = append(out, d)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
