package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// maxPromptChars bounds prompts. The text encoders see at most 77 CLIP tokens (T5: 256 for
// SD3.5); longer prompts are truncated by the tokenizer as diffusers does, so this cap only
// keeps absurd inputs (megabytes of text) away from the tokenizer.
const maxPromptChars = 4096

// imageRequest is a validated POST /image/generations body.
type imageRequest struct {
	runners.ImageRequest
	NumberOfImages int
}

// parseImageRequest validates the body like the Python server's ImageGenerateRequest.
func parseImageRequest(data []byte, defaultSteps int) (*imageRequest, error) {
	b, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	r := &imageRequest{NumberOfImages: 1}
	r.NumInferenceSteps = defaultSteps
	if defaultSteps < 12 || defaultSteps > 50 {
		r.NumInferenceSteps = 20
	}
	r.Prompt, _ = b.strMax("prompt", true, maxPromptChars)
	r.NegativePrompt, _ = b.strMax("negative_prompt", false, maxPromptChars)
	r.Prompt2, _ = b.strMax("prompt_2", false, maxPromptChars)
	r.NegativePrompt2, _ = b.strMax("negative_prompt_2", false, maxPromptChars)
	if v := b.int("num_inference_steps"); v != nil {
		if b.rangeCheck("num_inference_steps", float64(*v), 12, 50, false, rawInput(b, "num_inference_steps")) {
			r.NumInferenceSteps = int(*v)
		}
	}
	if v := b.int("seed"); v != nil {
		r.Seed = v
	}
	if v := b.float("guidance_scale", true); v != nil {
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
	if err := b.err(); err != nil {
		return nil, err
	}
	return r, nil
}

func rawInput(b *body, name string) any {
	v, _ := b.value(name)
	return v
}

// handleImage serves POST /image/generations: {"images": [base64 JPEG, ...]}.
func (s *Server) handleImage(c *gin.Context) {
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		s.fail(c, bodyErr(err))
		return
	}
	req, err := parseImageRequest(data, s.cfg.NumInferenceSteps)
	if err != nil {
		s.fail(c, err)
		return
	}
	if req.Timesteps != nil && req.Sigmas != nil {
		s.fail(c, httpErr(http.StatusBadRequest, "Cannot pass both timesteps and sigmas. Choose one."))
		return
	}
	images, err := s.generate(c.Request.Context(), req)
	if err != nil {
		s.fail(c, err)
		return
	}
	if s.metrics != nil {
		s.metrics.Images(s.pool(runners.ServiceImage).Runner, len(images), req.NumInferenceSteps)
	}
	c.JSON(http.StatusOK, gin.H{"images": images})
}

// generate fans number_of_images out to parallel single-image jobs (seed+i when a seed is
// given, as the Python server does), encodes each image, and returns them in order. The first
// failure cancels the other jobs instead of letting them waste device time.
func (s *Server) generate(ctx context.Context, req *imageRequest) ([]string, error) {
	return s.generateWith(ctx, req, s.encodeConfigured)
}

// generateWith is generate with the caller's image encoder (the OpenAI route encodes as the
// request's output_format asks).
func (s *Server) generateWith(ctx context.Context, req *imageRequest, encode func(image.Image) ([]byte, error)) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := req.NumberOfImages
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
	res, ok := v.(*runners.ImageResult)
	if !ok || len(res.Images) == 0 {
		return "", fmt.Errorf("runner returned %T instead of an image", v)
	}
	enc, err := encode(res.Images[0])
	if err != nil {
		return "", fmt.Errorf("encode image: %w", err)
	}
	return base64.StdEncoding.EncodeToString(enc), nil
}

// encodeConfigured encodes as IMAGE_RETURN_FORMAT and IMAGE_QUALITY say.
func (s *Server) encodeConfigured(img image.Image) ([]byte, error) {
	if strings.EqualFold(s.cfg.ImageReturnFormat, "PNG") {
		return imaging.EncodePNG(img)
	}
	return imaging.EncodeJPEG(img, s.cfg.ImageQuality)
}
