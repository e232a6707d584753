package catalogue

import (
	"strconv"
	"strings"
	"time"
)

// MODEL_RUNNER names of HEAD's image runners served here.
const (
	RunnerSDXL = "tt-sdxl-trace"
	// RunnerSDXLImg2Img is SDXL image-to-image (HEAD's /v1/images/image-to-image).
	RunnerSDXLImg2Img = "tt-sdxl-image-to-image"
	// RunnerSDXLEdit is SDXL inpainting (HEAD's /v1/images/edits) with the inpainting UNet.
	RunnerSDXLEdit = "tt-sdxl-edit"
	RunnerSD35     = "tt-sd3.5"
)

// Unscaled simulator latencies of the image programs (the ttnn/programs manifests').
const (
	sdxlUNetStep     = 190.3e-3 // s per sdxl-unet step
	sd35DenoiserStep = 625e-3   // s per SD3.5 denoiser step (the pipeline's manifest)
)

// Image request policy shared by HEAD's image runners.
const (
	defaultMinSteps = 12 // HEAD's floor for every runner but Flux and z-image-turbo
	// sdxlGuidance is HEAD's ImageGenerateRequest default (5.0, SDXL's); sd35Guidance the TT
	// SD3.5 pipeline's 3.5 (HEAD's SD3.5 runner always uses it).
	sdxlGuidance = 5.0
	sd35Guidance = 3.5
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
	imageSim   = Simulation{Programs: []string{"sdxl-unet", "sdxl-vae"}, Traced: "sdxl-unet", UnitSeconds: sdxlUNetStep}
	sdxlDevice = DeviceOptions{L1SmallSize: 32768, TraceRegionSize: DefaultTraceRegionSize, CommandQueues: 1}
	sdxlPolicy = ImagePolicy{MinSteps: defaultMinSteps, Guidance: sdxlGuidance, LoRA: true}
)

// sdxl is an SDXL runner: input says which image it takes, unet its UNet program.
func sdxl(name, class string, input ImageInput, unet string) Model {
	p := sdxlPolicy
	p.Input = input
	m := Model{Name: name, Service: ServiceImage, Image: p, Device: sdxlDevice, Sim: imageSim,
		Programs: sdxlPrograms(unet, input != InputNone), PythonClass: class, GoPipeline: true}
	switch input {
	case InputTransform:
		m.Routes = []Route{{V1: "/v1/images/image-to-image", Legacy: "/image/image-to-image"}}
	case InputInpaint:
		m.Routes = []Route{{V1: "/v1/images/edits", Legacy: "/image/edits"}}
	}
	return m
}

var imageModels = []Model{
	func() Model {
		m := sdxl(RunnerSDXL, "tt_model_runners.sdxl_generate_runner_trace.TTSDXLGenerateRunnerTrace", InputNone, "sdxl-unet")
		m.Default, m.Canonical = true, "stable-diffusion-xl-base-1.0"
		m.Presets = headTimeouts(sdxlInputPresets, map[string]int{DeviceN300: 3000}) // HEAD's cells are the same as img2img's
		m.ModelNames = []ModelName{{"stable-diffusion-xl-base-1.0", "stabilityai/stable-diffusion-xl-base-1.0"}}
		return m
	}(),
	{Name: RunnerSD35, Service: ServiceImage, Canonical: "stable-diffusion-3.5-large",
		ModelNames: []ModelName{{"stable-diffusion-3.5-large", "stabilityai/stable-diffusion-3.5-large"}},
		Image: ImagePolicy{MinSteps: defaultMinSteps, Guidance: sd35Guidance, Size: ditSize, FlowMatch: true,
			Unused: []Field{
				{Name: "guidance_rescale", Why: "SD3.5's pipeline has no guidance rescale", Default: "0"},
				{Name: "crop_coords_top_left", Why: "SDXL micro-conditioning only", Default: "[0, 0]"}},
			PythonUnused:   []string{"prompt_2", "negative_prompt_2", "timesteps", "sigmas"},
			PythonGuidance: sd35Guidance},
		Device:  DeviceOptions{L1SmallSize: 32768, TraceRegionSize: 25_000_000, CommandQueues: 1, Fabric1D: true},
		Presets: headTimeouts(ditPresets, map[string]int{DeviceT3K: 2000, DeviceGalaxy: 2000}),
		Sim: Simulation{Programs: imageSim.Programs, Traced: imageSim.Traced, UnitSeconds: sdxlUNetStep,
			PipelineUnitSeconds: sd35DenoiserStep},
		Programs: []Program{{Name: "sd35-text-encoder"}, {Name: "sd35-text-encoder-2"}, {Name: "sd35-text-encoder-3"},
			{Name: "sd35-transformer"}, {Name: "sd35-vae"}},
		PythonClass: "tt_model_runners.dit_runners.TTSD35Runner", GoPipeline: true},
	func() Model {
		m := sdxl(RunnerSDXLImg2Img, "tt_model_runners.sdxl_image_to_image_runner_trace.TTSDXLImageToImageRunner", InputTransform, "sdxl-unet")
		m.Canonical, m.Presets = "stable-diffusion-xl-base-1.0-img-2-img", sdxlInputPresets
		m.ModelNames = []ModelName{{"stable-diffusion-xl-base-1.0-img-2-img", "stabilityai/stable-diffusion-xl-base-1.0"}}
		return m
	}(),
	func() Model {
		m := sdxl(RunnerSDXLEdit, "tt_model_runners.sdxl_edit_runner_trace.TTSDXLEditRunner", InputInpaint, "sdxl-inpaint-unet")
		m.Canonical, m.Presets = "stable-diffusion-xl-1.0-inpainting-0.1", sdxlInputPresets
		m.ModelNames = []ModelName{{"stable-diffusion-xl-1.0-inpainting-0.1", "diffusers/stable-diffusion-xl-1.0-inpainting-0.1"}}
		return m
	}(),
}

