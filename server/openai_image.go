package server

import (
	"image"
	"slices"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
)

// openAIImageSizes are the sizes the diffusion runners produce by default (SDXL at
// SDXL_IMAGE_RESOLUTION=512 makes 512x512, see modelTable.imageSizes): SDXL base and SD3.5 Large
// both render 1024x1024. "auto" means that size.
var openAIImageSizes = []string{"1024x1024"}

// maxOpenAIImages caps n as the Python server caps number_of_images.
const maxOpenAIImages = 4

// imageGeneration is the one request type of the image routes (generations, image-to-image,
// inpainting), whichever dialect wrote it: HEAD's readers (parseImageRequest,
// readPythonImageInput) and OpenAI's (parseOpenAIImageRequest, parseOpenAIImageInput) fill it,
// handleImages serves it and answerImages writes the answer in its dialect's shape.
type imageGeneration struct {
	imageRequest
	dialect dialect
	// image and mask are the encoded input image and mask of an image-input route (base64
	// already decoded); hasMask: a mask was sent.
	image, mask []byte
	hasMask     bool
	// OpenAI's output options (the OpenAI dialect; HEAD's are imageRequest's ReturnFormat and
	// Quality).
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

// maxEndUser bounds OpenAI's user field (an end-user id) so the access log stays one short line
// (the user tags of openAIImageParams and openAIImageInputParams).
const maxEndUser = 256

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
func parseOpenAIImageRequest(data []byte, defaultSteps, defaultQuality int, models *modelTable) (*imageGeneration, error) {
	if _, err := parseBody(data); err != nil { // not JSON, or not an object
		return nil, err
	}
	var p openAIImageParams
	if err := decodeOpenAI(data, &p); err != nil {
		return nil, err
	}
	if defaultSteps < 12 || defaultSteps > 50 {
		defaultSteps = 20
	}
	sizes := models.imageSizes()
	r := &imageGeneration{dialect: dialectOpenAI, size: sizes[0], outputFormat: "png", compression: defaultQuality, quality: "auto"}
	r.NumberOfImages = 1
	r.NumInferenceSteps = defaultSteps
	r.Prompt = *p.Prompt
	r.model = p.Model
	if err := models.resolve(r.model); err != nil {
		return nil, err
	}
	if p.N != nil {
		r.NumberOfImages = int(*p.N)
	}
	if p.Size != nil && *p.Size != "auto" {
		if !slices.Contains(sizes, *p.Size) {
			return nil, invalidParam("size", "size %q is not supported by this model; accepted: auto, %s", *p.Size, strings.Join(sizes, ", "))
		}
		r.size = *p.Size
	}
	if p.ResponseFormat != nil && *p.ResponseFormat == "url" {
		return nil, invalidParam("response_format", "response_format \"url\" is not supported: this server does not store images; use \"b64_json\"")
	}
	if p.OutputFormat != nil {
		r.outputFormat = *p.OutputFormat
	}
	if p.OutputCompression != nil {
		if r.outputFormat == "png" {
			return nil, invalidParam("output_compression", "output_compression applies to jpeg and webp only; output_format is png (lossless)")
		}
		r.compression = int(*p.OutputCompression)
	}
	if p.Quality != nil {
		switch *p.Quality {
		case "standard", "medium":
			r.quality = "medium"
		case "low":
			r.NumInferenceSteps = stepsLowQuality
			r.quality = "low"
		case "high", "hd":
			r.NumInferenceSteps = stepsHighQuality
			r.quality = "high"
		}
	}
	if p.User != nil {
		r.user = *p.User
	}
	r.stream = p.Stream != nil && bool(*p.Stream)
	if p.PartialImages != nil {
		if *p.PartialImages > 0 && !r.stream {
			return nil, invalidParam("partial_images", "partial_images applies to streamed answers only; send stream: true or leave partial_images out")
		}
		r.PartialImages = int(*p.PartialImages)
	}

	// Extensions.
	if p.NegativePrompt != nil {
		r.NegativePrompt = *p.NegativePrompt
	}
	if p.Seed != nil {
		seed := int64(*p.Seed)
		r.Seed = &seed
	}
	for _, v := range []*laxInt{p.Steps, p.NumInferenceSteps} {
		if v != nil {
			r.NumInferenceSteps = int(*v)
		}
	}
	if p.GuidanceScale != nil {
		r.GuidanceScale = float64(*p.GuidanceScale)
	}
	return r, nil
}

// openAIImageParams is OpenAI's ImageGenerateParams and our extensions, declared: the field
// names, their constraints and the answer to each refusal (decodeOpenAI).
type openAIImageParams struct {
	Prompt            *string `json:"prompt" validate:"required,nonblank" msg:"prompt must be a non-empty string"`
	Model             string  `json:"model"`
	N                 *laxInt `json:"n" validate:"omitnil,min=1,max=4" msg:"n must be between 1 and 4 for this model, got %d"`
	Size              *string `json:"size"` // the model's sizes: checked against the model table
	ResponseFormat    *string `json:"response_format" validate:"omitnil,oneof=b64_json url" msg:"response_format must be \"b64_json\", got %q"`
	OutputFormat      *string `json:"output_format" validate:"omitnil,oneof=png jpeg webp" msg:"output_format %q is not supported; accepted: png, jpeg, webp"`
	OutputCompression *laxInt `json:"output_compression" validate:"omitnil,min=0,max=100" msg:"output_compression must be between 0 and 100, got %d"`
	Quality           *string `json:"quality" validate:"omitnil,oneof=auto standard medium low high hd" msg:"quality must be one of auto, low, medium, high, standard, hd; got %q"`
	// style steers dall-e-3's prompt rewriting, which these models do not have: no value can be
	// honoured.
	Style *string `json:"style" validate:"isdefault" msg:"style %q is not supported: style is a dall-e-3 option and this model has no style control; drop the field"`
	// moderation: this server runs no content moderation at any level. "low" asks for the least
	// filtering: honoured. "auto", OpenAI's default, asks for the provider's default level,
	// which here is none: the same request as one without the field (docs/API.md says no
	// moderation runs).
	Moderation        *string   `json:"moderation" validate:"omitnil,oneof=low auto" msg:"moderation %q is not supported; accepted: auto (the default) or low; this server runs no content moderation at any level"`
	Background        *string   `json:"background" validate:"omitnil,oneof=auto opaque" msg:"background %q is not supported; accepted: auto, opaque"`
	User              *string   `json:"user" validate:"omitnil,max=256" msg:"user must be at most 256 bytes (an end-user id)"`
	Stream            *laxBool  `json:"stream"`
	PartialImages     *laxInt   `json:"partial_images" validate:"omitnil,min=0,max=3" msg:"partial_images must be between 0 and 3, got %d"`
	NegativePrompt    *string   `json:"negative_prompt"`
	Seed              *laxInt   `json:"seed"`
	Steps             *laxInt   `json:"steps" validate:"omitnil,min=12,max=50" msg:"steps must be between 12 and 50, got %d"`
	NumInferenceSteps *laxInt   `json:"num_inference_steps" validate:"omitnil,min=12,max=50" msg:"num_inference_steps must be between 12 and 50, got %d"`
	GuidanceScale     *laxFloat `json:"guidance_scale" validate:"omitnil,min=1,max=20" msg:"guidance_scale must be between 1 and 20, got %g"`
}

// encoder encodes as the request's output_format and output_compression ask.
func (r *imageGeneration) encoder() func(image.Image) ([]byte, error) {
	if r.dialect != dialectOpenAI { // HEAD's image_return_format and image_quality
		return r.imageRequest.encoder()
	}
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
