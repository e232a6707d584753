package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"net/http"
	"strings"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion"
)

// maxPromptChars bounds prompts. The text encoders see at most 77 CLIP tokens (T5: 256 for
// SD3.5); longer prompts are truncated by the tokenizer as diffusers does, so this cap only
// keeps absurd inputs (megabytes of text) away from the tokenizer.
const maxPromptChars = 4096

// imageRequest is a validated POST /image/generations body.
type imageRequest struct {
	runners.ImageRequest
	NumberOfImages int
	// ReturnFormat ("JPEG" or "PNG") and Quality (JPEG quality) are how the images are
	// encoded: HEAD's per-request image_return_format and image_quality, defaulting to
	// IMAGE_RETURN_FORMAT and IMAGE_QUALITY.
	ReturnFormat string
	Quality      int
	// loraScaleSet: the body had lora_scale.
	loraScaleSet bool
}

// imageDefaults are the settings a Python-dialect image request falls back on.
type imageDefaults struct {
	steps   int    // NUM_INFERENCE_STEPS
	runner  string // MODEL_RUNNER: decides the num_inference_steps floor
	format  string // IMAGE_RETURN_FORMAT
	quality int    // IMAGE_QUALITY
}

// minStepsSchema is HEAD's schema bound of num_inference_steps (ge=4); the runner's own floor
// (the catalogue's MinSteps) is checked after it, as HEAD's field validator does.
const minStepsSchema = 4

// imagePolicy is the request policy of an image runner ("mock": the image service's default
// model), from the catalogue.
func imagePolicy(runner string) catalogue.ImagePolicy {
	m, _ := catalogue.Resolve(runner, runners.ServiceImage)
	return m.Image
}

// imageGenerateFields are the fields of HEAD's ImageGenerateRequest
// (domain/image_generate_request.py), every one read by parseImageFields. A Python-dialect
// image body may hold these and no other: pydantic would ignore any other key, this server
// refuses it (422 extra_forbidden naming it) instead of accepting and ignoring it.
var imageGenerateFields = []string{"prompt", "negative_prompt", "num_inference_steps", "seed",
	"number_of_images", "image_return_format", "image_quality", "guidance_scale", "prompt_2",
	"negative_prompt_2", "crop_coords_top_left", "guidance_rescale", "timesteps", "sigmas",
	"lora_path", "lora_scale"}

// parseImageRequest validates the body like the Python server's (HEAD) ImageGenerateRequest,
// with pydantic's extra="forbid": a key the schema lacks is a 422 naming it.
func parseImageRequest(data []byte, d imageDefaults) (*imageRequest, error) {
	b, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	r := parseImageFields(b, d)
	b.forbidExtra(imageGenerateFields)
	if err := b.err(); err != nil {
		return nil, err
	}
	if err := r.checkLoRAFields(); err != nil {
		return nil, err
	}
	return r, nil
}

// defaultLoRAScale is HEAD's lora_scale default.
const defaultLoRAScale = 0.5

