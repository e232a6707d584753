// Package diffusionrunner is the runners.Runner of the real SDXL (MODEL_RUNNER=tt-sdxl-trace) and
// SD3.5 (tt-sd3.5) host pipelines of runners/diffusion/diffusionpipeline on a ttnn device: it loads
// the tokenizers from MODEL_WEIGHTS_PATH (Hugging Face layout: tokenizer/, tokenizer_2/,
// tokenizer_3/), opens the device with the Python runners' options at warm-up, loads the
// pipeline's device programs (encoders, the traced denoiser step, the VAE), runs the warm-up
// inference, and then serves image requests: progress after every step, streamed latent
// previews for partial_images, cancellation at every step boundary.
//
// Register adds those names to a registry: without the tokenizer
// files, or where the simulator cannot serve this worker, the factory falls back to the
// family's simulated runner (runners/diffusion/simimage), so image generation works on a fresh machine.
// With DEVICE_BACKEND=metal (a `ttnn` build) the programs are the .ttnn files of
// MODEL_WEIGHTS_PATH (diffusionpipeline.NewMetalDevice, NewMetalSD3Device) and there is no fallback:
// what is missing fails the worker's start-up as a configuration error.
package diffusionrunner

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/lora"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Errors of this package.
var (
	// ErrNoTokenizer means the weights directory lacks the CLIP tokenizer files.
	ErrNoTokenizer = errors.New("diffusion runner: no CLIP tokenizer (tokenizer/vocab.json and merges.txt, or bpe_simple_vocab_16e6.txt.gz)")
	// ErrClosed is returned by a runner used after Close.
	ErrClosed = errors.New("diffusion runner closed")
	// ErrNotWarm is returned by Run before a successful Warmup.
	ErrNotWarm = errors.New("diffusion runner not warmed up")
)

// Model is which pipeline a runner drives.
type Model int

// The pipelines.
const (
	SDXL Model = iota
	SD35
	// SDXLImg2Img is SDXL image-to-image (tt-sdxl-image-to-image).
	SDXLImg2Img
	// SDXLEdit is SDXL inpainting with the inpainting UNet (tt-sdxl-edit).
	SDXLEdit
)

func (m Model) String() string {
	switch m {
	case SD35:
		return catalogue.RunnerSD35
	case SDXLImg2Img:
		return catalogue.RunnerSDXLImg2Img
	case SDXLEdit:
		return catalogue.RunnerSDXLEdit
	}
	return catalogue.RunnerSDXL
}

// variant is the SDXL program set of the model.
func (m Model) variant() diffusionpipeline.Variant {
	switch m {
	case SDXLImg2Img:
		return diffusionpipeline.ImageToImage
	case SDXLEdit:
		return diffusionpipeline.Inpaint
	}
	return diffusionpipeline.TextToImage
}

// declaredMesh is the mesh the model's denoiser program is declared for (runners/programs).
func (m Model) declaredMesh() ttnn.MeshShape {
	name := diffusionpipeline.ProgUNet
	switch m {
	case SD35:
		name = diffusionpipeline.ProgSD3Transformer
	case SDXLEdit:
		name = diffusionpipeline.ProgInpaintUNet
	}
	spec, _ := programs.Lookup(name)
	return spec.Mesh
}

// catalogued is the model's catalogue entry: the Python runner's device options (ttnn-notes
// §2.4) and the denoiser step's simulator latency that MOCK_STEP_SECONDS maps onto.
func (m Model) catalogued() runners.Model {
	c, _ := runners.Lookup(m.String(), nil)
	return c
}

const (
	// previewScale upscales the latent preview (1/8 of the image side) to a quarter of the
	// side, the mock runner's preview size.
	previewScale = 2
	// defaultSteps is NUM_INFERENCE_STEPS's default.
	defaultSteps = 20
)

// Config configures one runner.
type Config struct {
	Model Model
	// Setup is the weights, device and programs (Device: DeviceOptions gives the Python
	// runner's).
	Setup
	// LoRARoot is LORA_ROOT: the directory LoRA adapters are read from ("" = LoRA off).
	LoRARoot string
	// LoRAMaxFileBytes is LORA_MAX_FILE_BYTES (0: lora.DefaultMaxFileBytes).
	LoRAMaxFileBytes int64
}

