package runners

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// probeDeepSteps is a deep image probe's denoising steps: a full-size request (the Python
// server's NUM_INFERENCE_STEPS default).
const probeDeepSteps = 20

// ProbeRequest is the canary monitor's probe for a runner of service svc: a real request of
// the runner's smallest shape (shallow: the Python runners' one-step warm-up; 1 s of audio; one
// 224x224 image), or with deep a full-size one (20 denoising steps, 10 s of audio). check
// tells a good answer from a bad one.
func ProbeRequest(runner string, svc Service, deep bool) (req Request, check func(Result) error) {
	switch svc {
	case ServiceImage:
		seed := int64(0)
		r := &ImageRequest{Prompt: "Sunrise on a beach", NegativePrompt: "low resolution", NumInferenceSteps: 1,
			Seed: &seed, GuidanceScale: DefaultGuidance(runner)}
		if m, _ := catalogue.Resolve(runner, svc); m.Image.Input != catalogue.InputNone {
			// As their warm-up: a 1x1 picture, 2 steps at strength 0.99 (one denoising step).
			r.NumInferenceSteps, r.Strength = 2, 0.99
			r.InitImage = image.NewNRGBA(image.Rect(0, 0, 1, 1))
			if m.Image.Input == catalogue.InputInpaint {
				r.Mask = &image.Gray{Pix: []uint8{255}, Stride: 1, Rect: image.Rect(0, 0, 1, 1)}
			}
		}
		if deep {
			r.NumInferenceSteps = probeDeepSteps
		}
		return r, checkImage
	case ServiceAudio:
		secs := 1.0
		if deep {
			secs = 10
		}
		n := int(secs * 16000)
		samples := make([]float32, n)
		for i := range samples { // a quiet 440 Hz tone: a real encoder input, not all zeros
			samples[i] = float32(0.1 * math.Sin(2*math.Pi*440*float64(i)/16000))
		}
		return &AudioRequest{Samples: samples, SampleRate: 16000, Duration: secs, Language: "en"}, checkTranscript
	case ServiceCNN:
		img := image.NewRGBA(image.Rect(0, 0, 224, 224))
		for y := range 224 {
			for x := range 224 {
				img.SetRGBA(x, y, color.RGBA{uint8(x), uint8(y), 128, 255})
			}
		}
		return &CNNRequest{Image: img, TopK: 1}, checkClasses
	case ServiceTextToSpeech:
		return speechProbe(deep)
	case ServiceVideo:
		// One step of a tiny clip: a video job's full size takes minutes of device time.
		return &VideoRequest{Prompt: "canary", Steps: 1, Width: 16, Height: 16, Frames: 2}, checkVideo
	}
	return nil, func(Result) error { return fmt.Errorf("no probe for service %q", svc) }
}

func checkImage(v Result) error {
	res, ok := ResultAs[*ImageResult](v)
	if !ok || res == nil || len(res.Images) == 0 || res.Images[0] == nil || res.Images[0].Bounds().Empty() {
		return fmt.Errorf("canary probe: the runner answered %T without an image", v)
	}
	return nil
}

func checkTranscript(v Result) error {
	if res, ok := ResultAs[*TranscriptionResult](v); !ok || res == nil {
		return fmt.Errorf("canary probe: the runner answered %T instead of a transcription", v)
	}
	return nil
}

func checkClasses(v Result) error {
	res, ok := ResultAs[*CNNResult](v)
	if !ok || res == nil || len(res.Top) == 0 {
		return fmt.Errorf("canary probe: the runner answered %T without a class", v)
	}
	if p := res.Top[0].Probability; !(p >= 0 && p <= 1) {
		return errors.New("canary probe: the top class's probability is not in [0, 1]")
	}
	return nil
}

func checkVideo(v Result) error {
	r, ok := ResultAs[*VideoResult](v)
	if !ok || len(r.Frames) == 0 || r.Width <= 0 || r.Height <= 0 || len(r.Frames[0]) != r.Width*r.Height*3 {
		return fmt.Errorf("probe: malformed video result %T", v)
	}
	return nil
}