// Field is a request field a model has no use for: Why says so, Default is the value that
// means "not sent".
type Field struct {
	Name, Why, Default string
}

// MODEL_RUNNER names of HEAD's tt-dit and Z-Image image runners: served on the Python road by
// HEAD's classes and in mock-device mode by the diffusion family's simulated twin (the Flux
// pipeline of the Go road is runners/diffusion's FluxRunner).
const (
	RunnerFlux1Dev      = "tt-flux.1-dev"
	RunnerFlux1Schnell  = "tt-flux.1-schnell"
	RunnerMotifImage6B  = "tt-motif-image-6b-preview"
	RunnerQwenImage     = "tt-qwen-image"
	RunnerQwenImage2512 = "tt-qwen-image-2512"
	RunnerZImageTurbo   = "tt-z-image-turbo"
	fluxMinSteps        = 4      // HEAD's _FLUX_MIN_INFERENCE_STEPS
	fluxTransformerStep = 470e-3 // s per Flux transformer step (the flux1-*-transformer manifest; scaled from SD3.5's, not measured)
	fluxDevGuidance     = 3.5    // FluxPipeline's default embedded guidance (dev; schnell takes none)
	// qwenGuidance is what HEAD's Qwen-Image runs at: TTDiTRunner.run calls tt-metal's
	// QwenImagePipeline.run_single_prompt without one, whose cfg_scale defaults to 4.0
	// (models/tt_dit/pipelines/qwenimage/pipeline_qwenimage.py), diffusers' true_cfg_scale.
	qwenGuidance = 4.0
	// ditSize is the output side of HEAD's tt-dit image pipelines (SD3.5, Flux.1, Motif,
	// Qwen-Image): tt-metal's create_pipeline defaults (width = height = 1024), which HEAD's
	// runners do not override. zImageTurboSize is Z-Image-Turbo's: tt-metal's ZImageTurbo has
	// its 64x64 latents baked into the compiled models (IMG_LATENT_H/W, "512px / 8").
	ditSize              = 1024
	zImageTurboSize      = 512
	qwenTraceRegion      = 47_000_000 // TTQwenImageRunner.get_pipeline_device_params
	motifTraceRegion     = 31_000_000 // TTMotifImage6BPreviewRunner's
	deviceIDs4Group      = "(0,1,2,3)"
	zImageTurboHEADSteps = 9 // HEAD's ZImageTurboRunner.DEFAULT_STEPS: it runs 9 whatever is asked
)

// deviceIDs32Group is HEAD's DEVICE_IDS_32_GROUP: one worker over a Galaxy's 32 chips.
var deviceIDs32Group = "(" + strings.Join(func() []string {
	ids := make([]string, 32)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}(), ",") + ")"

