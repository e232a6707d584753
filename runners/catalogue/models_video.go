package catalogue

import (
	"fmt"
	"time"
)

// MODEL_RUNNER names of HEAD's video runners (MODEL_SERVICE=video).
const (
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
)

// Wan22GuidedStep and Wan22GuidedStepGalaxy are the simulated device time (seconds) of one
// guided Wan2.2 T2V denoising step (two expert runs): on a (2,4) mesh at 832x480, 800 s for 40
// steps, and on a Wormhole (4,8) Galaxy at 1280x720, 440 s for 40 steps, in tt-metal's
// models/tt_dit/tests/models/wan2_2/test_performance_wan.py (t2v_metrics). The wan22-t2v-*
// manifests carry the same figures per program run.
const (
	Wan22GuidedStep       = 20.0
	Wan22GuidedStepGalaxy = 11.0
)

// WanSampling is how HEAD's device code (tt-metal's WanPipeline, which HEAD's TTWan22Runner and
// TTWan22I2VRunner build; models/tt_dit/pipelines/wan/pipeline_wan.py) samples a Wan2.2 A14B
// model; runners/wan/t2v and runners/wan/i2v build their configurations from it.
type WanSampling struct {
	// FlowShift is the UniPC flow_shift WanPipeline.__init__ loads the scheduler with
	// (UniPCMultistepScheduler.from_pretrained(..., flow_shift=12.0)), replacing the
	// checkpoint's scheduler_config.json value.
	FlowShift float64
	// BoundaryRatio is WanPipelineConfig.default's boundary_ratio: the high-noise expert for
	// timesteps >= BoundaryRatio*1000.
	BoundaryRatio float64
	// Guidance and Guidance2 are the high- and low-noise experts' guidance scales HEAD's
	// _wan22_pipeline_args passes (dit_runners.py guidance_scale, guidance_scale_2).
	Guidance, Guidance2 float64
	// TwoStepLowNoise: a 2-step run's second step runs the low-noise expert whatever its
	// timestep (WanPipeline.__call__'s warmup_t2 = i == 1 and len(timesteps) == 2).
	TwoStepLowNoise bool
	// DefaultNegativePrompt is encoded when a request has no negative prompt:
	// WanPipeline.DEFAULT_NEGATIVE_PROMPT (Wan's own sample_neg_prompt), since HEAD passes
	// negative_prompts only when the request's negative_prompt is non-empty.
	DefaultNegativePrompt string
}

// Wan22Sampling is HEAD's sampling of Wan2.2-T2V-A14B and Wan2.2-I2V-A14B alike: WanPipelineI2V
// inherits WanPipeline's scheduler and WanPipelineConfig.default, and HEAD's I2V runner
// overrides neither.
var Wan22Sampling = WanSampling{
	FlowShift:       12.0,
	BoundaryRatio:   0.875,
	Guidance:        4.0,
	Guidance2:       3.0,
	TwoStepLowNoise: true,
	DefaultNegativePrompt: "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，" +
		"JPEG压缩残留，丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，手指融合，" +
		"静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走",
}

// dit is HEAD's tt-dit runner module.
const dit = "tt_model_runners.dit_runners."

