package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
)

// HEAD's client-facing video bounds (config/constants.py) and Wan's frame count.
const (
	minVideoSteps     = 4
	maxVideoSteps     = 50
	defaultVideoSteps = 20
)

// videoInput is a video request in either dialect, before the model's policy.
type videoInput struct {
	prompt, negative string
	steps            *int64
	seed             *int64
	aspect           string
	duration         *int64
	images           []videoImageIn
	// OpenAI's seconds and size ("" = the model's own).
	seconds, size string
	// i2vRoute: the request came through an I2V route (image_prompts, the upload).
	i2vRoute bool
}

type videoImageIn struct {
	data     []byte
	framePos int64
	field    string // the field that carried it, for messages
}

// pythonVideoFields are HEAD's VideoGenerateRequest fields; i2v adds image_prompts.
var pythonVideoFields = []string{"prompt", "negative_prompt", "num_inference_steps", "seed", "aspect_ratio", "duration_seconds"}

// parsePythonVideo reads HEAD's JSON body (VideoGenerateRequest or, i2v, VideoI2VGenerateRequest):
// type errors and unknown fields are FastAPI's 422.
func parsePythonVideo(data []byte, i2v bool) (*videoInput, error) {
	b, err := parseBody(data)
	if err != nil {
		return nil, err
	}
	fields := pythonVideoFields
	if i2v {
		fields = append(slices.Clone(fields), "image_prompts")
	}
	b.forbidExtra(fields)
	in := &videoInput{i2vRoute: i2v}
	in.prompt, _ = b.str("prompt", true)
	in.negative, _ = b.str("negative_prompt", false)
	in.steps = b.int("num_inference_steps")
	in.seed = b.int("seed")
	in.aspect, _ = b.str("aspect_ratio", false)
	in.duration = b.int("duration_seconds")
	if in.duration != nil {
		b.rangeCheck("duration_seconds", float64(*in.duration), 1, 60, false, *in.duration)
	}
	if i2v {
		raw, ok := b.raw["image_prompts"]
		if !ok {
			b.missing("image_prompts")
		} else {
			var entries []map[string]json.RawMessage
			if err := json.Unmarshal(raw, &entries); err != nil {
				b.add("list_type", []any{"image_prompts"}, "Input should be a valid list of objects", nil, nil)
			}
			for i, e := range entries {
				loc := []any{"image_prompts", i}
				for k := range e {
					if k != "image" && k != "frame_pos" {
						b.add("extra_forbidden", append(slices.Clone(loc), k), "Extra inputs are not permitted", nil, nil)
					}
				}
				var s string
				if err := json.Unmarshal(e["image"], &s); err != nil || s == "" {
					b.add("string_type", append(slices.Clone(loc), "image"), "image: a non-empty base64 string is required", nil, nil)
					continue
				}
				if len(s) > maxBase64VideoImage {
					b.add("string_too_long", append(slices.Clone(loc), "image"), fmt.Sprintf("image: at most %d base64 characters", maxBase64VideoImage), nil, nil)
					continue
				}
				img, err := decodeBase64(s)
				if err != nil {
					b.add("value_error", append(slices.Clone(loc), "image"), "Value error, image could not be decoded to a valid PIL image (supported formats: PNG, JPEG, WebP, etc.)", nil, nil)
					continue
				}
				var pos int64
				if fp, ok := e["frame_pos"]; ok && string(fp) != "null" {
					if err := json.Unmarshal(fp, &pos); err != nil {
						b.add("int_type", append(slices.Clone(loc), "frame_pos"), "Input should be a valid integer", nil, nil)
					}
				}
				in.images = append(in.images, videoImageIn{data: img, framePos: pos, field: fmt.Sprintf("image_prompts[%d]", i)})
			}
			if len(entries) == 0 && err == nil {
				b.add("too_short", []any{"image_prompts"}, "List should have at least 1 item after validation, not 0", nil, nil)
			}
		}
	}
	if err := b.err(); err != nil {
		return nil, err
	}
	return in, nil
}

// maxBase64VideoImage is HEAD's MAX_BASE64_IMAGE_LEN.
const maxBase64VideoImage = 10_000_000