// sdxlInputPresets are HEAD's cells of its SDXL runners (text-to-image, image-to-image, edit):
// one chip per worker, and on n300 and T3K a (2,1) mesh with HEAD's DEVICE_IDS as written there.
var sdxlInputPresets = map[string]Preset{
	DeviceN150:   {one, false, deviceIDs1, 1, 0},
	DeviceN300:   {[2]int{2, 1}, false, deviceIDs1, 1, 0},
	DeviceGalaxy: {one, true, deviceIDs32, 1, 0},
	DeviceT3K:    {[2]int{2, 1}, false, deviceIDs4, 1, 0},
}

// ditPresets are HEAD's T3K and Galaxy cells of the tt-dit image runners (Flux, Motif, Qwen):
// one worker over the whole mesh.
var ditPresets = map[string]Preset{
	DeviceT3K:    {[2]int{2, 4}, false, deviceIDs4Group, 1, 0},
	DeviceGalaxy: {[2]int{4, 8}, false, deviceIDs32Group, 1, 0},
}

// noCFG are the fields of a model without classifier-free guidance or SDXL micro-conditioning
// (Flux): FluxPipeline does not take them.
var noCFG = []Field{
	{Name: "negative_prompt", Why: "no classifier-free guidance", Default: `""`},
	{Name: "negative_prompt_2", Why: "no classifier-free guidance", Default: `""`},
	{Name: "guidance_rescale", Why: "no classifier-free guidance", Default: "0"},
	{Name: "crop_coords_top_left", Why: "SDXL micro-conditioning only", Default: "[0, 0]"},
	{Name: "timesteps", Why: "its scheduler takes sigmas only", Default: "[]"},
}

// RunnerXLASDXL is HEAD's SDXLForgeRunner (tt-xla SDXL, 512x512 by default).
const (
	RunnerXLASDXL = "tt-xla-sdxl"
	xlaSDXLSize   = 512
)

// xlaSDXLUnused are the fields HEAD's SDXLForgeRunner.run does not read.
var xlaSDXLUnused = []Field{
	{Name: "prompt_2", Why: "SDXLForgeRunner encodes the one prompt with both text encoders", Default: `""`},
	{Name: "negative_prompt_2", Why: "SDXLForgeRunner encodes the one negative prompt with both text encoders", Default: `""`},
	{Name: "guidance_rescale", Why: "SDXLForgeRunner's guidance has no rescale", Default: "0"},
	{Name: "crop_coords_top_left", Why: "SDXLForgeRunner's time ids are fixed at (0, 0)", Default: "[0, 0]"},
	{Name: "timesteps", Why: "SDXLForgeRunner's scheduler takes a step count only", Default: "[]"},
	{Name: "sigmas", Why: "SDXLForgeRunner's scheduler takes a step count only", Default: "[]"},
}