// DeviceOptions returns the Python runner's device options for model on mesh (the
// catalogue's: l1_small_size 32768; SDXL with TRACE_REGION_SIZE's default region, SD3.5 with a
// 25 MB trace region and FABRIC_1D on a multi-chip mesh); traceRegion > 0 is a
// TRACE_REGION_SIZE that was set, and replaces the model's region.
func DeviceOptions(model Model, mesh ttnn.MeshShape, traceRegion int) ttnn.Options {
	return simdev.Options(model.catalogued(), &config.Settings{TraceRegionSize: traceRegion, TraceRegionSizeSet: traceRegion > 0}, mesh)
}

// Runner is the SDXL or SD3.5 runner on one device group.
type Runner struct {
	cfg Config
	tok tokenizers
	log *slog.Logger

	mu      sync.Mutex // guards the fields below against Close during Run
	dev     *ttnn.Device
	subs    []*ttnn.Device               // the two CFG submeshes of a multi-chip mesh
	closers []interface{ Close() error } // the pipeline's devices
	sdxl    *diffusionpipeline.Pipeline
	sd35    *diffusionpipeline.SD3Pipeline
	spec    [3]int // latent channels, height, width
	closed  bool
	loras   *lora.Cache
}

// New loads the tokenizers; the device is opened by Warmup.
func New(cfg Config) (*Runner, error) {
	tok, err := loadTokenizers(cfg.Model, cfg.WeightsDir)
	if err != nil {
		return nil, err
	}
	log := cfg.withDefaults()
	if cfg.Model == SD35 && tok.t5 == nil {
		log.Warn("SD3.5 without a T5 tokenizer: T5 embeddings are zeros", "weights", cfg.WeightsDir)
	}
	return &Runner{cfg: cfg, tok: tok, log: log, loras: lora.NewCache(lora.Options{MaxFileBytes: cfg.LoRAMaxFileBytes})}, nil
}

