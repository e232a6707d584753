package server

// The image routes, one handler for all of them: POST /v1/images/generations and its legacy
// twin /image/generations, and the image-input routes of image-to-image and inpainting runners
// (image_edit.go). Each request is read by its dialect's reader into the one request type
// (imageGeneration), checked against the model's policy, run, and answered by one writer that
// picks the shape from the dialect: HEAD's {"images", "generation_time"} (/generations) or
// {"images"} (image input), or OpenAI's ImagesResponse (or its Server-Sent Events with stream).

import (
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// handleImages serves an image route: generations when input is nil, else the image-input
// route input. models answers OpenAI's model names (nil on a legacy route, which speaks HEAD's
// dialect only).
func (s *Server) handleImages(input *imageInputRoute, models *modelTable) handlerFunc {
	return func(c *gin.Context, in *request) {
		req, err := s.readImages(c, in, input, models)
		if err != nil {
			s.fail(c, in.dialect, err)
			return
		}
		setEndUser(c, req.user)
		ctx := c.Request.Context()
		if err := s.checkImages(req); err != nil {
			s.fail(c, req.dialect, err)
			return
		}
		if input != nil {
			release, err := s.decodeInputs(ctx, &req.ImageRequest, req.image, req.mask, req.hasMask, req.dialect == dialectOpenAI)
			if err != nil {
				s.fail(c, req.dialect, err)
				return
			}
			defer release()
		}
		if err := s.resolveLoRA(ctx, &req.ImageRequest); err != nil {
			s.fail(c, req.dialect, err)
			return
		}
		if req.stream {
			s.streamOpenAIImage(c, req, req.encoder())
			return
		}
		s.answerImages(c, req, input == nil)
	}
}

// readImages reads the body with its dialect's reader into the route's request type.
func (s *Server) readImages(c *gin.Context, in *request, input *imageInputRoute, models *modelTable) (*imageGeneration, error) {
	runner := s.pool(runners.ServiceImage).Runner
	switch {
	case in.dialect == dialectOpenAI && input != nil:
		return parseOpenAIImageInput(in, c.GetHeader("Content-Type"), *input, s.cfg.NumInferenceSteps, s.cfg.ImageQuality, models)
	case in.dialect == dialectOpenAI:
		req, err := parseOpenAIImageRequest(in.data, s.cfg.NumInferenceSteps, s.cfg.ImageQuality, models)
		if err != nil {
			return nil, err
		}
		if req.GuidanceScale == 0 { // not sent (1..20 when sent): the model's default
			req.GuidanceScale = runners.DefaultGuidance(runner)
		}
		return req, nil
	}
	d := imageDefaults{steps: s.cfg.NumInferenceSteps, runner: runner, format: s.cfg.ImageReturnFormat, quality: s.cfg.ImageQuality}
	if input != nil {
		return readPythonImageInput(in, *input, d)
	}
	r, err := parseImageRequest(in.data, d)
	if err != nil {
		return nil, err
	}
	return &imageGeneration{imageRequest: *r, dialect: dialectPython}, nil
}

// checkImages refuses what the model would not use: both a custom schedule of timesteps and
// one of sigmas, the fields its policy refuses (refuseUnusedFields) and the guidance fields of
// a request that turns guidance off (refuseUnguided).
func (s *Server) checkImages(req *imageGeneration) error {
	if req.Timesteps != nil && req.Sigmas != nil {
		return httpErr(http.StatusBadRequest, "Cannot pass both timesteps and sigmas. Choose one.")
	}
	if err := s.refuseUnusedFields(&req.ImageRequest); err != nil {
		return err
	}
	return s.refuseUnguided(&req.ImageRequest)
}

// answerImages generates the request's images and answers them in its dialect's shape: OpenAI's
// ImagesResponse; HEAD's {"images", "generation_time"} (timed: /generations) or {"images"}
// (HEAD's /image-to-image and /edits send no time); or the error in the dialect's envelope.
func (s *Server) answerImages(c *gin.Context, req *imageGeneration, timed bool) {
	start := time.Now()
	images, err := s.generateWith(c.Request.Context(), &req.imageRequest, req.encoder())
	if err != nil {
		s.fail(c, req.dialect, err)
		return
	}
	if s.metrics != nil {
		s.metrics.Images(s.pool(runners.ServiceImage).Runner, len(images), req.NumInferenceSteps)
	}
	switch {
	case req.dialect == dialectOpenAI:
		resp := openAIImagesResponse{Created: time.Now().Unix(), Background: "opaque",
			OutputFormat: req.outputFormat, Size: req.size, Data: make([]openAIImage, len(images))}
		for i, img := range images {
			resp.Data[i].B64JSON = img
		}
		writeJSON(c, http.StatusOK, resp)
	case timed:
		writeJSON(c, http.StatusOK, imageGenerateResponse{Images: images, GenerationTime: math.Round(time.Since(start).Seconds()*100) / 100})
	default:
		writeJSON(c, http.StatusOK, imageInputResponse{Images: images})
	}
}

// imageGenerateResponse is HEAD's /generations answer: the images and the seconds they took
// (rounded to 2 decimals, as Python's round(t, 2)).
type imageGenerateResponse struct {
	Images         []string `json:"images"`
	GenerationTime float64  `json:"generation_time"`
}

// imageInputResponse is HEAD's /image-to-image and /edits answer: the images only.
type imageInputResponse struct {
	Images []string `json:"images"`
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