// videoRefusal is a policy refusal naming field: HEAD's 422 (a pydantic validator's
// ValueError) in the Python dialect, OpenAI's 400 with param in the other.
func videoRefusal(d dialect, field, format string, args ...any) error {
	msg := field + ": " + fmt.Sprintf(format, args...)
	if d == dialectOpenAI {
		return invalidParam(field, "%s", msg)
	}
	return httpErr(http.StatusUnprocessableEntity, "%s", msg)
}

// videoRequest applies the model's policy (HEAD's validators and runners) to in: steps
// 4-50 or the model's forced count, I2V-only deployments, MiniMax's aspect ratios and
// durations, frame positions 0 to frames-1 and distinct, a random seed when none was given.
func (s *Server) videoRequest(in *videoInput, d dialect) (*runners.VideoRequest, videoParams, error) {
	runner := s.pool(runners.ServiceVideo).Runner
	m, ok := runners.Lookup(runner, s.cfg)
	if !ok || m.Video == nil {
		return nil, videoParams{}, httpErr(http.StatusServiceUnavailable, "no video model is served")
	}
	spec := *m.Video
	var p videoParams
	if strings.TrimSpace(in.prompt) == "" && d == dialectOpenAI {
		return nil, p, videoRefusal(d, "prompt", "a prompt is required")
	}
	steps := int64(defaultVideoSteps)
	if in.steps != nil {
		steps = *in.steps
		if steps < minVideoSteps || steps > maxVideoSteps {
			return nil, p, videoRefusal(d, "num_inference_steps", "must be %d-%d, got %d", minVideoSteps, maxVideoSteps, steps)
		}
	}
	if spec.ForcedSteps > 0 {
		steps = int64(spec.ForcedSteps) // HEAD: the model always runs its own count
	}
	if spec.I2V && len(in.images) == 0 {
		field := "image_prompts"
		if d == dialectOpenAI {
			field = "input_reference"
		}
		return nil, p, videoRefusal(d, field, "this deployment (%s) requires image conditioning. Use POST /v1/videos/generations/i2v with at least one image_prompts entry, or POST /v1/videos/generations/i2v/upload to send the image as a file", runner)
	}
	if !spec.I2V && len(in.images) > 0 {
		field := "image_prompts"
		if d == dialectOpenAI {
			field = "input_reference"
		}
		return nil, p, videoRefusal(d, field, "%s is a text-to-video model and takes no conditioning image", runner)
	}
	chips := 1
	if len(s.cfg.DeviceGroups) > 0 {
		chips = s.cfg.DeviceMeshShape.Chips()
	}
	w, h := spec.Size(chips)
	frames := spec.Frames
	scale := 1
	if (s.cfg.Mock || s.cfg.DeviceBackend == config.BackendPython) && s.cfg.Video.MockScale > 1 {
		// MOCK_VIDEO_SCALE: the simulated clip (or, on Python workers, the clip asked of the
		// runner: the test fakes make it) is this much smaller
		scale = s.cfg.Video.MockScale
	}
	if len(spec.AspectRatios) > 0 {
		a := spec.DefaultAspect
		if in.aspect != "" {
			var err error
			if a, err = parseAspect(in.aspect, spec.AspectRatios); err != nil {
				return nil, p, videoRefusal(d, "aspect_ratio", "%v", err)
			}
		}
		w, h = spec.AspectSize(a)
		w, h = max(2, w/scale/2*2), max(2, h/scale/2*2)
		dur := spec.DefaultDuration
		if in.duration != nil {
			if !slices.Contains(spec.Durations, int(*in.duration)) {
				return nil, p, videoRefusal(d, "duration_seconds", "must be an integer from %d to %d; got %d", spec.Durations[0], spec.Durations[len(spec.Durations)-1], *in.duration)
			}
			dur = int(*in.duration)
		}
		frames = spec.DurationFrames(dur)
		p.AspectRatio, p.DurationSeconds = fmt.Sprintf("%d:%d", a[0], a[1]), dur
	} else {
		w, h = max(2, w/scale/2*2), max(2, h/scale/2*2)
		if in.aspect != "" && in.aspect != aspectOf(w, h) {
			return nil, p, videoRefusal(d, "aspect_ratio", "%s serves %dx%d (%s) only", runner, w, h, aspectOf(w, h))
		}
		if in.duration != nil && int(*in.duration) != secondsOf(frames, spec.FPS) {
			return nil, p, videoRefusal(d, "duration_seconds", "%s serves %d frames at %d fps (%d s) only", runner, frames, spec.FPS, secondsOf(frames, spec.FPS))
		}
	}
	if in.seconds != "" && in.seconds != strconv.Itoa(secondsOf(frames, spec.FPS)) {
		return nil, p, videoRefusal(d, "seconds", "%s makes %d frames at %d fps: seconds must be %q (or left out)", runner, frames, spec.FPS, strconv.Itoa(secondsOf(frames, spec.FPS)))
	}
	if in.size != "" && in.size != fmt.Sprintf("%dx%d", w, h) {
		return nil, p, videoRefusal(d, "size", "%s serves %dx%d on this deployment: size must be %q (or left out)", runner, w, h, fmt.Sprintf("%dx%d", w, h))
	}
	req := &runners.VideoRequest{Prompt: in.prompt, NegativePrompt: in.negative, Steps: int(steps), Width: w, Height: h, Frames: frames}
	seen := map[int64]bool{}
	for _, im := range in.images {
		if im.framePos < 0 || im.framePos >= int64(frames) {
			return nil, p, videoRefusal(d, im.field+".frame_pos", "must be 0-%d, got %d", frames-1, im.framePos)
		}
		if seen[im.framePos] {
			return nil, p, videoRefusal(d, im.field+".frame_pos", "duplicate frame_pos=%d; each image must target a distinct frame", im.framePos)
		}
		seen[im.framePos] = true
		img, _, err := imaging.DecodeRGBWith(im.data, imaging.DecodeOptions{MaxPixels: maxImagePixels})
		if err != nil {
			return nil, p, videoRefusal(d, im.field, "image could not be decoded (PNG, JPEG or WebP): %v", err)
		}
		req.Images = append(req.Images, runners.VideoImage{Image: img, FramePos: int(im.framePos)})
		p.FramePositions = append(p.FramePositions, int(im.framePos))
	}
	if in.seed != nil {
		req.Seed = *in.seed
	} else {
		req.Seed, p.SeedGenerated = rand.Int64N(1<<32), true // reported in the job
	}
	p.Prompt, p.NegativePrompt, p.Steps, p.Seed = in.prompt, in.negative, req.Steps, req.Seed
	p.Width, p.Height, p.Frames, p.FPS = w, h, frames, spec.FPS
	p.Seconds, p.Size = strconv.Itoa(secondsOf(frames, spec.FPS)), fmt.Sprintf("%dx%d", w, h)
	return req, p, nil
}

