package server

// Image-to-image (MODEL_RUNNER=tt-sdxl-image-to-image, POST /v1/images/image-to-image) and
// inpainting (tt-sdxl-edit, POST /v1/images/edits), in both dialects: HEAD's JSON
// ImageToImageRequest / ImageEditRequest (base64 image and mask, strength) answered with
// {"images"} (as HEAD: only /generations carries generation_time), and OpenAI's multipart images/edits (image, mask, prompt, n,
// size, response_format, ...) answered with ImagesResponse. The legacy /image/... twins speak
// HEAD's dialect only.

import (
	"context"
	"fmt"
	"image"
	"net/http"
	"slices"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion"
)

// defaultStrength is HEAD's ImageToImageRequest default.
const defaultStrength = 0.6

// imageInputRule tells the dialects of the image-to-image and edits routes apart: HEAD's
// fields are JSON with base64 media, OpenAI's a multipart form, so a multipart body with only
// shared fields (image, mask, prompt) is OpenAI's.
var imageInputRule = dialectRule{
	python: []string{"number_of_images", "image_return_format", "image_quality", "prompt_2",
		"negative_prompt_2", "crop_coords_top_left", "guidance_rescale", "timesteps", "sigmas",
		"lora_path", "lora_scale"},
	openai: []string{"model", "n", "size", "response_format", "output_format", "output_compression",
		"quality", "background", "input_fidelity", "partial_images", "stream", "user", "image[]"},
	fallback:  dialectPython,
	multipart: dialectOpenAI,
}

// imageInputFields are the fields HEAD's ImageToImageRequest (image, strength) and
// ImageEditRequest (mask) add to ImageGenerateRequest; with imageGenerateFields they are all a
// Python-dialect body on these routes may hold (mask on image-to-image has its own 422).
var imageInputFields = []string{"image", "strength", "mask"}

// imageInputRoute is how a runner takes images: its /v1 path and legacy twin, and whether it
// inpaints (a mask is required).
type imageInputRoute struct {
	v1, legacy string
	edit       bool
}

// imageInputRouteFor is the route of an image-input runner (HEAD: which image route exists
// depends on MODEL_RUNNER), from the catalogue; ok is false for text-to-image runners.
func imageInputRouteFor(runner string) (imageInputRoute, bool) {
	m, ok := catalogue.Lookup(runner)
	if !ok || m.Image.Input == catalogue.InputNone || len(m.Routes) == 0 {
		return imageInputRoute{}, false
	}
	return imageInputRoute{v1: m.Routes[0].V1, legacy: m.Routes[0].Legacy, edit: m.Image.Input == catalogue.InputInpaint}, true
}

// reserveImage reserves an upload's decode memory from IMAGE_MEMORY_BUDGET_BYTES (measured from
// its header, before any pixel is decoded), as the CNN route does; release it after the answer.
func (s *Server) reserveImage(ctx context.Context, field string, data []byte) (func(), error) {
	cost, err := imaging.DecodeCost(data)
	if err != nil {
		return nil, fieldImageErr(field, err)
	}
	if cost > s.imageMem.total {
		return nil, &apiError{param: field, status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("%s: %v: decoding its pixels would take %d MiB of memory, over IMAGE_MEMORY_BUDGET_BYTES (%d MiB)", field, imaging.ErrTooLarge, cost>>20, s.imageMem.total>>20)}
	}
	return s.imageMem.acquire(ctx, cost)
}

// decodeInputImage decodes the request's image through media/imaging's entry point (its pixel
// budget refuses decompression bombs) and converts it to RGB; errors name field.
func decodeInputImage(field string, data []byte) (*image.NRGBA, error) {
	img, _, err := imaging.DecodeRGBWith(data, imaging.DecodeOptions{MaxPixels: maxImagePixels})
	if err != nil {
		return nil, fieldImageErr(field, err)
	}
	return img, nil
}

// decodeMask decodes a mask and reads it as one channel (diffusion.MaskChannel; alphaMarks for
// OpenAI's transparent-area convention); it must be the image's size.
func decodeMask(field string, data []byte, img image.Image, alphaMarks bool) (*image.Gray, error) {
	m, _, err := imaging.Decode(data, maxImagePixels)
	if err != nil {
		return nil, fieldImageErr(field, err)
	}
	ib, mb := img.Bounds(), m.Bounds()
	if ib.Dx() != mb.Dx() || ib.Dy() != mb.Dy() {
		return nil, &apiError{param: field, status: http.StatusBadRequest,
			msg: fmt.Sprintf("%s is %dx%d but image is %dx%d: the mask must have the image's size", field, mb.Dx(), mb.Dy(), ib.Dx(), ib.Dy())}
	}
	g, err := diffusion.MaskChannel(m, alphaMarks)
	if err != nil {
		return nil, &apiError{param: field, status: http.StatusBadRequest, msg: field + ": " + err.Error()}
	}
	return g, nil
}