var videoModels = []Model{
	// Mochi: MochiPipelineConfig's 168 frames at 480x848 (HEAD dit_runners.py), 16 fps.
	// HEAD's Mochi Galaxy cell sets no request_processing_timeout_seconds (its T3K one does).
	func() Model {
		m := withPresets(videoModel(RunnerMochi1, "mochi-1-preview", "TTMochi1Runner", &VideoSpec{FPS: 16, Frames: 168, Width: 848, Height: 480}),
			"genmo/mochi-1-preview", DeviceT3K, DeviceGalaxy)
		m.Presets = headTimeouts(m.Presets, map[string]int{DeviceGalaxy: 0})
		return m
	}(),
	func() Model {
		m := withPresets(videoModel(RunnerWan22, "Wan2.2-T2V-A14B-Diffusers", "TTWan22Runner", wanSpec(false, 0)),
			wanT2V, DeviceN150, DeviceT3K, DeviceGalaxy)
		m.Default = true
		// The Go road's host pipeline (runners/wan/t2v) on the simulator: a guided step is two
		// expert runs of the wan22-t2v-transformer manifests' 10 s (TT's T3K figure at 832x480).
		m.Sim.PipelineUnitSeconds = Wan22GuidedStep
		m.GoPipeline = true // the road table says so (TestRoadTableMatchesCatalogue)
		return m
	}(),
	withPresets(videoModel(RunnerWan22T2VProdia, "Wan2.2-T2V-A14B-Prodia", "TTWan22T2VProdiaRunner", wanSpec(false, 0)), wanT2V, DeviceGalaxy),
	func() Model {
		m := withPresets(videoModel(RunnerWan22I2V, "Wan2.2-I2V-A14B-Diffusers", "TTWan22I2VRunner", wanSpec(true, 0)), wanI2V, DeviceT3K, DeviceGalaxy)
		// The Go road's host pipeline (runners/wan/i2v) on the simulator: the wan22-i2v
		// manifests carry T2V's figures (tt-metal times I2V with them), so a guided step is the
		// same two expert runs.
		m.Sim.PipelineUnitSeconds = Wan22GuidedStep
		m.GoPipeline = true
		return m
	}(),
	withPresets(videoModel(RunnerWan22I2VProdia, "Wan2.2-I2V-A14B-Prodia", "TTWan22I2VProdiaRunner", wanSpec(true, 0)), wanI2V, DeviceGalaxy),
	withPresets(videoModel(RunnerWan22I2VAniSora, "Wan2.2-I2V-AniSora-V3.2", "TTWan22I2VAniSoraRunner", wanSpec(true, 8)), wanI2V),
	withPresets(videoModel(RunnerWan22I2VDistill, "Wan2.2-I2V-Distill-LightX2V", "TTWan22I2VDistillRunner", wanSpec(true, 4)), wanI2V),
	withPresets(videoModel(RunnerWan22I2VLoRA, "Wan2.2-I2V-LoRA", "TTWan22I2VLoRARunner", wanSpec(true, 0)), wanI2V),
	withPresets(videoModel(RunnerWan22I2VLightning, "Wan2.2-I2V-Lightning", "TTWan22I2VLightningRunner", wanSpec(true, 4)), wanI2V),
	// LTX-2.3 distilled: 145 frames of 1920x1088 at 24 fps (HEAD's LTX_* constants).
	// Both text-to-audio-video runners return a soundtrack beside the frames (HEAD's
	// VideoAudioResult), muxed as AAC.
	func() Model {
		m := withPresets(videoModel(RunnerLTX23Distilled, "LTX-2.3-distilled", "TTLTX23DistilledRunner", &VideoSpec{FPS: 24, Frames: 145, Width: 1920, Height: 1088,
			Audio: &AudioTrack{SampleRate: 48000, Channels: 2}}), "Lightricks/LTX-2.3:ltx-2.3-22b-distilled-1.1.safetensors", DeviceGalaxy)
		m.Presets = headTimeouts(m.Presets, map[string]int{DeviceGalaxy: 7200}) // HEAD's LTX cell: 2 h
		return m
	}(),
	// MiniMax-H3 t2va: 768P at six aspect ratios, 4-15 s, 24 fps, always 50 steps
	// (HEAD's tt_model_runners/minimax_h3_policy.py).
	withPresets(videoModel(RunnerMiniMaxH3T2VA, "MiniMax-H3", "TTMiniMaxH3Runner", &VideoSpec{FPS: 24, ShortSide: 768, ForcedSteps: 50,
		AspectRatios:  [][2]int{{21, 9}, {16, 9}, {4, 3}, {1, 1}, {3, 4}, {9, 16}},
		DefaultAspect: [2]int{16, 9}, Durations: []int{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, DefaultDuration: 5,
		Audio: &AudioTrack{SampleRate: 48000, Channels: 2}}), "MiniMaxAI/MiniMax-H3", DeviceGalaxy),
}

// The weights (HEAD's SupportedModels) of the Wan2.2 runners: every T2V runner loads the T2V
// model, every I2V runner the I2V one.
const (
	wanT2V = "Wan-AI/Wan2.2-T2V-A14B-Diffusers"
	wanI2V = "Wan-AI/Wan2.2-I2V-A14B-Diffusers"
)

// videoPresets are HEAD's ModelConfigs cells of its video runners on the devices this server
// knows: the whole mesh as one worker (one device-id group), batch 1, and HEAD's
// request_processing_timeout_seconds of 5000 s (Mochi's Galaxy cell and LTX's differ). (HEAD's Blackhole Galaxy
// and P150/P300 cells, e.g. the only ones of AniSora, Distill, LoRA and Lightning, are not DEVICE
// values here: those take DEVICE_IDS and DEVICE_MESH_SHAPE by hand.)
const videoTimeout = 5000 * time.Second

var videoPresets = map[string]Preset{
	DeviceN150:   {one, false, deviceIDs1, 1, videoTimeout},
	DeviceT3K:    {[2]int{2, 4}, false, deviceIDs4Group, 1, videoTimeout},
	DeviceGalaxy: {[2]int{4, 8}, false, deviceIDs32Group, 1, videoTimeout},
}

// withPresets gives a video model its MODEL name (its canonical name, as HEAD's ModelNames),
// the weights that name loads, and HEAD's cells for the given devices.
func withPresets(m Model, weights string, devices ...string) Model {
	m.ModelNames = []ModelName{{m.Canonical, weights}}
	if len(devices) > 0 {
		m.Presets = map[string]Preset{}
		for _, d := range devices {
			m.Presets[d] = videoPresets[d]
		}
	}
	return m
}

// wanSpec is Wan2.2's output (81 frames at 16 fps; 832x480, 1280x720 on a Galaxy-class mesh:
// HEAD's WAN22_*), image-conditioned or not, with the model's forced step count.
func wanSpec(i2v bool, forced int) *VideoSpec {
	return &VideoSpec{I2V: i2v, ForcedSteps: forced, FPS: 16, Frames: 81, Width: 832, Height: 480,
		LargeWidth: 1280, LargeHeight: 720}
}

// videoModel is a video model: one denoising step is the unit of MOCK_STEP_SECONDS; its time
// is Go sleeps (no simulator manifests for the video programs yet).
func videoModel(name, canonical, class string, v *VideoSpec) Model {
	return Model{Name: name, Service: ServiceVideo, Canonical: canonical, Video: v, PythonClass: dit + class,
		Device: DeviceOptions{L1SmallSize: 32768, TraceRegionSize: DefaultTraceRegionSize, CommandQueues: 1, Fabric1D: true}}
}

// VideoSpec is a video model's request policy and output (HEAD's config/constants.py and its
// runners): catalogued per model.
type VideoSpec struct {
	// I2V: the deployment needs image conditioning (text-only requests are refused).
	I2V bool
	// ForcedSteps, when > 0, is the number of steps the model always runs (Distill, Lightning,
	// AniSora), whatever num_inference_steps says.
	ForcedSteps int
	// FPS and Frames are the clip's rate and length (Frames 0: from duration_seconds).
	FPS    int
	Frames int
	// Width×Height is the clip's size on a small mesh; LargeWidth×LargeHeight on a
	// Galaxy-class mesh (32 chips or more), when set.
	Width, Height           int
	LargeWidth, LargeHeight int
	// AspectRatios and Durations (seconds) are MiniMax-H3's served working points; a model
	// without them refuses aspect_ratio and duration_seconds other than its own.
	AspectRatios    [][2]int
	DefaultAspect   [2]int
	Durations       []int
	DefaultDuration int
	// ShortSide is the short side of MiniMax's frames (768P).
	ShortSide int
	// Audio, when set, says the model makes a soundtrack (text-to-audio-video: LTX-2.3,
	// MiniMax-H3), muxed into the MP4 as AAC: the simulated twin's track has this shape; a real
	// pipeline reports its own sampling rate.
	Audio *AudioTrack
}

// AudioTrack is a soundtrack's shape.
type AudioTrack struct {
	SampleRate, Channels int
}

// Size is the clip's width×height on a mesh of chips chips.
func (v VideoSpec) Size(chips int) (w, h int) {
	if chips >= LargeMeshChips && v.LargeWidth > 0 {
		return v.LargeWidth, v.LargeHeight
	}
	return v.Width, v.Height
}

// LargeMeshChips is HEAD's LARGE_MESH_SIZE_THRESHOLD: meshes of 32 chips and more are
// Galaxy-class (Wan2.2 renders 1280×720 there, 832×480 elsewhere).
const LargeMeshChips = 32

// AspectSize is MiniMax's frame size for an aspect ratio: the short side ShortSide, the long
// side in proportion, both rounded to multiples of 16.
func (v VideoSpec) AspectSize(a [2]int) (w, h int) {
	round := func(x float64) int { return max(16, int(x/16+0.5)*16) }
	if a[0] >= a[1] {
		return round(float64(v.ShortSide) * float64(a[0]) / float64(a[1])), v.ShortSide
	}
	return v.ShortSide, round(float64(v.ShortSide) * float64(a[1]) / float64(a[0]))
}

// DurationFrames is MiniMax's frame count for a duration: the smallest 17n+5 that lasts at
// least seconds at FPS (its VAE encodes 17-frame chunks; HEAD's align_num_frames).
func (v VideoSpec) DurationFrames(seconds int) int {
	want := seconds * v.FPS
	n := max(0, (want-5+16)/17)
	return 17*n + 5
}

// String names the spec's fixed output, for messages.
func (v VideoSpec) String() string {
	return fmt.Sprintf("%dx%d, %d frames at %d fps", v.Width, v.Height, v.Frames, v.FPS)
}