// parseImageFields reads the ImageGenerateRequest fields of b; the caller checks b.err().
func parseImageFields(b *body, d imageDefaults) *imageRequest {
	r := &imageRequest{NumberOfImages: 1, ReturnFormat: "JPEG", Quality: 85}
	if strings.EqualFold(d.format, "PNG") {
		r.ReturnFormat = "PNG"
	}
	if d.quality >= 1 && d.quality <= 100 {
		r.Quality = d.quality
	}
	// HEAD's default 5.0, or the model's own (SD3.5: 3.5, what HEAD's SD3.5 runner always uses).
	r.GuidanceScale = runners.DefaultGuidance(d.runner)
	r.NumInferenceSteps = d.steps
	floor := imagePolicy(d.runner).MinSteps
	if d.steps < floor || d.steps > maxSteps {
		r.NumInferenceSteps = 20
	}
	r.Prompt, _ = b.strMax("prompt", true, maxPromptChars)
	r.NegativePrompt, _ = b.strMax("negative_prompt", false, maxPromptChars)
	r.Prompt2, _ = b.strMax("prompt_2", false, maxPromptChars)
	r.NegativePrompt2, _ = b.strMax("negative_prompt_2", false, maxPromptChars)
	if v := b.int("num_inference_steps"); v != nil {
		raw := rawInput(b, "num_inference_steps")
		switch {
		case !b.rangeCheck("num_inference_steps", float64(*v), minStepsSchema, maxSteps, false, raw):
		case *v < int64(floor):
			b.add("value_error", []any{"num_inference_steps"}, fmt.Sprintf("Value error, num_inference_steps must be >= %d for %s, got %d", floor, d.runner, *v), raw, map[string]any{"error": map[string]any{}})
		default:
			r.NumInferenceSteps = int(*v)
		}
	}
	if v := b.int("seed"); v != nil {
		r.Seed = v
	}
	if v, ok := b.str("image_return_format", false); ok {
		if v != "JPEG" && v != "PNG" {
			b.add("value_error", []any{"image_return_format"}, "Value error, image_return_format must be 'JPEG' or 'PNG'", v, map[string]any{"error": map[string]any{}})
		} else {
			r.ReturnFormat = v
		}
	}
	if v := b.int("image_quality"); v != nil {
		raw := rawInput(b, "image_quality")
		switch {
		case !b.rangeCheck("image_quality", float64(*v), 50, 100, false, raw):
		case r.ReturnFormat == "PNG" && *v < 100:
			// PNG is lossless: a lossy quality would be accepted and ignored. 100 (no loss) is
			// what PNG gives, and what HEAD's own eval clients send with PNG.
			b.add("value_error", []any{"image_quality"}, fmt.Sprintf("Value error, image_quality %d asks for lossy JPEG compression, "+
				"but the images are PNG (lossless; image_return_format or IMAGE_RETURN_FORMAT); send image_return_format "+
				"'JPEG', image_quality 100, or no image_quality", *v), raw, map[string]any{"error": map[string]any{}})
		default:
			r.Quality = int(*v)
		}
	}
	if v := b.float("guidance_scale", false); v != nil {
		if b.rangeCheck("guidance_scale", *v, 1, 20, true, rawInput(b, "guidance_scale")) {
			r.GuidanceScale = *v
		}
	}
	if v := b.int("number_of_images"); v != nil {
		if b.rangeCheck("number_of_images", float64(*v), 1, 4, false, rawInput(b, "number_of_images")) {
			r.NumberOfImages = int(*v)
		}
	}
	if v := b.float("guidance_rescale", false); v != nil {
		if b.rangeCheck("guidance_rescale", *v, 0, 1, true, rawInput(b, "guidance_rescale")) {
			r.GuidanceRescale = *v
		}
	}
	if v, ok := b.value("crop_coords_top_left"); ok && v != nil {
		list, isList := v.([]any)
		switch {
		case !isList:
			b.add("tuple_type", []any{"crop_coords_top_left"}, "Input should be a valid tuple", v, nil)
		case len(list) > 2:
			b.add("too_long", []any{"crop_coords_top_left"}, fmt.Sprintf("Tuple should have at most 2 items after validation, not %d", len(list)), v, map[string]any{"field_type": "Tuple", "max_length": 2, "actual_length": len(list)})
		default:
			for i := 0; i < 2; i++ {
				if i >= len(list) {
					b.add("missing", []any{"crop_coords_top_left", i}, "Field required", v, nil)
					continue
				}
				if i == 0 {
					if x, ok := b.toInt([]any{"crop_coords_top_left", 0}, list[0]); ok {
						r.CropCoordsTopLeft[0] = float64(x)
					}
				} else if x, ok := b.toFloat([]any{"crop_coords_top_left", 1}, list[1]); ok {
					r.CropCoordsTopLeft[1] = x
				}
			}
		}
	}
	r.Timesteps = b.floats("timesteps")
	r.Sigmas = b.floats("sigmas")
	capCustomSchedule(b, &r.ImageRequest, d.runner)
	r.LoRAPath, _ = b.str("lora_path", false)
	r.LoRAScale = defaultLoRAScale
	if v := b.float("lora_scale", false); v != nil {
		r.loraScaleSet = true
		if b.rangeCheck("lora_scale", *v, 0, 2, true, rawInput(b, "lora_scale")) {
			r.LoRAScale = *v
		}
	}
	return r
}

// maxSteps is num_inference_steps' upper bound (HEAD's schema, le=50); custom schedules are
// held to it too.
const maxSteps = 50