// fieldNames lists the fields' names.
func fieldNames(fs []Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// ditPythonUnused are the fields HEAD's TTDiTRunner.run does not pass to its pipeline (it reads
// prompt, negative_prompt, num_inference_steps and seed).
var ditPythonUnused = []string{"prompt_2", "negative_prompt_2", "guidance_rescale", "timesteps", "sigmas"}

// ditImage is one of HEAD's tt-dit image runners with its simulated twin.
func ditImage(name, canonical, weights, class string, p ImagePolicy, trace uint64) Model {
	p.Size, p.FlowMatch = ditSize, true
	p.PythonUnused = ditPythonUnused
	if p.PythonGuidance == 0 {
		p.PythonGuidance = max(p.Guidance, 1) // HEAD's runner does not pass guidance_scale: the pipeline's own
	}
	return Model{Name: name, Service: ServiceImage, Canonical: canonical,
		ModelNames: []ModelName{{canonical, weights}}, Image: p, Presets: ditPresets,
		Device: DeviceOptions{L1SmallSize: 32768, TraceRegionSize: trace, CommandQueues: 1, Fabric1D: true},
		Sim:    imageSim, PythonClass: dit + class}
}

// fluxImage is a Flux.1 variant: HEAD's TTFlux1Runner on the Python road, and on the Go road
// runners/diffusion's FluxRunner over the four declared programs of prefix (runners/programs),
// whose transformer step the simulator times at fluxTransformerStep.
func fluxImage(name, canonical, weights, prefix string, p ImagePolicy) Model {
	m := ditImage(name, canonical, weights, "TTFlux1Runner", p, DefaultTraceRegionSize)
	m.Presets = headTimeouts(ditPresets, map[string]int{DeviceT3K: 3000, DeviceGalaxy: 5000})
	m.Programs = []Program{{Name: prefix + "-text-encoder"}, {Name: prefix + "-text-encoder-2"},
		{Name: prefix + "-transformer"}, {Name: prefix + "-vae"}}
	m.Sim.PipelineUnitSeconds = fluxTransformerStep
	m.GoPipeline = true
	return m
}

var newImageModels = []Model{
	fluxImage(RunnerFlux1Dev, "FLUX.1-dev", "black-forest-labs/FLUX.1-dev", "flux1-dev",
		ImagePolicy{MinSteps: fluxMinSteps, Guidance: fluxDevGuidance, Unused: noCFG}),
	fluxImage(RunnerFlux1Schnell, "FLUX.1-schnell", "black-forest-labs/FLUX.1-schnell", "flux1-schnell",
		ImagePolicy{MinSteps: fluxMinSteps, Unused: append([]Field{{Name: "guidance_scale",
			Why: "schnell is guidance-distilled and takes no guidance", Default: "none"}}, noCFG...)}),
	func() Model {
		m := ditImage(RunnerMotifImage6B, "Motif-Image-6B-Preview", "Motif-Technologies/Motif-Image-6B-Preview", "TTMotifImage6BPreviewRunner",
			ImagePolicy{MinSteps: defaultMinSteps, Guidance: sdxlGuidance}, motifTraceRegion)
		m.Presets = headTimeouts(ditPresets, map[string]int{DeviceT3K: 2000, DeviceGalaxy: 2000})
		return m
	}(),
	ditImage(RunnerQwenImage, "Qwen-Image", "Qwen/Qwen-Image", "TTQwenImageRunner",
		ImagePolicy{MinSteps: defaultMinSteps, Guidance: qwenGuidance}, qwenTraceRegion),
	// runner_fabric builds TTQwenImageRunner for the 2512 weights too.
	ditImage(RunnerQwenImage2512, "Qwen-Image-2512", "Qwen/Qwen-Image-2512", "TTQwenImageRunner",
		ImagePolicy{MinSteps: defaultMinSteps, Guidance: qwenGuidance}, qwenTraceRegion),
	// SDXL through the Forge compiler (tt-xla) on one Blackhole chip: HEAD's SDXLForgeRunner,
	// at its default 512x512 (hotshotco/SDXL-512; TTXLA_SDXL_RESOLUTION=1024, which this server
	// does not read, would select the 1024 base weights). It reads prompt, negative_prompt,
	// guidance_scale, num_inference_steps and seed; its Euler scheduler takes no custom
	// schedule; it fuses no LoRA. Served by the simulated twin in mock-device mode.
	{Name: RunnerXLASDXL, Service: ServiceImage, Canonical: "SDXL-512",
		ModelNames: []ModelName{{"SDXL-512", "hotshotco/SDXL-512"}},
		Image: ImagePolicy{MinSteps: defaultMinSteps, Guidance: sdxlGuidance, Size: xlaSDXLSize,
			Unused: xlaSDXLUnused, PythonUnused: fieldNames(xlaSDXLUnused)},
		Presets: map[string]Preset{DeviceN150: {one, false, deviceIDs1, 1, 3000 * time.Second}},
		Device:  sdxlDevice, Sim: imageSim,
		PythonClass: "tt_model_runners.forge_runners.sdxl_forge_runner.SDXLForgeRunner"},
	// Z-Image-Turbo: HEAD skips the step floor (the schema's 4 stays) and its runner reads only
	// prompt and seed, running 9 steps; it is guidance-free.
	{Name: RunnerZImageTurbo, Service: ServiceImage, Canonical: "Z-Image-Turbo",
		ModelNames: []ModelName{{"Z-Image-Turbo", "Tongyi-MAI/Z-Image-Turbo"}},
		Image: ImagePolicy{MinSteps: 4, Size: zImageTurboSize, FlowMatch: true, Unused: append([]Field{{Name: "guidance_scale",
			Why: "Z-Image-Turbo is guidance-free", Default: "none"}}, noCFG...),
			PythonUnused: ditPythonUnused, PythonGuidance: 1}, // HEAD also ignores num_inference_steps (runs 9)
		Device: DeviceOptions{L1SmallSize: 32768, TraceRegionSize: DefaultTraceRegionSize, CommandQueues: 1, Fabric1D: true},
		Sim:    imageSim, PythonClass: "tt_model_runners.z_image_turbo_runner.ZImageTurboRunner"},
}
