package server

import (
	"image"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// openAIImageSizes are the sizes the diffusion runners produce by default (SDXL at
// SDXL_IMAGE_RESOLUTION=512 makes 512x512, see modelTable.imageSizes): SDXL base and SD3.5 Large
// both render 1024x1024. "auto" means that size.
var openAIImageSizes = []string{"1024x1024"}

// maxOpenAIImages caps n as the Python server caps number_of_images.
const maxOpenAIImages = 4

// openAIImageRequest is a validated POST /v1/images/generations body.
type openAIImageRequest struct {
	imageRequest
	model        string
	size         string
	outputFormat string // "png", "jpeg" or "webp"
	// compression is output_compression (0..100), or IMAGE_QUALITY when absent: the JPEG or
	// WebP quality.
	compression int
	quality     string // OpenAI's quality value echoed in stream events: low, medium, high or auto
	stream      bool
	// user is OpenAI's end-user id: written to the request's access-log line (endUserKey) for
	// abuse monitoring, nowhere else.
	user string
}

// maxEndUser bounds OpenAI's user field (an end-user id) so the access log stays one short line.
const maxEndUser = 256

// checkEndUser refuses a user id longer than maxEndUser.
func checkEndUser(v string) error {
	if len(v) > maxEndUser {
		return invalidParam("user", "user must be at most %d bytes (an end-user id), got %d", maxEndUser, len(v))
	}
	return nil
}

// errStyle refuses OpenAI's style: vivid and natural steer dall-e-3's prompt rewriting, which
// these models do not have, so no value can be honoured.
func errStyle(v string) error {
	return invalidParam("style", "style %q is not supported: style is a dall-e-3 option and this model has no style control; drop the field", v)
}

// checkModeration accepts OpenAI's two values. This server runs no content moderation, at
// any level. "low" asks for the least filtering: honoured. "auto" is OpenAI's default, what a
// request without the field gets; it asks for the provider's default level, which here is
// none, so it is the same request as one without the field (refusing it while accepting the
// field's absence would refuse OpenAI's own default, as the official SDKs' users write it, for
// no gain). docs/API.md says that no moderation runs; other values are a 400.
func checkModeration(v string) error {
	switch v {
	case "low", "auto":
		return nil
	}
	return invalidParam("moderation", "moderation %q is not supported; accepted: auto (the default) or low; this server runs no content moderation at any level", v)
}

// maxPartialImages is OpenAI's upper bound of partial_images.
const maxPartialImages = 3

// Steps used for OpenAI's quality values; "auto", "standard" and "medium" use
// NUM_INFERENCE_STEPS.
const (
	stepsLowQuality  = 12
	stepsHighQuality = 40
)

// parseOpenAIImageRequest reads OpenAI's ImageGenerateParams plus our extensions:
//
//   - prompt (required, non-empty), n 1..4, size "auto" or one of openAIImageSizes;
//   - model: a name of the loaded model (see modelTable) or absent;
//   - response_format: "b64_json" or absent; "url" is refused (we do not store images);
//   - output_format: "png" (default, as OpenAI), "jpeg" or "webp" (lossy through libwebp;
//     lossless from the pure-Go twin when libwebp is absent);
//   - output_compression 0..100: the JPEG (0 counts as 1) or WebP quality; absent →
//     IMAGE_QUALITY; ignored for png, as OpenAI ignores it;
//   - quality: low → 12 steps, high and hd → 40, auto/standard/medium → NUM_INFERENCE_STEPS;
//   - style: refused (400, param style; a dall-e-3 option these models lack); moderation: "auto"
//     (the default) or "low", both meaning no moderation (none runs here); user: an end-user id of at most 256 bytes,
//     written to the request's access-log line;
//   - background: auto or opaque; transparent is refused (the models render no alpha);
//   - stream: true answers Server-Sent Events (see streamOpenAIImage); partial_images 0..3 is
//     the number of previews per image a streaming request gets (ignored without stream);
//   - extensions: negative_prompt, seed, steps or num_inference_steps (12..50, override
//     quality), guidance_scale (1..20; absent: the model's default, SDXL 5.0, SD3.5 3.5).
func parseOpenAIImageRequest(data []byte, defaultSteps, defaultQuality int, models *modelTable) (*openAIImageRequest, error) {
	b, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	if defaultSteps < 12 || defaultSteps > 50 {
		defaultSteps = 20
	}
	sizes := models.imageSizes()
	r := &openAIImageRequest{size: sizes[0], outputFormat: "png", compression: defaultQuality, quality: "auto"}
	r.NumberOfImages = 1
	r.NumInferenceSteps = defaultSteps

	prompt, ok := b.str("prompt", true)
	if err := b.err(); err != nil {
		return nil, err
	}
	if !ok || strings.TrimSpace(prompt) == "" {
		return nil, invalidParam("prompt", "prompt must be a non-empty string")
	}
	r.Prompt = prompt
	if r.model, _ = b.str("model", false); b.err() == nil {
		if err := models.resolve(r.model); err != nil {
			return nil, err
		}
	}
	if v := b.int("n"); v != nil {
		if *v < 1 || *v > maxOpenAIImages {
			return nil, invalidParam("n", "n must be between 1 and %d for this model, got %d", maxOpenAIImages, *v)
		}
		r.NumberOfImages = int(*v)
	}
	if v, ok := b.str("size", false); ok && v != "auto" {
		if !slices.Contains(sizes, v) {
			return nil, invalidParam("size", "size %q is not supported by this model; accepted: auto, %s", v, strings.Join(sizes, ", "))
		}
		r.size = v
	}
	if v, ok := b.str("response_format", false); ok {
		switch v {
		case "b64_json":
		case "url":
			return nil, invalidParam("response_format", "response_format \"url\" is not supported: this server does not store images; use \"b64_json\"")
		default:
			return nil, invalidParam("response_format", "response_format must be \"b64_json\", got %q", v)
		}
	}
	if v, ok := b.str("output_format", false); ok {
		switch v {
		case "png", "jpeg", "webp":
			r.outputFormat = v
		default:
			return nil, invalidParam("output_format", "output_format %q is not supported; accepted: png, jpeg, webp", v)
		}
	}
	if v := b.int("output_compression"); v != nil {
		if *v < 0 || *v > 100 {
			return nil, invalidParam("output_compression", "output_compression must be between 0 and 100, got %d", *v)
		}
		r.compression = int(*v)
	}
	if v, ok := b.str("quality", false); ok {
		switch v {
		case "auto":
		case "standard", "medium":
			r.quality = "medium"
		case "low":
			r.NumInferenceSteps = stepsLowQuality
			r.quality = "low"
		case "high", "hd":
			r.NumInferenceSteps = stepsHighQuality
			r.quality = "high"
		default:
			return nil, invalidParam("quality", "quality must be one of auto, low, medium, high, standard, hd; got %q", v)
		}
	}
	if v, ok := b.str("style", false); ok {
		return nil, errStyle(v)
	}
	if v, ok := b.str("moderation", false); ok {
		if err := checkModeration(v); err != nil {
			return nil, err
		}
	}
	if v, ok := b.str("background", false); ok && v != "auto" && v != "opaque" {
		return nil, invalidParam("background", "background %q is not supported; accepted: auto, opaque", v)
	}
	if v, ok := b.str("user", false); ok {
		if err := checkEndUser(v); err != nil {
			return nil, err
		}
		r.user = v
	}
	r.stream = b.bool("stream", false)
	if v := b.int("partial_images"); v != nil {
		if *v < 0 || *v > maxPartialImages {
			return nil, invalidParam("partial_images", "partial_images must be between 0 and %d, got %d", maxPartialImages, *v)
		}
		if *v > 0 && !r.stream {
			return nil, invalidParam("partial_images", "partial_images applies to streamed answers only; send stream: true or leave partial_images out")
		}
		r.PartialImages = int(*v)
	}
	if b.int("output_compression") != nil && r.outputFormat == "png" {
		return nil, invalidParam("output_compression", "output_compression applies to jpeg and webp only; output_format is png (lossless)")
	}

	// Extensions.
	r.NegativePrompt, _ = b.str("negative_prompt", false)
	if v := b.int("seed"); v != nil {
		r.Seed = v
	}
	for _, name := range []string{"steps", "num_inference_steps"} {
		if v := b.int(name); v != nil {
			if *v < 12 || *v > 50 {
				return nil, invalidParam(name, "%s must be between 12 and 50, got %d", name, *v)
			}
			r.NumInferenceSteps = int(*v)
		}
	}
	if v := b.float("guidance_scale", false); v != nil {
		if *v < 1 || *v > 20 {
			return nil, invalidParam("guidance_scale", "guidance_scale must be between 1 and 20, got %g", *v)
		}
		r.GuidanceScale = *v
	}
	if err := b.err(); err != nil {
		return nil, err
	}
	return r, nil
}

// encoder encodes as the request's output_format and output_compression ask.
func (r *openAIImageRequest) encoder() func(image.Image) ([]byte, error) {
	q := r.compression
	switch r.outputFormat {
	case "jpeg":
		q = max(1, q) // JPEG quality starts at 1, as Pillow clamps 0
		return func(img image.Image) ([]byte, error) { return imaging.Encode(img, imaging.JPEG, q) }
	case "webp":
		return func(img image.Image) ([]byte, error) { return imaging.Encode(img, imaging.WebP, q) }
	}
	return imaging.EncodePNG
}

// openAIImage is one entry of ImagesResponse.data (revised_prompt is dall-e-3 only and
// never set here, so it is left out).
type openAIImage struct {
	B64JSON string `json:"b64_json"`
}

// openAIImagesResponse is OpenAI's ImagesResponse. usage is left out: diffusion models are
// not billed in tokens.
type openAIImagesResponse struct {
	Created      int64         `json:"created"`
	Data         []openAIImage `json:"data"`
	Background   string        `json:"background"`
	OutputFormat string        `json:"output_format"`
	Size         string        `json:"size"`
}

// handleOpenAIImage serves POST /v1/images/generations.
func (s *Server) handleOpenAIImage(models *modelTable) handlerFunc {
	return func(c *gin.Context, in *request) {
		req, err := parseOpenAIImageRequest(in.data, s.cfg.NumInferenceSteps, s.cfg.ImageQuality, models)
		if err != nil {
			s.fail(c, dialectOpenAI, err)
			return
		}
		setEndUser(c, req.user)
		if req.GuidanceScale == 0 { // not sent (1..20 when sent): the model's default
			req.GuidanceScale = runners.DefaultGuidance(s.pool(runners.ServiceImage).Runner)
		}
		if err := s.refuseUnguided(&req.ImageRequest); err != nil {
			s.fail(c, dialectOpenAI, err)
			return
		}
		encode := req.encoder()
		if req.stream {
			s.streamOpenAIImage(c, req, encode)
			return
		}
		s.answerOpenAIImages(c, req, encode)
	}
}

// answerOpenAIImages generates the request's images and answers OpenAI's ImagesResponse, or
// its error in OpenAI's envelope.
func (s *Server) answerOpenAIImages(c *gin.Context, req *openAIImageRequest, encode func(image.Image) ([]byte, error)) {
	images, err := s.generateWith(c.Request.Context(), &req.imageRequest, encode)
	if err != nil {
		s.fail(c, dialectOpenAI, err)
		return
	}
	if s.metrics != nil {
		s.metrics.Images(s.pool(runners.ServiceImage).Runner, len(images), req.NumInferenceSteps)
	}
	resp := openAIImagesResponse{Created: time.Now().Unix(), Background: "opaque",
		OutputFormat: req.outputFormat, Size: req.size, Data: make([]openAIImage, len(images))}
	for i, img := range images {
		resp.Data[i].B64JSON = img
	}
	writeJSON(c, http.StatusOK, resp)
}
