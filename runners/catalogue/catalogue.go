// Package catalogue is the one place a model's facts live: for every MODEL_RUNNER, the service
// it serves, the model names it answers to (MODEL, /v1/models, OpenAI `model`), the routes it
// serves, its request policy, its device options and MODEL x DEVICE presets, its device-program
// contract, how the simulator keeps its time, the Python class of Tenstorrent's server (HEAD's
// runner_fabric) that hosts it on DEVICE_BACKEND=python and whether the Go road has a real host
// pipeline for it. The entries are in the models_*.go files, one per service.
//
// It is a leaf package (it imports nothing of this module) because both config and runners
// derive from it and runners imports config: config validates MODEL_RUNNER and MODEL and applies
// the presets, runners builds the models, and neither can hold the facts without the other
// importing it. Everything else (config, runners, the registry, server) looks facts up here.
package catalogue

import (
	"slices"
	"sync"
	"time"
)

// Service is the API family a runner serves; exactly one pool per service per process.
type Service string

// The API families of the Python server (HEAD's ModelServices) served here.
const (
	ServiceImage Service = "image"
	ServiceAudio Service = "audio"
	ServiceCNN   Service = "cnn"
	ServiceVideo Service = "video"
	// ServiceTextToSpeech is HEAD's text_to_speech service (SpeechT5).
	ServiceTextToSpeech Service = "text_to_speech"
)

// Services lists the services, in HEAD's order of MODEL_SERVICE's accepted values.
func Services() []Service {
	return []Service{ServiceImage, ServiceAudio, ServiceCNN, ServiceVideo, ServiceTextToSpeech}
}

// RunnerMock serves the API family named by MODEL_SERVICE with the simulated runner of that
// service's default model (Model.Default).
const RunnerMock = "mock"

// Device types (DEVICE), as HEAD's DeviceTypes enum, in its order.
const (
	DeviceN150   = "n150"
	DeviceN300   = "n300"
	DeviceT3K    = "t3k"
	DeviceGalaxy = "galaxy"
)

// Devices lists the DEVICE values that select a preset.
func Devices() []string { return []string{DeviceN150, DeviceN300, DeviceT3K, DeviceGalaxy} }

// Model is everything the server knows about one MODEL_RUNNER.
type Model struct {
	// Name is the MODEL_RUNNER (HEAD's ModelRunners value).
	Name    string
	Service Service
	// Default: MODEL_RUNNER=mock with this MODEL_SERVICE runs this model's simulated runner.
	Default bool
	// Canonical is the model id /v1/models lists for the runner when MODEL is not set.
	Canonical string
	// ModelNames are the MODEL values that select this runner (HEAD's ModelNames by
	// MODEL_RUNNER_TO_MODEL_NAMES_MAP), with the weights each loads.
	ModelNames []ModelName
	// Routes are the /v1 routes the model serves beyond its service's (image input routes).
	Routes []Route
	// Image is the request policy of an image model; CNN that of a CNN model.
	Image ImagePolicy
	CNN   CNNPolicy
	// Video is a video model's request policy and output (nil for other services).
	Video *VideoSpec
	// Device is how the model opens its device; Presets are its HEAD ModelConfigs cells.
	Device  DeviceOptions
	Presets map[string]Preset
	// Programs is the model's device-program contract, by name (runners/programs declares each).
	Programs []Program
	// Sim is how the simulated device keeps the model's time.
	Sim Simulation
	// PythonClass is the class HEAD's runner_fabric builds for this MODEL_RUNNER (module and
	// class): what DEVICE_BACKEND=python hosts.
	PythonClass string
	// GoPipeline: the Go road has the model's real host pipeline (else it serves the
	// simulated twin on the simulator and needs DEVICE_BACKEND=python on hardware).
	GoPipeline bool
}

// ModelName is one MODEL value and the weights (HEAD's SupportedModels) it loads; "" = the
// runner's own.
type ModelName struct {
	Name    string
	Weights string
}

// Route is one route a model serves: its /v1 path and the legacy twin of the Python dialect.
type Route struct {
	V1, Legacy string
}

// ImageInput is what an image model takes besides the prompt.
type ImageInput int

// The image inputs: none (text-to-image), an image to transform, an image and a mask to inpaint.
const (
	InputNone ImageInput = iota
	InputTransform
	InputInpaint
)

// ImagePolicy is how an image model's requests are checked and defaulted (HEAD's
// ImageGenerateRequest validators and the model's runner).
type ImagePolicy struct {
	// MinSteps is HEAD's num_inference_steps floor for the runner (12; Flux 4; z-image-turbo
	// none beyond the schema's 4).
	MinSteps int
	// Guidance is the default guidance_scale: what a request without one gets.
	Guidance float64
	// Size is the fixed output side in pixels; 0 follows SDXL_IMAGE_RESOLUTION.
	Size int
	// Input is what the model takes besides the prompt.
	Input ImageInput
	// FlowMatch: the scheduler is flow matching, which appends the final sigma itself, so N
	// custom sigmas run N steps (Euler: N+1 sigmas are N steps).
	FlowMatch bool
	// LoRA: the model fuses lora_path adapters.
	LoRA bool
	// Unused are request fields the Go road has no use for: a value other than the default is
	// a 400 naming it.
	Unused []Field
	// PythonUnused are the fields HEAD's Python class for the runner does not read: refused on
	// DEVICE_BACKEND=python. PythonGuidance is the guidance HEAD's class always uses (0: the
	// request's).
	PythonUnused   []string
	PythonGuidance float64
}