// readPythonImageInput reads HEAD's image-to-image and edits requests (JSON): the
// ImageGenerateRequest fields plus image (base64, required), strength (0-1, default 0.6) and,
// for inpainting, mask (base64, required for tt-sdxl-edit; white = repaint).
func readPythonImageInput(in *request, route imageInputRoute, d imageDefaults) (*imageGeneration, error) {
	b, err := in.jsonBody()
	if err != nil {
		return nil, err
	}
	req := parseImageFields(b, d)
	imgB64, hasImg := b.str("image", true)
	maskB64, hasMask := b.str("mask", false)
	if route.edit && !hasMask {
		if _, present := b.value("mask"); !present {
			b.add("value_error", []any{"mask"}, "Value error, mask is required for "+d.runner, nil, map[string]any{"error": map[string]any{}})
		}
	}
	if !route.edit && hasMask {
		b.add("extra_forbidden", []any{"mask"}, "mask is for inpainting (MODEL_RUNNER="+catalogue.RunnerSDXLEdit+"); this server runs "+d.runner, shorten(maskB64), nil)
	}
	req.Strength = defaultStrength
	if v := b.float("strength", false); v != nil && b.rangeCheck("strength", *v, 0, 1, true, rawInput(b, "strength")) {
		req.Strength = *v
	}
	b.forbidExtra(imageGenerateFields, imageInputFields)
	if err := b.err(); err != nil {
		return nil, err
	}
	if err := req.checkLoRAFields(); err != nil {
		return nil, err
	}
	r := &imageGeneration{imageRequest: *req, dialect: dialectPython, hasMask: hasMask}
	if !hasImg {
		return nil, &apiError{param: "image", status: http.StatusBadRequest, msg: "image is required"}
	}
	if r.image, err = decodeBase64(imgB64); err != nil {
		return nil, &apiError{param: "image", status: http.StatusBadRequest, msg: fmt.Sprintf("image is not valid base64: %v", err)}
	}
	if hasMask {
		if r.mask, err = decodeBase64(maskB64); err != nil {
			return nil, &apiError{param: "mask", status: http.StatusBadRequest, msg: fmt.Sprintf("mask is not valid base64: %v", err)}
		}
	}
	return r, nil
}

// decodeInputs reserves the image's (and mask's) decode memory, decodes them into req and
// returns the release of the reservations.
func (s *Server) decodeInputs(ctx context.Context, req *runners.ImageRequest, img, mask []byte, hasMask, alphaMarks bool) (_ func(), err error) {
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	r, err := s.reserveImage(ctx, "image", img)
	if err != nil {
		return nil, err
	}
	releases = append(releases, r)
	rgb, err := decodeInputImage("image", img)
	if err != nil {
		return nil, err
	}
	req.InitImage = rgb
	if !hasMask {
		return release, nil
	}
	if r, err = s.reserveImage(ctx, "mask", mask); err != nil {
		return nil, err
	}
	releases = append(releases, r)
	if req.Mask, err = decodeMask("mask", mask, rgb, alphaMarks); err != nil {
		return nil, err
	}
	return release, nil
}

// openAIImageInputParams is OpenAI's images/edits form (also image-to-image's), declared
// (decodeOpenAIForm): image (one file, as image or image[]), mask (a file: required or refused by
// the route, parseOpenAIImageInput), prompt, n, size (the model's sizes: checked against the
// model table), response_format (b64_json; url refused), model (the model table), output_format,
// output_compression (jpeg and webp only), quality, background, user; extensions
// negative_prompt, seed, strength, steps or num_inference_steps (override quality),
// guidance_scale. OutputFormat holds its default (png) until the form says otherwise.
type openAIImageInputParams struct {
	_                 struct{} `msg.unknown:"field %q is not supported on this route"`
	Image             []byte   `json:"image" form:"image image[],file" validate:"required" msg:"you must provide an image (multipart field \"image\")" msg.repeat:"one image is accepted; this model edits a single image"`
	Mask              []byte   `json:"mask" form:",file"`
	Prompt            *string  `json:"prompt" validate:"required,nonblank" msg:"prompt must be a non-empty string"`
	NegativePrompt    string   `json:"negative_prompt"`
	Model             string   `json:"model" form:",trim"`
	N                 *int64   `json:"n" form:",trim" validate:"omitnil,min=1,max=4" msg:"n must be an integer between 1 and 4, got %q"`
	Size              *string  `json:"size" form:",trim"`
	ResponseFormat    *string  `json:"response_format" form:",trim" validate:"omitnil,ne=url,eq=b64_json" msg:"response_format must be \"b64_json\", got %q" msg.ne:"response_format \"url\" is not supported: this server does not store images; use \"b64_json\""`
	OutputFormat      string   `json:"output_format" form:",trim" validate:"oneof=png jpeg webp" msg:"output_format %q is not supported; accepted: png, jpeg, webp"`
	OutputCompression *int64   `json:"output_compression" form:",trim" validate:"omitnil,min=0,max=100,excluded_if=OutputFormat png" msg:"output_compression must be an integer between 0 and 100, got %q" msg.excluded_if:"output_compression applies to jpeg and webp only; output_format is png (lossless)"`
	Quality           *string  `json:"quality" form:",trim" validate:"omitnil,oneof=auto standard medium low high hd" msg:"quality must be one of auto, low, medium, high, standard, hd; got %q"`
	Background        *string  `json:"background" form:",trim" validate:"omitnil,oneof=auto opaque" msg:"background %q is not supported; accepted: auto, opaque"`
	User              string   `json:"user" form:",trim" validate:"maxbytes=256" msg:"user must be at most 256 bytes (an end-user id), got %d"`
	Seed              *int64   `json:"seed" form:",trim" msg.type:"seed must be an integer, got %q"`
	Strength          *float64 `json:"strength" form:",trim" validate:"omitnil,min=0,max=1" msg:"strength must be a number between 0 and 1, got %q"`
	Steps             *int64   `json:"steps" form:",trim" validate:"omitnil,min=12,max=50" msg:"steps must be an integer between 12 and 50, got %q"`
	NumInferenceSteps *int64   `json:"num_inference_steps" form:",trim" validate:"omitnil,min=12,max=50" msg:"num_inference_steps must be an integer between 12 and 50, got %q"`
	GuidanceScale     *float64 `json:"guidance_scale" form:",trim" validate:"omitnil,min=1,max=20" msg:"guidance_scale must be a number between 1 and 20, got %q"`
}

