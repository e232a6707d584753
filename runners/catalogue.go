package runners

import (
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// MODEL_RUNNER names of the Python server.
const (
	RunnerSDXL = "tt-sdxl-trace"
	// RunnerSDXLImg2Img is SDXL image-to-image (HEAD's /v1/images/image-to-image).
	RunnerSDXLImg2Img = "tt-sdxl-image-to-image"
	// RunnerSDXLEdit is SDXL inpainting (HEAD's /v1/images/edits) with the inpainting UNet.
	RunnerSDXLEdit    = "tt-sdxl-edit"
	RunnerSD35        = "tt-sd3.5"
	RunnerWhisper     = "tt-whisper"
	RunnerResNet      = "tt-xla-resnet"
	RunnerVoVNet      = "tt-xla-vovnet"
	RunnerMobileNetV2 = "tt-xla-mobilenetv2"
	RunnerYOLOv4      = "tt-yolov4"
	// Video models (HEAD's ModelRunners; MODEL_SERVICE=video).
	RunnerWan22             = "tt-wan2.2"
	RunnerWan22T2VProdia    = "tt-wan2.2-t2v-prodia"
	RunnerWan22I2V          = "tt-wan2.2-i2v"
	RunnerWan22I2VProdia    = "tt-wan2.2-i2v-prodia"
	RunnerWan22I2VAniSora   = "tt-wan2.2-i2v-anisora"
	RunnerWan22I2VDistill   = "tt-wan2.2-i2v-distill"
	RunnerWan22I2VLoRA      = "tt-wan2.2-i2v-lora"
	RunnerWan22I2VLightning = "tt-wan2.2-i2v-lightning"
	RunnerMochi1            = "tt-mochi-1"
	RunnerLTX23Distilled    = "tt-ltx-2.3-distilled"
	RunnerMiniMaxH3T2VA     = "tt-minimax-h3-t2va"
	// RunnerSpeechT5 is text-to-speech (microsoft/speecht5_tts with the speecht5_hifigan vocoder).
	RunnerSpeechT5 = "tt-speecht5-tts"
	// RunnerMock serves the API family named by MODEL_SERVICE (SDXL, Whisper or ResNet-50) with
	// that family's simulated runner.
	RunnerMock = "mock"
)

// Model is everything the server knows about one MODEL_RUNNER: the catalogue below is the
// only place these facts live. The factories are attached by the model's family (Register).
type Model struct {
	Name    string
	Service Service
	// Device is how the model's Python runner opens its device.
	Device Device
	// Sim is how the simulated device keeps the model's time.
	Sim Simulation
	// Guidance is an image model's default guidance_scale: what a request that does not set
	// one gets (0 for models without guidance; see DefaultGuidance).
	Guidance float64
	// Video is a video model's request policy and output (nil for other services).
	Video *VideoSpec
	// Programs is the model's device-program contract: the programs it loads, by name
	// (ttnn/programs/<name>.ttbsim on the simulator). Their tensor signatures, which both
	// backends check a loaded program against, belong here too.
	Programs []Program
}

// Device holds a model's device open options (tt-metal model demos and the Python server's
// runners; ttnn-notes §2.4), apart from the mesh, which comes from the settings.
type Device struct {
	L1SmallSize uint64
	// TraceRegionSize is the model's own trace region; TRACE_REGION_SIZE replaces it when set.
	TraceRegionSize uint64
	CommandQueues   int
	// Fabric1D: the model opens a multi-chip mesh with FABRIC_1D.
	Fabric1D bool
}

// Program is one device program of a model's contract. Its declaration — mesh, batch, every
// function's tensors — is in runners/programs (Contract).
type Program struct {
	Name string
	// SimOnly: only the simulator loads it (the SDXL LoRA fuse stand-in); the metal backend
	// needs no .ttnn of it (docs/DEVICE-PROGRAMS.md).
	SimOnly bool
}

// Contract returns the program's declaration (runners/programs), which both backends check a
// loaded program against.
func (p Program) Contract() (ttnn.ProgramSpec, bool) { return programs.Lookup(p.Name) }

// Simulation is how simulated device time maps onto the MOCK_* latency settings: the
// simulator runs each program with its manifest's own latency, scaled so that one unit of
// work (a denoising step, a second of audio, an image) takes the MOCK_* setting.
type Simulation struct {
	// Programs are the simulated fallback's programs, loaded and run once at warm-up;
	// Traced, one of them, is captured in a trace and replayed after.
	Programs []string
	Traced   string
	// UnitSeconds is the fallback programs' own device time per unit of work.
	UnitSeconds float64
	// PipelineUnitSeconds is the real host pipeline's programs' own device time per unit of
	// work (0: the same as UnitSeconds).
	PipelineUnitSeconds float64
}

// Unscaled simulator latencies of the programs (the ttnn/programs manifests').
const (
	sdxlUNetStep      = 190.3e-3 // s per sdxl-unet step
	sd35DenoiserStep  = 625e-3   // s per SD3.5 denoiser step (the pipeline's manifest)
	whisperEncoder    = 153.5e-3 // s per whisper-encoder window
	whisperDecoder    = 9.524e-3 // s per whisper-decoder-step
	whisperWindow     = 30.0     // s of audio per encoder window
	tokensPerAudioSec = 3.0      // decoder steps per second of audio (speech is ~2-3 tokens/s)
	resnetBatch       = 3.404e-3 // s per resnet50 batch
	speecht5Step      = 6.5e-3   // s per speecht5-decoder-step + speecht5-postnet (one 32 ms step of speech)
)

// sdxlPrograms are the SDXL pipeline's programs with the given UNet (and the VAE encoder of
// image-to-image and inpainting).
func sdxlPrograms(unet string, vaeEncoder bool) []Program {
	ps := []Program{{Name: "sdxl-text-encoder"}, {Name: "sdxl-text-encoder-2"}, {Name: unet}, {Name: "sdxl-vae"}}
	if vaeEncoder {
		ps = append(ps, Program{Name: "sdxl-vae-encoder"})
	}
	return append(ps, Program{Name: "sdxl-lora-fuse", SimOnly: true})
}

var (
	imageSim = Simulation{Programs: []string{"sdxl-unet", "sdxl-vae"}, Traced: "sdxl-unet", UnitSeconds: sdxlUNetStep}
	cnnModel = func(name string) Model {
		return Model{Name: name, Service: ServiceCNN,
			Device:   Device{L1SmallSize: 32768, TraceRegionSize: 1_470_464, CommandQueues: 2},
			Sim:      Simulation{Programs: []string{"resnet50"}, Traced: "resnet50", UnitSeconds: resnetBatch},
			Programs: []Program{{Name: "resnet50"}}}
	}
)

// catalogue lists every MODEL_RUNNER of the Python server.
var catalogue = []Model{
	{Name: RunnerSDXL, Service: ServiceImage,
		Device: Device{L1SmallSize: 32768, TraceRegionSize: config.DefaultTraceRegionSize, CommandQueues: 1},
		Sim:    imageSim, Guidance: sdxlGuidance, Programs: sdxlPrograms("sdxl-unet", false)},
	{Name: RunnerSDXLImg2Img, Service: ServiceImage,
		Device: Device{L1SmallSize: 32768, TraceRegionSize: config.DefaultTraceRegionSize, CommandQueues: 1},
		Sim:    imageSim, Guidance: sdxlGuidance, Programs: sdxlPrograms("sdxl-unet", true)},
	{Name: RunnerSDXLEdit, Service: ServiceImage,
		Device: Device{L1SmallSize: 32768, TraceRegionSize: config.DefaultTraceRegionSize, CommandQueues: 1},
		Sim:    imageSim, Guidance: sdxlGuidance, Programs: sdxlPrograms("sdxl-inpaint-unet", true)},
	{Name: RunnerSD35, Service: ServiceImage,
		Device: Device{L1SmallSize: 32768, TraceRegionSize: 25_000_000, CommandQueues: 1, Fabric1D: true}, Guidance: sd35Guidance,
		Sim: Simulation{Programs: imageSim.Programs, Traced: imageSim.Traced, UnitSeconds: sdxlUNetStep,
			PipelineUnitSeconds: sd35DenoiserStep},
		Programs: []Program{{Name: "sd35-text-encoder"}, {Name: "sd35-text-encoder-2"}, {Name: "sd35-text-encoder-3"},
			{Name: "sd35-transformer"}, {Name: "sd35-vae"}}},
	{Name: RunnerWhisper, Service: ServiceAudio,
		Device: Device{L1SmallSize: 1024, TraceRegionSize: 100_000_000, CommandQueues: 2},
		Sim: Simulation{Programs: []string{"whisper-encoder", "whisper-decoder-step"}, Traced: "whisper-decoder-step",
			UnitSeconds: whisperEncoder/whisperWindow + tokensPerAudioSec*whisperDecoder},
		Programs: []Program{{Name: "whisper-encoder"}, {Name: "whisper-decoder-step"}}},
	cnnModel(RunnerResNet),
	cnnModel(RunnerVoVNet),
	cnnModel(RunnerMobileNetV2),
	cnnModel(RunnerYOLOv4),
	videoModel(RunnerWan22, wanSpec(false, 0)),
	videoModel(RunnerWan22T2VProdia, wanSpec(false, 0)),
	videoModel(RunnerWan22I2V, wanSpec(true, 0)),
	videoModel(RunnerWan22I2VProdia, wanSpec(true, 0)),
	videoModel(RunnerWan22I2VAniSora, wanSpec(true, 8)),
	videoModel(RunnerWan22I2VDistill, wanSpec(true, 4)),
	videoModel(RunnerWan22I2VLoRA, wanSpec(true, 0)),
	videoModel(RunnerWan22I2VLightning, wanSpec(true, 4)),
	// Mochi: MochiPipelineConfig's 168 frames at 480x848 (HEAD dit_runners.py), 16 fps.
	videoModel(RunnerMochi1, &VideoSpec{FPS: 16, Frames: 168, Width: 848, Height: 480}),
	// LTX-2.3 distilled: 145 frames of 1920x1088 at 24 fps (HEAD's LTX_* constants).
	videoModel(RunnerLTX23Distilled, &VideoSpec{FPS: 24, Frames: 145, Width: 1920, Height: 1088}),
	// MiniMax-H3 t2va: 768P at six aspect ratios, 4-15 s, 24 fps, always 50 steps
	// (HEAD's tt_model_runners/minimax_h3_policy.py).
	videoModel(RunnerMiniMaxH3T2VA, &VideoSpec{FPS: 24, ShortSide: 768, ForcedSteps: 50,
		AspectRatios:  [][2]int{{21, 9}, {16, 9}, {4, 3}, {1, 1}, {3, 4}, {9, 16}},
		DefaultAspect: [2]int{16, 9}, Durations: []int{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, DefaultDuration: 5}),
	// SpeechT5 (HEAD's tt-speecht5-tts): an encoder per padded length, the traced decoder step,
	// the postnet and the HiFi-GAN vocoder; HEAD's device options (l1_small_size 150000, a 50 MB
	// trace region).
	{Name: RunnerSpeechT5, Service: ServiceTextToSpeech,
		Device:   Device{L1SmallSize: 150_000, TraceRegionSize: 50_000_000, CommandQueues: 1},
		Sim:      Simulation{Programs: speecht5Programs(), Traced: "speecht5-decoder-step", UnitSeconds: speecht5Step},
		Programs: programList(speecht5Programs())},
}

// wanSpec is Wan2.2's output (81 frames at 16 fps; 832x480, 1280x720 on a Galaxy-class mesh:
// HEAD's WAN22_*), image-conditioned or not, with the model's forced step count.
func wanSpec(i2v bool, forced int) *VideoSpec {
	return &VideoSpec{I2V: i2v, ForcedSteps: forced, FPS: 16, Frames: 81, Width: 832, Height: 480,
		LargeWidth: 1280, LargeHeight: 720}
}

// videoModel is a video model: one denoising step is the unit of MOCK_STEP_SECONDS; its time
// is Go sleeps (no simulator manifests for the video programs yet).
func videoModel(name string, v *VideoSpec) Model {
	return Model{Name: name, Service: ServiceVideo, Video: v,
		Device: Device{L1SmallSize: 32768, TraceRegionSize: config.DefaultTraceRegionSize, CommandQueues: 1, Fabric1D: true}}
}

// speecht5Programs are SpeechT5's device programs: the encoder of each padded length (HEAD's
// WARMUP_ENCODER_SIZES), the decoder step, the postnet and the vocoder.
func speecht5Programs() []string {
	ps := []string{}
	for _, n := range []string{"32", "64", "128", "160", "192", "256"} {
		ps = append(ps, "speecht5-encoder-"+n)
	}
	return append(ps, "speecht5-decoder-step", "speecht5-postnet", "speecht5-vocoder")
}

func programList(names []string) []Program {
	out := make([]Program, len(names))
	for i, n := range names {
		out[i] = Program{Name: n}
	}
	return out
}

// Default guidance scales: HEAD's ImageGenerateRequest default (5.0, SDXL's), and the TT
// SD3.5 pipeline's 3.5 (HEAD's SD3.5 runner always uses it).
const (
	sdxlGuidance = 5.0
	sd35Guidance = 3.5
)

// DefaultGuidance is the guidance_scale an image request without one gets on runner: the
// model's Guidance; HEAD's 5.0 for a runner the catalogue does not know ("mock" runs SDXL).
func DefaultGuidance(runner string) float64 {
	if m, ok := Lookup(runner, nil); ok && m.Guidance > 0 {
		return m.Guidance
	}
	return sdxlGuidance
}

// serviceDefault is the model MODEL_RUNNER=mock runs for each service.
var serviceDefault = map[Service]string{ServiceImage: RunnerSDXL, ServiceAudio: RunnerWhisper, ServiceCNN: RunnerResNet,
	ServiceVideo: RunnerWan22, ServiceTextToSpeech: RunnerSpeechT5}

// Models lists the catalogue, in the order above.
func Models() []Model { return append([]Model(nil), catalogue...) }

// Lookup returns the catalogued model of a MODEL_RUNNER name; "mock" is the default model of
// the settings' MODEL_SERVICE (SDXL, Whisper, ResNet-50). ok is false for any other name.
func Lookup(name string, s *config.Settings) (Model, bool) {
	if name == RunnerMock {
		if s == nil {
			return Model{}, false
		}
		def, ok := serviceDefault[Service(strings.ToLower(s.ModelService))]
		if !ok {
			return Model{}, false
		}
		name = def
	}
	for _, m := range catalogue {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// TraceRegion is the trace region the model opens its device with: TRACE_REGION_SIZE when it
// was set (to a positive size), else the model's own.
func (m Model) TraceRegion(s *config.Settings) uint64 {
	if s != nil && s.TraceRegionSizeSet && s.TraceRegionSize > 0 {
		return uint64(s.TraceRegionSize)
	}
	return m.Device.TraceRegionSize
}

// MockLatency is the MOCK_* setting of one unit of the model's work: MOCK_STEP_SECONDS per
// denoising step, MOCK_AUDIO_SECONDS_PER_SECOND per second of audio, MOCK_CNN_SECONDS per image.
func (m Model) MockLatency(s *config.Settings) time.Duration {
	if s == nil {
		return 0
	}
	switch m.Service {
	case ServiceImage:
		return s.MockStepLatency
	case ServiceAudio:
		return s.MockAudioLatency
	case ServiceCNN:
		return s.MockImageLatency
	case ServiceVideo:
		return s.MockStepLatency
	case ServiceTextToSpeech:
		return s.MockSpeechStep
	}
	return 0
}

// PipelineUnit is the real pipeline's programs' own time per unit of work.
func (s Simulation) PipelineUnit() float64 {
	if s.PipelineUnitSeconds > 0 {
		return s.PipelineUnitSeconds
	}
	return s.UnitSeconds
}
