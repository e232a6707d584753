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
	// RunnerSegFormer is HEAD's ForgeSegformerRunner, whose loader (tt-forge-models at HEAD's
	// FORGE_MODELS_SHA) is SegformerForImageClassification (nvidia/mit-b0): an ImageNet
	// classifier answering labels, not masks.
	RunnerSegFormer = "tt-xla-segformer"
	// RunnerUNet is HEAD's ForgeUnetRunner (U-Net, Cityscapes' 19 classes): a mask.
	RunnerUNet = "tt-xla-unet"
	// RunnerYOLOXNano is HEAD's ForgeYoloxNanoRunner: COCO detections as labels with boxes.
	RunnerYOLOXNano = "tt-xla-yolox-nano"
)

// resnetBatch is the unscaled simulator latency of one resnet50 batch (its manifest's).
const resnetBatch = 3.404e-3

// forge is HEAD's tt-xla (Forge) CNN runner module.
const forge = "tt_model_runners.forge_runners.runners."

// cnnPresets are the cells of HEAD's Forge CNN runners: n150 and n300, MAX_BATCH_SIZE left
// alone; HEAD's last word on them (its loop over the Forge runners in config/constants.py)
// gives both one chip, DEVICE_IDS "(0)".
var cnnPresets = map[string]Preset{
	DeviceN150: {one, false, deviceIDs1, 0, 0},
	DeviceN300: {one, false, deviceIDs1, 0, 0},
}

// cnn is a CNN model simulated by the ResNet-50 programs.
func cnn(name, canonical, class string, presets map[string]Preset) Model {
	m := Model{Name: name, Service: ServiceCNN, Canonical: canonical, Presets: presets,
		Device:   DeviceOptions{L1SmallSize: 32768, TraceRegionSize: 1_470_464, CommandQueues: 2},
		Sim:      Simulation{Programs: []string{"resnet50"}, Traced: "resnet50", UnitSeconds: resnetBatch},
		Programs: []Program{{Name: "resnet50"}}, PythonClass: class}
	if presets != nil {
		m.ModelNames = []ModelName{{Name: canonical}}
	}
	return m
}

// withOutput sets a CNN model's answer.
func withOutput(m Model, out CNNOutput) Model {
	m.CNN.Output = out
	return m
}

var cnnModels = []Model{
	withOutput(cnn(RunnerYOLOv4, "yolov4", "tt_model_runners.yolov4_runner.TTYolov4Runner", nil), OutputBoxes),
	func() Model {
		m := cnn(RunnerResNet, "microsoft/resnet-50", forge+"ForgeResnetRunner", cnnPresets)
		m.Default, m.GoPipeline = true, true
		return m
	}(),
	cnn(RunnerVoVNet, "vovnet", forge+"ForgeVovnetRunner", cnnPresets),
	cnn(RunnerMobileNetV2, "mobilenetv2", forge+"ForgeMobilenetv2Runner", cnnPresets),
	cnn(RunnerEfficientNet, "efficientnet", forge+"ForgeEfficientnetRunner", cnnPresets),
	cnn(RunnerViT, "vit", forge+"ForgeVitRunner", cnnPresets),
	cnn(RunnerSegFormer, "segformer", forge+"ForgeSegformerRunner", cnnPresets),
	withOutput(cnn(RunnerUNet, "unet", forge+"ForgeUnetRunner", cnnPresets), OutputMask),
	func() Model {
		// HEAD's YOLOX-Nano cells: n150 (and p150, a device this server does not preset).
		m := withOutput(cnn(RunnerYOLOXNano, "yolox_nano", forge+"ForgeYoloxNanoRunner",
			map[string]Preset{DeviceN150: {one, false, deviceIDs1, 0, 0}}), OutputLabelBoxes)
		m.ModelNames = []ModelName{{"yolox_nano", "Megvii-BaseDetection/YOLOX-Nano"}}
		return m
	}(),
}
