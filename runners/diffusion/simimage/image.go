// Package simimage is the diffusion family's simulated runner (MODEL_RUNNER=tt-sdxl-trace or
// tt-sd3.5 without model files, and MODEL_RUNNER=mock with MODEL_SERVICE=image): a
// deterministic picture that depends on the request, made in Go, while the real model's device
// time (a UNet run per denoising step, a VAE decode) is spent on the simulated device
// (runners/simdev).
package simimage

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/lora"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/preview"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// The simulated pipeline's device programs (ttnn/programs/<name>.ttbsim).
const (
	progUNet = "sdxl-unet"
	progVAE  = "sdxl-vae"
)

// imageSize is the resolution of SDXL base and SD3.5 Large.
const imageSize = 1024

// defaultSteps is NUM_INFERENCE_STEPS's default in the Python server.
const defaultSteps = 20

// Factory returns the registry factory of the simulated model (tt-sdxl-trace, tt-sd3.5):
// MOCK_* latencies, NUM_INFERENCE_STEPS, and the worker's simulated device (simdev.ConfigFor).
func Factory(model string) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		size := imageSize
		if m, ok := catalogue.Lookup(model); ok && m.Image.Size > 0 {
			size = m.Image.Size // a model of one size (SD3.5, the tt-dit models)
		} else if spec.Settings != nil && spec.Settings.SDXLResolution == 512 && !isSD35(model) {
			size = 512 // SDXL_IMAGE_RESOLUTION=(512, 512)
		}
		r := newImage(model, size, simdev.LatencyFrom(spec.Settings))
		if spec.Settings != nil && spec.Settings.NumInferenceSteps > 0 {
			r.defaultSteps = spec.Settings.NumInferenceSteps
		}
		if spec.Settings != nil && spec.Settings.MockImage == "solid" {
			r.solid = solidImage(r.size)
		}
		r.dev.Cfg = simdev.ConfigFor(model, spec)
		if spec.Settings != nil {
			r.loraRoot = spec.Settings.LoRARoot
			r.loras = lora.NewCache(lora.Options{MaxFileBytes: spec.Settings.LoRAMaxFileBytes})
		}
		return r, nil
	}
}

// DeviceInfo describes the runner's simulated device; ok is false when its time is Go sleeps.
func (r *imageRunner) DeviceInfo() (ttnn.DeviceInfo, bool) { return r.dev.Info() }

// errBothSchedules is the Python SDXL pipeline's ValueError text.
const errBothSchedules = "Cannot pass both timesteps and sigmas. Choose one."

// imageRunner is the mock SDXL / SD3.5 device.
type imageRunner struct {
	model        string
	sd35         bool
	size         int
	lat          simdev.Latency
	defaultSteps int
	// randomSeed draws the start-latent seed of an SDXL request without one.
	randomSeed func() int64
	// dev is the simulated device in a worker process; without one, steps are Go sleeps.
	dev    simdev.Stepper
	closed atomic.Bool
	// loraRoot is LORA_ROOT; loras caches the adapters read from it.
	loraRoot string
	loras    *lora.Cache
	// solid, when set (MOCK_IMAGE=solid), is the picture of every request: the Python mock
	// runner's solid 1024² image, for like-for-like comparisons with it.
	solid *image.RGBA
	// renders keeps the last few pictures by their parameters: a repeated request (same
	// prompts, seed, steps, guidance) costs no render. Pictures are shared: read-only.
	renders renderCache
}

// Python's mock runner answers Image.new("RGB", (1024, 1024), (120, 60, 200)).
var solidColour = [3]uint8{120, 60, 200}

// solidImage is a size×size opaque picture of solidColour.
func solidImage(size int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = solidColour[0], solidColour[1], solidColour[2], 0xFF
	}
	return img
}

// renderCacheSize is how many pictures renderCache keeps (4 MiB each at 1024²).
const renderCacheSize = 4

// renderCache is a small most-recently-used cache of rendered pictures.
type renderCache struct {
	mu      sync.Mutex
	entries []renderEntry // most recent last
}

type renderEntry struct {
	p   renderParams
	img *image.RGBA
}

func (c *renderCache) get(p renderParams) *image.RGBA {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.p == p {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			return e.img
		}
	}
	return nil
}

func (c *renderCache) put(p renderParams, img *image.RGBA) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == renderCacheSize {
		c.entries = append(c.entries[:0], c.entries[1:]...)
	}
	c.entries = append(c.entries, renderEntry{p, img})
}