// capCustomSchedule holds custom timesteps and sigmas to the step limit and prices the request
// by the steps it will really run: one UNet run per timestep; per sigma but the final one for
// SDXL's Euler scheduler (diffusers appends nothing), per sigma for SD3.5's flow-matching
// scheduler (it appends the final 0). Without this, 1000 sigmas ran 1000 steps past the limit
// of 50 and were admitted at the cost of num_inference_steps.
func capCustomSchedule(b *body, r *runners.ImageRequest, runner string) {
	name, steps := "", 0
	switch {
	case len(r.Timesteps) > 0:
		name, steps = "timesteps", len(r.Timesteps)
	case len(r.Sigmas) > 0:
		name, steps = "sigmas", len(r.Sigmas)
		if !imagePolicy(runner).FlowMatch {
			steps-- // the last sigma ends the schedule: N+1 sigmas are N steps
		}
	default:
		return
	}
	if steps > maxSteps {
		b.add("too_long", []any{name}, fmt.Sprintf("%s would run %d denoising steps; at most %d (the num_inference_steps limit)", name, steps, maxSteps),
			nil, map[string]any{"field_type": "List", "max_steps": maxSteps, "actual_steps": steps})
		return
	}
	r.ScheduleSteps = max(steps, 1) // what it runs, for the cost estimate
}

// checkLoRAFields refuses a lora_scale without a lora_path (it would be ignored).
func (r *imageRequest) checkLoRAFields() error {
	if r.LoRAPath == "" && r.loraScaleSet {
		return httpErr(http.StatusBadRequest, "lora_scale needs a lora_path (a .safetensors file under LORA_ROOT); send lora_path or drop lora_scale")
	}
	return nil
}

// resolveLoRA checks the request's adapter before it is queued: the path under LORA_ROOT (no
// traversal, no Hub ids), the file parsed and matched against SDXL's modules (cached by file
// identity), so a bad adapter is a 400 naming it and never reaches a worker. The request then
// carries the file's real path.
func (s *Server) resolveLoRA(ctx context.Context, r *runners.ImageRequest) error {
	if r.LoRAPath == "" {
		return nil
	}
	if runner := s.pool(runners.ServiceImage).Runner; !imagePolicy(runner).LoRA {
		return httpErr(http.StatusBadRequest, "lora_path: LoRA adapters are supported by the SDXL runners only, not %s", runner)
	}
	if s.cfg.DeviceBackend == config.BackendMetal && !s.cfg.Mock {
		return httpErr(http.StatusBadRequest, "lora_path is not supported on DEVICE_BACKEND=metal: the compiled SDXL programs have no LoRA weight update yet (docs/DEVICE-PROGRAMS.md)")
	}
	a, err := s.loras.Load(ctx, s.cfg.LoRARoot, r.LoRAPath)
	if err != nil {
		e := httpErr(http.StatusBadRequest, "lora_path %q: %v", shorten(r.LoRAPath), err)
		if ae, ok := errors.AsType[*apiError](err); ok { // IMAGE_MEMORY_BUDGET_BYTES: 413, or 429 after a wait
			e.status, e.retryAfter = ae.status, ae.retryAfter
		} else if errors.Is(err, diffusion.ErrLoRATooLarge) {
			e.status = http.StatusRequestEntityTooLarge
		}
		return e
	}
	r.LoRAPath = a.Path
	return nil
}

// encoder encodes as the request's image_return_format and image_quality ask.
func (r *imageRequest) encoder() func(image.Image) ([]byte, error) {
	if r.ReturnFormat == "PNG" {
		return imaging.EncodePNG
	}
	q := r.Quality
	return func(img image.Image) ([]byte, error) { return imaging.EncodeJPEG(img, q) }
}

// refuseUnusedFields refuses the fields the image model has no use for (the catalogue's
// Unused, e.g. SD3.5's pipeline has no guidance rescale and no SDXL micro-conditioning), rather
// than accept and ignore them: a value other than the default is a 400 naming it. Served by
// HEAD's own Python class, the fields that class does not read (PythonUnused) are refused too.
func (s *Server) refuseUnusedFields(r *runners.ImageRequest) error {
	runner := s.pool(runners.ServiceImage).Runner
	p, set := imagePolicy(runner), imageFieldsSet(r)
	for _, f := range p.Unused {
		if set[f.Name] {
			return httpErr(http.StatusBadRequest, "%s: %s does not support it (%s); drop it or send %s", f.Name, runner, f.Why, f.Default)
		}
	}
	if !s.headImageRunner() {
		return nil
	}
	const why = "%s: HEAD's %s runner (DEVICE_BACKEND=python) does not use it; drop it, or serve %s with the Go pipeline"
	for _, f := range p.PythonUnused {
		if set[f] {
			return httpErr(http.StatusBadRequest, why, f, runner, runner)
		}
	}
	return nil
}