// Warmup opens the device, loads the programs (capturing the denoiser trace) and runs the
// Python runner's warm-up request.
func (r *Runner) Warmup(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.dev != nil {
		return nil
	}
	defer func() {
		if err != nil {
			_ = r.closeDevice()
			err = fmt.Errorf("%s warm-up: %w", r.cfg.Model, err)
		}
	}()
	var opts ttnn.Options
	if r.dev, opts, err = r.cfg.openDevice(ctx); err != nil {
		return err
	}
	// On a multi-chip mesh the two guidance halves run on two submeshes at once — on metal
	// only when the halves have the mesh the programs are declared for (SD3.5's programs are
	// declared for the whole 2x4 mesh, batch 2).
	metal := r.cfg.Backend == config.BackendMetal
	devs := []*ttnn.Device{r.dev}
	if half, offs, ok := cfgSplit(opts.Mesh); ok && (!metal || half == r.cfg.Model.declaredMesh()) {
		for _, off := range offs {
			sub, err := r.dev.Submesh(ctx, half, off)
			if err != nil {
				return fmt.Errorf("CFG submesh %v at %v: %w", half, off, simdev.DeviceErr(err))
			}
			r.subs = append(r.subs, sub)
		}
		devs = r.subs
	}
	set := r.cfg.Programs
	switch r.cfg.Model {
	case SD35:
		if set == nil {
			set = diffusionpipeline.SD3Programs()
		}
		var ds []*diffusionpipeline.TTNNSD3Device
		for _, dev := range devs {
			var d *diffusionpipeline.TTNNSD3Device
			if metal {
				d, err = diffusionpipeline.NewMetalSD3Device(ctx, dev, r.cfg.WeightsDir)
			} else {
				d, err = diffusionpipeline.NewTTNNSD3Device(ctx, dev, set)
			}
			if err != nil {
				return err
			}
			r.closers = append(r.closers, d)
			ds = append(ds, d)
		}
		var dev diffusionpipeline.SD3Device = ds[0]
		if len(ds) == 2 {
			if dev, err = diffusionpipeline.NewSD3CFGSplit(ds[0], ds[1]); err != nil {
				return err
			}
		}
		s := dev.Spec()
		r.spec = [3]int{s.LatentChannels, s.LatentHeight, s.LatentWidth}
		if r.sd35, err = diffusionpipeline.NewSD3(dev, r.tok.clip, r.tok.t5, diffusionpipeline.SD35Config()); err != nil {
			return err
		}
	default:
		if set == nil {
			set = diffusionpipeline.Programs()
		}
		var ds []*diffusionpipeline.TTNNDevice
		for _, dev := range devs {
			var d *diffusionpipeline.TTNNDevice
			if metal {
				d, err = diffusionpipeline.NewMetalDevice(ctx, dev, r.cfg.WeightsDir, r.cfg.Model.variant())
			} else {
				d, err = diffusionpipeline.NewTTNNDeviceFor(ctx, dev, set, r.cfg.Model.variant())
			}
			if err != nil {
				return err
			}
			r.closers = append(r.closers, d)
			ds = append(ds, d)
		}
		var dev diffusionpipeline.Device = ds[0]
		if len(ds) == 2 {
			if dev, err = diffusionpipeline.NewCFGSplit(ds[0], ds[1]); err != nil {
				return err
			}
		}
		s := dev.Spec()
		r.spec = [3]int{s.LatentChannels, s.LatentHeight, s.LatentWidth}
		if r.sdxl, err = diffusionpipeline.New(dev, r.tok.clip, diffusionpipeline.SDXLConfig()); err != nil {
			return err
		}
	}
	// The Python runners' warm-up requests (one step).
	seed := int64(0)
	warm := &runners.ImageRequest{Prompt: "Sunrise on a beach", NumInferenceSteps: 1, Seed: &seed}
	switch r.cfg.Model {
	case SDXL:
		warm.Prompt2, warm.NegativePrompt, warm.NegativePrompt2 = "Mountains in the background", "low resolution", "blurry"
		warm.GuidanceScale, warm.GuidanceRescale = 5.0, 0.7
	case SDXLImg2Img, SDXLEdit:
		// HEAD's image-to-image warm-up: a 1x1 picture, 2 steps at strength 0.99 (one step).
		warm.NegativePrompt, warm.GuidanceScale, warm.NumInferenceSteps, warm.Strength = "low resolution", 5.0, 2, 0.99
		warm.InitImage = image.NewNRGBA(image.Rect(0, 0, 1, 1))
		if r.cfg.Model == SDXLEdit {
			warm.Mask = &image.Gray{Pix: []uint8{255}, Stride: 1, Rect: image.Rect(0, 0, 1, 1)}
		}
	}
	if _, err := r.generate(ctx, runners.Task{Ctx: ctx, Request: warm}, warm); err != nil {
		return fmt.Errorf("warm-up inference: %w", err)
	}
	r.log.Info("diffusion runner warm", "runner", r.cfg.Model.String(), "mesh", opts.Mesh.String(),
		"cfg_parallel", len(r.subs) == 2, "latents", r.spec, "t5", r.tok.t5 != nil, "backend", r.backend())
	for _, c := range r.closers {
		// The weights checksum is the simulator's LoRA bookkeeping; metal has no LoRA path
		// (docs/DEVICE-PROGRAMS.md), so nothing there to report.
		if d, ok := c.(*diffusionpipeline.TTNNDevice); ok && !metal {
			r.logWeights(ctx, d, "base weights", "")
		}
	}
	return nil
}

// Run generates one image per task, one task after the other on the device (the programs'
// batch is the guidance pair of one request). Each task runs under its own context, also
// ended by ctx.
func (r *Runner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]runners.Outcome, len(tasks))
	for i, t := range tasks {
		switch {
		case r.closed:
			out[i].Err = ErrClosed
			continue
		case r.dev == nil:
			out[i].Err = ErrNotWarm
			continue
		}
		out[i] = r.runTask(ctx, t)
	}
	return out
}

func (r *Runner) runTask(ctx context.Context, t runners.Task) (o runners.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = runners.Outcome{Err: fmt.Errorf("%s: panic: %v", r.cfg.Model, p)}
		}
	}()
	req, err := runners.RequestAs[*runners.ImageRequest](t)
	if err != nil || req == nil {
		return runners.Outcome{Err: fmt.Errorf("%s: request is %T, not *runners.ImageRequest", r.cfg.Model, t.Request)}
	}
	tctx, done := taskContext(ctx, t)
	defer done()
	img, err := r.generate(tctx, t, req)
	if err != nil {
		return runners.Outcome{Err: err}
	}
	return runners.Outcome{Value: &runners.ImageResult{Images: []image.Image{img}}}
}