// New returns the simulated SDXL (tt-sdxl-trace) or SD3.5 (tt-sd3.5; any model name containing
// "sd3") runner, making size×size RGBA pictures. Requests without steps use 20 steps.
//
// The picture is a deterministic function of the request: the prompts set the palette, the
// seed (mixed with the prompts) the composition, the number of steps how much residual noise
// is left, and the guidance scale the saturation and contrast (0 is the model's default: 5.0,
// SD3.5's 3.5). Every other value that changes a real output (steps, guidance, its rescale,
// strength, the input image, crop, a custom schedule, a LoRA) also moves the composition's
// details — its shapes shift, grow and bend — so any single change of a parameter gives a
// picture a client tells apart (SSIM < 0.98, at full size and as a thumbnail). Both models honour prompt_2, negative_prompt_2, guidance_scale and a custom
// schedule (timesteps or sigmas, not both); as in the Python runners, SD3.5 treats a missing
// seed as 0 while SDXL draws a random seed when none is given.
func New(model string, size int, lat simdev.Latency) runners.Runner {
	return newImage(model, size, lat)
}

func isSD35(model string) bool {
	return model == catalogue.RunnerSD35 || strings.Contains(strings.ToLower(model), "sd3")
}

func newImage(model string, size int, lat simdev.Latency) *imageRunner {
	if size <= 0 {
		size = imageSize
	}
	return &imageRunner{
		model:        model,
		sd35:         isSD35(model),
		size:         size,
		lat:          lat,
		defaultSteps: defaultSteps,
		randomSeed:   rand.Int64,
		loras:        lora.NewCache(lora.Options{}),
	}
}

// Warmup simulates loading the pipeline, then generates the Python runners' warm-up image.
func (r *imageRunner) Warmup(ctx context.Context) error {
	if r.closed.Load() {
		return simdev.ErrClosed
	}
	if err := simdev.Sleep(ctx, r.lat.Warmup); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, err)
	}
	if err := r.dev.Open(ctx); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, err)
	}
	req := &runners.ImageRequest{Prompt: "Sunrise on a beach", NumInferenceSteps: 1}
	if !r.sd35 {
		seed := int64(0)
		req.Prompt2 = "Mountains in the background"
		req.NegativePrompt = "low resolution"
		req.NegativePrompt2 = "blurry"
		req.GuidanceScale = 5.0
		req.GuidanceRescale = 0.7
		req.Seed = &seed
	}
	if r.model == catalogue.RunnerSDXLImg2Img || r.model == catalogue.RunnerSDXLEdit {
		req.NumInferenceSteps, req.Strength = 2, 0.99
		req.InitImage = image.NewRGBA(image.Rect(0, 0, 1, 1))
		if r.model == catalogue.RunnerSDXLEdit {
			req.Mask = &image.Gray{Pix: []uint8{255}, Stride: 1, Rect: image.Rect(0, 0, 1, 1)}
		}
	}
	if _, err := r.generate(ctx, req, runners.Task{}); err != nil {
		return fmt.Errorf("%s warm-up inference: %w", r.model, err)
	}
	return nil
}

// Run generates one image per task.
func (r *imageRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	if r.closed.Load() {
		return simdev.ClosedOutcomes(len(tasks))
	}
	return simdev.RunBatch(ctx, tasks, func(ctx context.Context, t runners.Task) (runners.Result, error) {
		req, err := runners.RequestAs[*runners.ImageRequest](t)
		if err != nil || req == nil {
			return nil, fmt.Errorf("%s: request is %T, not *runners.ImageRequest", r.model, t.Request)
		}
		img, err := r.generate(ctx, req, t)
		if err != nil {
			return nil, err
		}
		return &runners.ImageResult{Images: []image.Image{img}}, nil
	})
}

// Close marks the runner closed and closes its device; it is idempotent.
func (r *imageRunner) Close() error {
	r.closed.Store(true)
	return r.dev.Close()
}