// secondsOf is a clip's length in whole seconds (rounded).
func secondsOf(frames, fps int) int { return (frames + fps/2) / max(fps, 1) }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func aspectOf(w, h int) string {
	g := max(gcd(w, h), 1)
	return fmt.Sprintf("%d:%d", w/g, h/g)
}

// parseAspect reads "16:9" and accepts only the served ratios (HEAD's
// minimax_h3_parse_aspect_ratio).
func parseAspect(v string, served [][2]int) ([2]int, error) {
	var list []string
	for _, a := range served {
		list = append(list, fmt.Sprintf("%d:%d", a[0], a[1]))
	}
	parts := strings.Split(strings.TrimSpace(v), ":")
	if len(parts) == 2 {
		w, err1 := strconv.Atoi(strings.TrimSpace(parts[0]))
		h, err2 := strconv.Atoi(strings.TrimSpace(parts[1]))
		if err1 == nil && err2 == nil {
			for _, a := range served {
				if a == [2]int{w, h} {
					return a, nil
				}
			}
			return [2]int{}, fmt.Errorf("aspect ratio %d:%d is not served; supported: %s", w, h, strings.Join(list, ", "))
		}
	}
	return [2]int{}, fmt.Errorf("%q is not W:H; supported: %s", v, strings.Join(list, ", "))
}