// generate runs one request on the pipeline with progress and previews.
func (r *Runner) generate(ctx context.Context, t runners.Task, req *runners.ImageRequest) (_ image.Image, err error) {
	hooks := stepHooks(ctx, t, req.PartialImages, r.spec, r.cfg.Model.String()+": ")
	steps := req.NumInferenceSteps
	if steps <= 0 {
		steps = r.cfg.DefaultSteps
	}
	var img *image.NRGBA
	before := r.deviceStats()
	defer func() {
		if err == nil {
			r.logCalls(ctx, before, req.Strength)
		}
	}()
	if err := r.applyLoRA(ctx, req); err != nil {
		return nil, fmt.Errorf("%s: %w", r.cfg.Model, err)
	}
	switch {
	case r.cfg.Model == SD35:
		// guidance_scale (the model's 3.5 when not set), prompt_2 and negative_prompt_2 (CLIP-G;
		// T5 reads prompt), timesteps or sigmas (FlowMatch's custom schedules) are honoured,
		// which HEAD's SD3.5 runner ignores; a missing seed means 0, as there.
		seed := int64(0)
		if req.Seed != nil {
			seed = *req.Seed
		}
		img, err = r.sd35.Generate(ctx, diffusionpipeline.SD3Request{Prompt: req.Prompt, Prompt2: req.Prompt2,
			NegativePrompt: req.NegativePrompt, NegativePrompt2: req.NegativePrompt2, Steps: steps,
			GuidanceScale: req.Guidance(r.cfg.Model.String()), Seed: &seed, Timesteps: req.Timesteps, Sigmas: req.Sigmas}, hooks)
	case r.cfg.Model == SDXL:
		if req.InitImage != nil || req.Mask != nil {
			return nil, fmt.Errorf("%w: %s generates from text; image and mask need MODEL_RUNNER=%s or %s",
				runners.ErrBadRequest, r.cfg.Model, catalogue.RunnerSDXLImg2Img, catalogue.RunnerSDXLEdit)
		}
		pr := diffusionpipeline.RequestFrom(req)
		pr.Steps, pr.GuidanceScale = steps, req.Guidance(r.cfg.Model.String())
		img, err = r.sdxl.GenerateWith(ctx, pr, hooks)
	default:
		var in diffusionpipeline.ImageInput
		if in, err = r.imageInput(req); err != nil {
			return nil, fmt.Errorf("%s: %w", r.cfg.Model, err)
		}
		pr := diffusionpipeline.RequestFrom(req)
		pr.Steps, pr.GuidanceScale = steps, req.Guidance(r.cfg.Model.String())
		img, err = r.sdxl.GenerateImage(ctx, pr, in, hooks)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.cfg.Model, err)
	}
	return img, nil
}

// Close releases the programs and the device; it is idempotent.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return r.closeDevice()
}

func (r *Runner) closeDevice() error {
	var errs []error
	for _, c := range r.closers {
		errs = append(errs, c.Close())
	}
	r.closers = nil
	for _, d := range append(r.subs, r.dev) {
		if d == nil {
			continue
		}
		if err := d.Close(); err != nil && !errors.Is(err, ttnn.ErrDeviceLost) && !errors.Is(err, ttnn.ErrTimeout) {
			errs = append(errs, err)
		}
	}
	r.subs, r.dev = nil, nil
	r.sdxl, r.sd35 = nil, nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: close: %w", r.cfg.Model, err)
	}
	return nil
}

// cfgSplit says how a mesh of two or more chips is cut into the two classifier-free-guidance
// submeshes: along the columns when their number is even (the SD3.5 demo's cfg axis 1:
// (2,4) -> two (2,2), (4,8) -> two (4,4)), else along the rows (TP2's (2,1) -> two (1,1)).
func cfgSplit(mesh ttnn.MeshShape) (half ttnn.MeshShape, offsets []ttnn.MeshCoord, ok bool) {
	switch {
	case mesh.Chips() < 2:
		return ttnn.MeshShape{}, nil, false
	case mesh.Cols%2 == 0:
		half = ttnn.MeshShape{Rows: mesh.Rows, Cols: mesh.Cols / 2}
		return half, []ttnn.MeshCoord{{Row: 0, Col: 0}, {Row: 0, Col: half.Cols}}, true
	case mesh.Rows%2 == 0:
		half = ttnn.MeshShape{Rows: mesh.Rows / 2, Cols: mesh.Cols}
		return half, []ttnn.MeshCoord{{Row: 0, Col: 0}, {Row: half.Rows, Col: 0}}, true
	}
	return ttnn.MeshShape{}, nil, false
}