// imageFieldsSet tells, for each request field a catalogue policy may refuse, whether the
// request sets it to other than its default.
func imageFieldsSet(r *runners.ImageRequest) map[string]bool {
	return map[string]bool{
		"guidance_rescale":     r.GuidanceRescale != 0,
		"crop_coords_top_left": r.CropCoordsTopLeft != [2]float64{},
		"prompt_2":             r.Prompt2 != "",
		"negative_prompt_2":    r.NegativePrompt2 != "",
		"timesteps":            len(r.Timesteps) > 0,
		"sigmas":               len(r.Sigmas) > 0,
		"negative_prompt":      r.NegativePrompt != "",
		"guidance_scale":       r.GuidanceScale != 0, // models without guidance default to 0
	}
}

// refuseUnguided refuses the fields only classifier-free guidance reads when the request
// turns guidance off: with guidance_scale 1 the pipelines run the prompt alone (diffusers'
// do_classifier_free_guidance is guidance_scale > 1; ours too), so a negative prompt or a
// guidance rescale would be accepted and ignored. The error names the field for both
// envelopes. (0 is "not sent": the model's default, which guides. HEAD's own SD3.5 runner in
// Python workers always guides at 3.5, so there they are used.)
func (s *Server) refuseUnguided(r *runners.ImageRequest) error {
	if r.GuidanceScale == 0 || r.GuidanceScale > 1 || (s.headImageRunner() && imagePolicy(s.pool(runners.ServiceImage).Runner).PythonGuidance > 0) {
		return nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"negative_prompt", r.NegativePrompt != ""},
		{"negative_prompt_2", r.NegativePrompt2 != ""},
		{"guidance_rescale", r.GuidanceRescale != 0},
	} {
		if f.set {
			return &apiError{param: f.name, status: http.StatusBadRequest, msg: fmt.Sprintf(
				"%s: guidance_scale %g turns classifier-free guidance off (the prompt runs alone), so %s would not be used; send guidance_scale > 1 or drop %s",
				f.name, r.GuidanceScale, f.name, f.name)}
		}
	}
	return nil
}

// headImageRunner reports whether the image pool's runner is served by HEAD's own Python class
// (a python pool without PYTHON_RUNNER_CLASS, which could host anything).
func (s *Server) headImageRunner() bool {
	if s.cfg.PythonRunnerClass != "" {
		return false
	}
	for _, p := range s.cfg.Pools {
		if p.Service == string(runners.ServiceImage) && s.cfg.PoolBackend(p) == config.BackendPython {
			return true
		}
	}
	return false
}

// generateWith fans number_of_images out to parallel single-image jobs (seed+i when a seed is
// given, as the Python server does), encodes each image with encode, and returns them in
// order. The first failure cancels the other jobs instead of letting them waste device time.
func (s *Server) generateWith(ctx context.Context, req *imageRequest, encode func(image.Image) ([]byte, error)) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := req.NumberOfImages
	// The images are admitted all or none: a request is never half-run because the queue
	// filled between its images.
	release, ctx, err := s.reserve(ctx, runners.ServiceImage, n, "number_of_images")
	if err != nil {
		return nil, err
	}
	defer release()
	out := make([]string, n)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i := range n {
		one := req.ImageRequest
		if req.Seed != nil {
			seed := *req.Seed + int64(i)
			one.Seed = &seed
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if out[i], err = s.generateOne(ctx, &one, encode); err != nil {
				once.Do(func() { firstErr = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

func (s *Server) generateOne(ctx context.Context, req *runners.ImageRequest, encode func(image.Image) ([]byte, error)) (string, error) {
	v, err := s.pool(runners.ServiceImage).Sched.Submit(ctx, req, nil)
	if err != nil {
		return "", err
	}
	res, ok := runners.ResultAs[*runners.ImageResult](v)
	if !ok || len(res.Images) == 0 {
		return "", fmt.Errorf("runner returned %T instead of an image", v)
	}
	enc, err := encode(res.Images[0])
	if err != nil {
		return "", fmt.Errorf("encode image: %w", err)
	}
	return base64.StdEncoding.EncodeToString(enc), nil
}