// generate runs the simulated denoising loop and renders the picture. After every step it
// tells t.Progress; when t.Emit is set and the request asks for partial images, it emits
// that many previews (*runners.ImagePartial) spaced evenly over the steps (preview.Steps, as the real pipeline).
// An Emit that fails while ctx is still live (a transport that cannot carry previews) stops
// the previews, not the image; one that fails because the client went away stops the task.
func (r *imageRunner) generate(ctx context.Context, req *runners.ImageRequest, t runners.Task) (*image.RGBA, error) {
	p := r.params(req)
	if req.Timesteps != nil && req.Sigmas != nil {
		return nil, &simdev.BadRequest{Msg: errBothSchedules}
	}
	work, err := r.prepareImage(req, &p)
	if err != nil {
		return nil, err
	}
	if err := r.applyLoRA(ctx, req, &p); err != nil {
		return nil, err
	}
	if work != nil {
		if err := r.encode(ctx, work); err != nil {
			return nil, err
		}
	}
	var at []int // steps after which a preview is due
	if t.Emit != nil {
		at = preview.Steps(p.steps, req.PartialImages)
	}
	sent := 0
	for step := 0; step < p.steps; step++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: cancelled before step %d of %d: %w", r.model, step+1, p.steps, err)
		}
		if err := r.dev.Run(ctx, progUNet, 1, r.lat.PerStep); err != nil {
			return nil, fmt.Errorf("%s: UNet step %d of %d: %w", r.model, step+1, p.steps, err)
		}
		done := step + 1
		if t.Progress != nil {
			t.Progress(done, p.steps)
		}
		if sent < len(at) && at[sent] == done {
			pv := renderPreview(p, r.size, done)
			if r.solid != nil {
				pv = solidImage(max(1, (r.size+3)/4))
			}
			err := t.Emit(&runners.ImagePartial{Index: sent, Step: done, Steps: p.steps, Image: pv})
			if err != nil {
				if cerr := ctx.Err(); cerr != nil {
					return nil, fmt.Errorf("%s: partial image %d after step %d: %w", r.model, sent, done, errors.Join(err, cerr))
				}
				at = nil // the stream cannot carry previews: finish the image without them
			}
			sent++
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: cancelled before VAE decode: %w", r.model, err)
	}
	if err := r.dev.Run(ctx, progVAE, 1, 0); err != nil {
		return nil, fmt.Errorf("%s: VAE decode: %w", r.model, err)
	}
	if r.solid != nil {
		return r.solid, nil
	}
	if work != nil {
		// A fresh picture: the blend writes into it, so it is not shared through the cache.
		out := render(p, r.size)
		work.blend(out)
		return out, nil
	}
	if img := r.renders.get(p); img != nil {
		return img, nil
	}
	img := render(p, r.size)
	r.renders.put(p, img)
	return img, nil
}

// renderParams are the request's values that shape the picture.
type renderParams struct {
	steps    int
	guidance float64
	// palette and layout are hashes of what sets the colours and the composition.
	palette [32]byte
	layout  uint64
	detail  uint64
}

// params resolves the request the way the model's pipeline would, and hashes it.
func (r *imageRunner) params(req *runners.ImageRequest) renderParams {
	steps := req.NumInferenceSteps
	if steps <= 0 {
		steps = r.defaultSteps
	}
	var seed int64
	family := catalogue.RunnerSDXL
	if r.sd35 {
		family = catalogue.RunnerSD35
	}
	guidance := req.Guidance(family)
	h := sha256.New()
	str := func(s string) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(s)))
		h.Write([]byte(s))
	}
	floats := func(fs ...float64) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(fs)))
		for _, f := range fs {
			_ = binary.Write(h, binary.LittleEndian, math.Float64bits(f))
		}
	}
	switch {
	case req.Seed != nil:
		seed = *req.Seed
	case !r.sd35 && r.randomSeed != nil:
		seed = r.randomSeed() // SD3.5: a missing seed is 0, as HEAD's runner
	}
	// A custom schedule sets the number of steps, as diffusers' retrieve_timesteps does.
	if len(req.Timesteps) > 0 {
		steps = len(req.Timesteps)
	} else if len(req.Sigmas) > 0 {
		steps = len(req.Sigmas)
	}
	if r.sd35 {
		str("sd3.5")
	} else {
		str("sdxl")
	}
	str(req.Prompt)
	str(req.NegativePrompt)
	str(req.Prompt2)
	str(req.NegativePrompt2)
	var p renderParams
	p.steps = steps
	p.guidance = guidance
	h.Sum(p.palette[:0])

	lh := sha256.New()
	lh.Write(p.palette[:])
	_ = binary.Write(lh, binary.LittleEndian, seed)
	p.layout = binary.LittleEndian.Uint64(lh.Sum(nil))

	// Everything else that changes a real output changes the fine detail (grain, shape jitter).
	h.Reset()
	h.Write(p.palette[:])
	_ = binary.Write(h, binary.LittleEndian, seed)
	_ = binary.Write(h, binary.LittleEndian, int64(steps))
	floats(guidance, req.GuidanceRescale, req.CropCoordsTopLeft[0], req.CropCoordsTopLeft[1])
	floats(req.Timesteps...)
	floats(req.Sigmas...)
	p.detail = binary.LittleEndian.Uint64(h.Sum(nil))
	return p
}

// renderPreview is the mock's cheap latent-to-RGB preview after step of p.steps denoising
// steps: the final picture's scene at a quarter of its side (SDXL's latents are an eighth),
// painted on a grid that is coarse (blurred) early and finer as denoising goes on, under the
// grain that many steps leave. It costs about a sixteenth of a full render.
func renderPreview(p renderParams, size, step int) *image.RGBA {
	side := max(1, (size+3)/4)
	full := max(1, min(side, 320)) // the final render's grid
	grid := max(2, min(side, full*step/max(p.steps, 1)))
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	upscale(img, paintScene(p, grid), grid, grainAmplitude(step), p.detail^uint64(step))
	return img
}