// parseOpenAIImageInput reads OpenAI's multipart images/edits form (openAIImageInputParams) into
// the route's imageGeneration. mask is required for inpainting and refused for image-to-image;
// OpenAI's convention: its fully transparent pixels mark the area to repaint, or, without
// transparency, a grayscale mask whose white marks it. size is auto or the model's (1024x1024,
// or 512x512 with SDXL_IMAGE_RESOLUTION=512); quality low → 12 steps, high and hd → 40, others
// NUM_INFERENCE_STEPS, and steps or num_inference_steps (12-50) override it; strength defaults
// to 0.6.
func parseOpenAIImageInput(in *request, ctHeader string, route imageInputRoute, defaultSteps, defaultQuality int, models *modelTable) (*imageGeneration, error) {
	p := openAIImageInputParams{OutputFormat: "png"}
	if err := decodeOpenAIForm(in, ctHeader, openAIFormLimits, &p); err != nil {
		return nil, err
	}
	if err := models.resolve(p.Model); err != nil {
		return nil, err
	}
	sizes := models.imageSizes() // the model's output size (SDXL_IMAGE_RESOLUTION)
	if p.Size != nil && *p.Size != "auto" && !slices.Contains(sizes, *p.Size) {
		return nil, invalidParam("size", "size %q is not supported by this model; accepted: auto, %s", shorten(*p.Size), strings.Join(sizes, ", "))
	}
	switch mask := p.Mask != nil; {
	case route.edit && !mask:
		return nil, invalidParam("mask", "you must provide a mask: this model inpaints (MODEL_RUNNER=%s)", catalogue.RunnerSDXLEdit)
	case !route.edit && mask:
		return nil, invalidParam("mask", "mask is for inpainting (MODEL_RUNNER=%s); this route transforms the whole image", catalogue.RunnerSDXLEdit)
	}
	if defaultSteps < 12 || defaultSteps > 50 {
		defaultSteps = 20
	}
	req := &imageGeneration{dialect: dialectOpenAI, size: sizes[0], outputFormat: p.OutputFormat, compression: defaultQuality,
		quality: "auto", model: p.Model, user: p.User, image: p.Image, mask: p.Mask, hasMask: p.Mask != nil}
	req.NumberOfImages, req.NumInferenceSteps, req.GuidanceScale, req.Strength = 1, defaultSteps, runners.DefaultGuidance(catalogue.RunnerSDXLEdit), defaultStrength
	req.Prompt, req.NegativePrompt, req.Seed = *p.Prompt, p.NegativePrompt, p.Seed
	if p.Size != nil && *p.Size != "auto" {
		req.size = *p.Size
	}
	if p.N != nil {
		req.NumberOfImages = int(*p.N)
	}
	if p.OutputCompression != nil {
		req.compression = int(*p.OutputCompression)
	}
	if p.Quality != nil {
		switch *p.Quality {
		case "low":
			req.NumInferenceSteps = stepsLowQuality
		case "high", "hd":
			req.NumInferenceSteps = stepsHighQuality
		}
	}
	for _, v := range []*int64{p.Steps, p.NumInferenceSteps} {
		if v != nil {
			req.NumInferenceSteps = int(*v)
		}
	}
	if p.Strength != nil {
		req.Strength = *p.Strength
	}
	if p.GuidanceScale != nil {
		req.GuidanceScale = *p.GuidanceScale
	}
	return req, nil
}
