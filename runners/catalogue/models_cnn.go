package catalogue

// MODEL_RUNNER names of HEAD's CNN runners served here.
const (
	RunnerYOLOv4      = "tt-yolov4"
	RunnerResNet      = "tt-xla-resnet"
	RunnerVoVNet      = "tt-xla-vovnet"
	RunnerMobileNetV2 = "tt-xla-mobilenetv2"
	// RunnerEfficientNet and RunnerViT are ImageNet classifiers too (HEAD's Forge runners),
	// served in mock-device mode by the ResNet-50 programs' twin.
	RunnerEfficientNet = "tt-xla-efficientnet"
	RunnerViT          = "tt-xla-vit"
)

// resnetBatch is the unscaled simulator latency of one resnet50 batch (its manifest's).
const resnetBatch = 3.404e-3

// forge is HEAD's tt-xla (Forge) CNN runner module.
const forge = "tt_model_runners.forge_runners.runners."

// cnnPresets are the cells of HEAD's Forge CNN runners: n150 and n300, MAX_BATCH_SIZE left alone.
var cnnPresets = map[string]Preset{
	DeviceN150: {one, false, deviceIDs1, 0},
	DeviceN300: {one, false, deviceIDs2, 0},
}

// cnn is a CNN model simulated by the ResNet-50 programs.
func cnn(name, canonical, class string, presets map[string]Preset) Model {
	m := Model{Name: name, Service: ServiceCNN, Canonical: canonical, Presets: presets,
		Device:   Device{L1SmallSize: 32768, TraceRegionSize: 1_470_464, CommandQueues: 2},
		Sim:      Simulation{Programs: []string{"resnet50"}, Traced: "resnet50", UnitSeconds: resnetBatch},
		Programs: []Program{{Name: "resnet50"}}, PythonClass: class}
	if presets != nil {
		m.ModelNames = []ModelName{{Name: canonical}}
	}
	return m
}

var cnnModels = []Model{
	cnn(RunnerYOLOv4, "yolov4", "tt_model_runners.yolov4_runner.TTYolov4Runner", nil),
	func() Model {
		m := cnn(RunnerResNet, "microsoft/resnet-50", forge+"ForgeResnetRunner", cnnPresets)
		m.Default, m.GoPipeline = true, true
		return m
	}(),
	cnn(RunnerVoVNet, "vovnet", forge+"ForgeVovnetRunner", cnnPresets),
	cnn(RunnerMobileNetV2, "mobilenetv2", forge+"ForgeMobilenetv2Runner", cnnPresets),
	cnn(RunnerEfficientNet, "efficientnet", forge+"ForgeEfficientnetRunner", cnnPresets),
	cnn(RunnerViT, "vit", forge+"ForgeVitRunner", cnnPresets),
}
