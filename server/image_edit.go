package server

// Image-to-image (MODEL_RUNNER=tt-sdxl-image-to-image, POST /v1/images/image-to-image) and
// inpainting (tt-sdxl-edit, POST /v1/images/edits), in both dialects: HEAD's JSON
// ImageToImageRequest / ImageEditRequest (base64 image and mask, strength) answered with
// {"images"} (as HEAD: only /generations carries generation_time), and OpenAI's multipart images/edits (image, mask, prompt, n,
// size, response_format, ...) answered with ImagesResponse. The legacy /image/... twins speak
// HEAD's dialect only.

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"math"
	"net/http"
	"slices"
	"strconv"
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

// parseOpenAIImageInput reads OpenAI's multipart images/edits form: image (file, required; one
// image, as image or image[]), mask (file; required for inpainting, refused for
// image-to-image; OpenAI's convention: its fully transparent pixels mark the area to repaint,
// or, without transparency, a grayscale mask whose white marks it), prompt (required), n 1-4,
// size (auto or the model's: 1024x1024, or 512x512 with SDXL_IMAGE_RESOLUTION=512), response_format b64_json (url refused), model, output_format
// (png|jpeg|webp), output_compression 0-100, quality (as /v1/images/generations), background
// (auto|opaque), user; extensions: negative_prompt, seed, strength (0-1, default 0.6),
// num_inference_steps or steps (12-50), guidance_scale (1-20). Any other field is refused.
func parseOpenAIImageInput(in *request, ctHeader string, route imageInputRoute, defaultSteps, defaultQuality int, models *modelTable) (*imageGeneration, error) {
	if in.contentType != "multipart/form-data" {
		return nil, &apiError{status: http.StatusBadRequest,
			msg: fmt.Sprintf("Content-Type must be multipart/form-data, got %q", ctHeader)}
	}
	if in.boundary == "" {
		return nil, invalidParam("", "multipart/form-data without a boundary")
	}
	if defaultSteps < 12 || defaultSteps > 50 {
		defaultSteps = 20
	}
	sizes := models.imageSizes() // the model's output size (SDXL_IMAGE_RESOLUTION)
	req := &imageGeneration{dialect: dialectOpenAI, size: sizes[0], outputFormat: "png", compression: defaultQuality, quality: "auto"}
	req.NumberOfImages, req.NumInferenceSteps, req.GuidanceScale, req.Strength = 1, defaultSteps, runners.DefaultGuidance(catalogue.RunnerSDXLEdit), defaultStrength
	var img, mask []byte
	var gotImage, gotMask, gotPrompt, gotCompression bool
	form := openAIFormSpec([]string{"image", "image[]", "mask"}, nil)
	err := readForm(bytes.NewReader(in.data), in.boundary, form, func(name string, raw []byte) error {
		switch name {
		case "image", "image[]":
			if gotImage { // the other spelling sent too (a repeated one is readForm's 400)
				return invalidParam("image", "one image is accepted; this model edits a single image")
			}
			img, gotImage = raw, true
			return nil
		case "mask":
			mask, gotMask = raw, true
			return nil
		}
		if len(raw) > maxOpenAIFieldBytes {
			return invalidParam(name, "field %s is longer than %d bytes", name, maxOpenAIFieldBytes)
		}
		v := strings.TrimSpace(string(raw))
		intIn := func(lo, hi int) (int, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return 0, invalidParam(name, "%s must be an integer between %d and %d, got %q", name, lo, hi, v)
			}
			return n, nil
		}
		floatIn := func(lo, hi float64) (float64, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < lo || f > hi {
				return 0, invalidParam(name, "%s must be a number between %g and %g, got %q", name, lo, hi, v)
			}
			return f, nil
		}
		var perr error
		switch name {
		case "prompt":
			req.Prompt, gotPrompt = string(raw), true
		case "negative_prompt":
			req.NegativePrompt = string(raw)
		case "model":
			req.model = v
			perr = models.resolve(v)
		case "n":
			req.NumberOfImages, perr = intIn(1, maxOpenAIImages)
		case "size":
			if v != "auto" && !slices.Contains(sizes, v) {
				perr = invalidParam("size", "size %q is not supported by this model; accepted: auto, %s", v, strings.Join(sizes, ", "))
			} else if v != "auto" {
				req.size = v
			}
		case "response_format":
			switch v {
			case "b64_json":
			case "url":
				perr = invalidParam("response_format", "response_format \"url\" is not supported: this server does not store images; use \"b64_json\"")
			default:
				perr = invalidParam("response_format", "response_format must be \"b64_json\", got %q", v)
			}
		case "output_format":
			if v != "png" && v != "jpeg" && v != "webp" {
				perr = invalidParam("output_format", "output_format %q is not supported; accepted: png, jpeg, webp", v)
			}
			req.outputFormat = v
		case "output_compression":
			req.compression, perr = intIn(0, 100)
			gotCompression = true
		case "quality":
			switch v {
			case "auto", "standard", "medium":
			case "low":
				req.NumInferenceSteps = stepsLowQuality
			case "high", "hd":
				req.NumInferenceSteps = stepsHighQuality
			default:
				perr = invalidParam("quality", "quality must be one of auto, low, medium, high, standard, hd; got %q", v)
			}
		case "background":
			if v != "auto" && v != "opaque" {
				perr = invalidParam("background", "background %q is not supported; accepted: auto, opaque", v)
			}
		case "user":
			if perr = checkEndUser(v); perr == nil {
				req.user = v
			}
		case "seed":
			var n int64
			if n, perr = strconv.ParseInt(v, 10, 64); perr != nil {
				perr = invalidParam("seed", "seed must be an integer, got %q", v)
			} else {
				req.Seed = &n
			}
		case "strength":
			req.Strength, perr = floatIn(0, 1)
		case "steps", "num_inference_steps":
			req.NumInferenceSteps, perr = intIn(12, 50)
		case "guidance_scale":
			req.GuidanceScale, perr = floatIn(1, 20)
		default:
			perr = invalidParam(name, "field %q is not supported on this route", name)
		}
		return perr
	})
	if err != nil {
		return nil, err
	}
	switch {
	case !gotImage:
		return nil, invalidParam("image", "you must provide an image (multipart field \"image\")")
	case !gotPrompt || strings.TrimSpace(req.Prompt) == "":
		return nil, invalidParam("prompt", "prompt must be a non-empty string")
	case route.edit && !gotMask:
		return nil, invalidParam("mask", "you must provide a mask: this model inpaints (MODEL_RUNNER=%s)", catalogue.RunnerSDXLEdit)
	case !route.edit && gotMask:
		return nil, invalidParam("mask", "mask is for inpainting (MODEL_RUNNER=%s); this route transforms the whole image", catalogue.RunnerSDXLEdit)
	case gotCompression && req.outputFormat == "png":
		return nil, invalidParam("output_compression", "output_compression applies to jpeg and webp only; output_format is png (lossless)")
	}
	req.image, req.hasMask = img, gotMask
	if gotMask {
		req.mask = mask
	}
	return req, nil
}