// CNNOutput is what a CNN model answers.
type CNNOutput int

// The CNN outputs, each written as HEAD's runner for the model formats it (docs/API.md):
const (
	// OutputLabels: ranked class labels, HEAD's ForgeRunner ImageClassificationResult
	// {top1_class_label, top1_class_probability, output{labels, probabilities, indices}}.
	OutputLabels CNNOutput = iota
	// OutputMask: a per-pixel class mask (UNet), in the same envelope with output.mask and
	// output.mask_shape; HEAD's ForgeUnetRunner has no answer of its own (its loader's
	// output_postprocess takes no top_k, so every request fails there).
	OutputMask
	// OutputBoxes: YOLOv4's detections, HEAD's TTYolov4Runner._format_detections: a list of
	// {bbox{x1,y1,x2,y2} (fractions of the image), confidence, class_id, class_name}.
	OutputBoxes
	// OutputLabelBoxes: a Forge detector's (YOLOX) ImageClassificationResult, whose output
	// also carries boxes ([x1,y1,x2,y2] in pixels of the original image) and numeric scores.
	OutputLabelBoxes
)

// CNNPolicy is a CNN model's input size and answer.
type CNNPolicy struct {
	Output CNNOutput
}

// DeviceOptions holds a model's device open options (tt-metal model demos and HEAD's runners),
// apart from the mesh, which comes from the settings or a preset. It is not a device (that is
// ttnn.Device): only how one is opened for this model.
type DeviceOptions struct {
	L1SmallSize uint64
	// TraceRegionSize is the model's own trace region; TRACE_REGION_SIZE replaces it when set.
	TraceRegionSize uint64
	CommandQueues   int
	// Fabric1D: the model opens a multi-chip mesh with FABRIC_1D.
	Fabric1D bool
}

// Preset is one HEAD ModelConfigs cell (MODEL x DEVICE): every cell sets the mesh, IS_GALAXY
// and DEVICE_IDS; MaxBatchSize 0 leaves MAX_BATCH_SIZE alone.
type Preset struct {
	Mesh         [2]int
	IsGalaxy     bool
	DeviceIDs    string
	MaxBatchSize int
	// RequestTimeout is the cell's request_processing_timeout_seconds: how long HEAD's service
	// waits for a worker's result (BaseService.process); 0 leaves the deadline alone. Config
	// makes it the pool's deadline unless one is set explicitly (HEAD: the environment wins).
	RequestTimeout time.Duration
}

// Program is one device program of a model's contract; runners/programs holds its declaration.
type Program struct {
	Name string
	// SimOnly: only the simulator loads it (the SDXL LoRA fuse stand-in); the metal backend
	// needs no .ttnn of it (docs/DEVICE-PROGRAMS.md).
	SimOnly bool
}

// Simulation is how simulated device time maps onto the MOCK_* latency settings: the
// simulator runs each program with its manifest's own latency, scaled so that one unit of
// work (a denoising step, a second of audio, an image) takes the MOCK_* setting.
type Simulation struct {
	// Programs are the simulated twin's programs, loaded and run once at warm-up; Traced, one
	// of them, is captured in a trace and replayed after.
	Programs []string
	Traced   string
	// UnitSeconds is the twin's programs' own device time per unit of work.
	UnitSeconds float64
	// PipelineUnitSeconds is the real host pipeline's programs' own device time per unit of
	// work (0: the same as UnitSeconds).
	PipelineUnitSeconds float64
}

// PipelineUnit is the real pipeline's programs' own time per unit of work.
func (s Simulation) PipelineUnit() float64 {
	if s.PipelineUnitSeconds > 0 {
		return s.PipelineUnitSeconds
	}
	return s.UnitSeconds
}

var (
	mu    sync.RWMutex
	extra []Model // models added with Add (tests' made-up models)
)

// Models lists the catalogue: HEAD's ModelRunners order, then any added model.
func Models() []Model {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Concat(entries, extra)
}

// Lookup returns the model of a MODEL_RUNNER name; ok is false for "mock" and unknown names.
func Lookup(name string) (Model, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, list := range [][]Model{entries, extra} {
		if i := slices.IndexFunc(list, func(m Model) bool { return m.Name == name }); i >= 0 {
			return list[i], true
		}
	}
	return Model{}, false
}

// Resolve is Lookup with "mock" resolved to the default model of svc.
func Resolve(name string, svc Service) (Model, bool) {
	if name == RunnerMock {
		return DefaultFor(svc)
	}
	return Lookup(name)
}

// DefaultFor returns the model MODEL_RUNNER=mock runs for svc.
func DefaultFor(svc Service) (Model, bool) {
	for _, m := range Models() {
		if m.Default && m.Service == svc {
			return m, true
		}
	}
	return Model{}, false
}

// Add puts a model in the catalogue until the returned func removes it: a made-up model of a
// test is served end to end from one entry and its family's factory. A name already catalogued
// is a programming error and panics.
func Add(m Model) (remove func()) {
	if _, ok := Lookup(m.Name); ok || m.Name == RunnerMock {
		panic("catalogue: " + m.Name + " is already catalogued")
	}
	mu.Lock()
	extra = append(extra, m)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		extra = slices.DeleteFunc(extra, func(e Model) bool { return e.Name == m.Name })
	}
}

// ModelByName returns the runner a MODEL value selects, and that name's entry.
func ModelByName(name string) (Model, ModelName, bool) {
	for _, m := range Models() {
		for _, n := range m.ModelNames {
			if n.Name == name {
				return m, n, true
			}
		}
	}
	return Model{}, ModelName{}, false
}
