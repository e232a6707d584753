package bench

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Kind names a built-in workload.
type Kind string

const (
	// KindImage posts {"prompt", "guidance_scale", "number_of_images"} to /image/generations.
	KindImage Kind = "image"
	// KindAudio posts {"file": base64 WAV, "stream"} to /audio/transcriptions.
	KindAudio Kind = "audio"
	// KindCNN posts {"prompt": base64 image} to /cnn/search-image.
	KindCNN Kind = "cnn"
	// KindLiveness sends GET /tt-liveness (no auth, no body): the pure HTTP path.
	KindLiveness Kind = "liveness"
)

// WorkloadSpec describes what each request of a run sends.
type WorkloadSpec struct {
	Kind Kind `json:"kind"`
	// Path overrides the route (e.g. /v1/images/generations).
	Path string `json:"path,omitempty"`
	// Images per image request (number_of_images, 1..4).
	Images int `json:"images,omitempty"`
	// GuidanceScale and Steps of image requests (0: server default for steps, 5 for guidance).
	GuidanceScale float64 `json:"guidance_scale,omitempty"`
	Steps         int     `json:"num_inference_steps,omitempty"`
	// AudioSeconds of generated audio (a 16 kHz mono PCM16 WAV) when File is empty.
	AudioSeconds float64 `json:"audio_seconds,omitempty"`
	// Stream asks for NDJSON streaming (audio) and measures time to first chunk.
	Stream bool `json:"stream,omitempty"`
	// Preprocess sets is_preprocessing_enabled for audio (nil: server default).
	Preprocess *bool `json:"is_preprocessing_enabled,omitempty"`
	// File is an audio file (audio) or image file (cnn) to send instead of generated input.
	File string `json:"file,omitempty"`
	// Words and Voice of speech requests (defaults 20 and alloy).
	Words int    `json:"words,omitempty"`
	Voice string `json:"voice,omitempty"`
	// Poll is the interval at which a video job is polled (0: 50 ms).
	Poll time.Duration `json:"poll,omitempty"`
}

// Workload is a prepared request template.
type Workload struct {
	Spec        WorkloadSpec
	Method      string
	Path        string
	ContentType string
	// Auth says whether the route needs the Authorization header.
	Auth bool
	// UnitName is what Units counts: "images" (generated or classified), "audio_s" or "".
	UnitName string
	// unitsPerOK is the units a successful response carries when they are known up front
	// (audio seconds of the request); 0 means count them from the response.
	unitsPerOK float64
	body       func(i int) []byte
	// job: a 202 answer names a job, followed to its end (followJob).
	job bool
}

// Body returns the body of the i-th request (nil for GET).
func (w *Workload) Body(i int) []byte {
	if w.body == nil {
		return nil
	}
	return w.body(i)
}

// Units returns the work units a successful response carried: images in {"images": [...]}
// (or an OpenAI {"data": [...]}), one classified image, or the audio seconds sent. A body
// that cannot be parsed counts 0.
func (w *Workload) Units(body []byte) float64 {
	switch {
	case w.unitsPerOK > 0:
		return w.unitsPerOK
	case w.UnitName == "images":
		var r struct {
			Images []json.RawMessage `json:"images"`
			Data   []json.RawMessage `json:"data"` // OpenAI-shaped /v1 responses
		}
		if json.Unmarshal(body, &r) != nil {
			return 0
		}
		return float64(len(r.Images) + len(r.Data))
	}
	return 0
}

// NewWorkload prepares spec.
func NewWorkload(spec WorkloadSpec) (*Workload, error) {
	w := &Workload{Spec: spec, Method: http.MethodPost, ContentType: "application/json", Auth: true}
	switch spec.Kind {
	case KindImage:
		w.Path, w.UnitName = "/image/generations", "images"
		n := spec.Images
		if n == 0 {
			n = 1
		}
		if n < 1 || n > 4 {
			return nil, fmt.Errorf("%w: images per request must be 1..4, got %d", ErrConfig, n)
		}
		g := spec.GuidanceScale
		if g == 0 {
			g = 5
		}
		w.body = func(i int) []byte {
			req := map[string]any{
				"prompt":           "tt-media-bench request " + strconv.Itoa(i) + ": a lighthouse on a cliff at dusk",
				"guidance_scale":   g,
				"number_of_images": n,
			}
			if spec.Steps > 0 {
				req["num_inference_steps"] = spec.Steps
			}
			b, _ := json.Marshal(req) // map of strings and numbers: cannot fail
			return b
		}
	case KindAudio:
		w.Path, w.UnitName = "/audio/transcriptions", "audio_s"
		var wav []byte
		if spec.File != "" {
			b, err := os.ReadFile(spec.File)
			if err != nil {
				return nil, fmt.Errorf("%w: audio file: %w", ErrConfig, err)
			}
			wav = b // its length is unknown here: Units reads the response's "duration"
		} else {
			secs := spec.AudioSeconds
			if secs == 0 {
				secs = 5
			}
			if secs < 0 || secs > 600 {
				return nil, fmt.Errorf("%w: audio seconds must be in (0, 600], got %v", ErrConfig, secs)
			}
			wav = SynthWAV(secs, 16000)
			w.unitsPerOK = float64(int(secs*16000)) / 16000
		}
		req := map[string]any{"file": base64.StdEncoding.EncodeToString(wav), "stream": spec.Stream}
		if spec.Preprocess != nil {
			req["is_preprocessing_enabled"] = *spec.Preprocess
		}
		body, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		w.body = func(int) []byte { return body }
	case KindCNN:
		w.Path, w.UnitName, w.unitsPerOK = "/cnn/search-image", "images", 1
		var img []byte
		if spec.File != "" {
			b, err := os.ReadFile(spec.File)
			if err != nil {
				return nil, fmt.Errorf("%w: image file: %w", ErrConfig, err)
			}
			img = b
		} else {
			img = SynthJPEG(224)
		}
		body, err := json.Marshal(map[string]any{"prompt": base64.StdEncoding.EncodeToString(img)})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		w.body = func(int) []byte { return body }
	case KindLiveness:
		w.Path, w.Method, w.ContentType, w.Auth = "/tt-liveness", http.MethodGet, "", false
	case KindSpeech:
		if err := speechWorkload(w, spec); err != nil {
			return nil, err
		}
	case KindVideo: // video.go: each request is a job followed to its end
		w.Path, w.UnitName, w.body, w.job = "/v1/videos/generations", "jobs", videoBody(spec), true
		if spec.Steps != 0 && (spec.Steps < 4 || spec.Steps > 50) {
			return nil, fmt.Errorf("%w: video num_inference_steps must be 4..50, got %d", ErrConfig, spec.Steps)
		}
	default:
		return nil, fmt.Errorf("%w: unknown workload %q (want image, audio, cnn, speech, liveness or video)", ErrConfig, spec.Kind)
	}
	if spec.Path != "" {
		w.Path = spec.Path
	}
	return w, nil
}

// unitsFromDuration counts audio seconds from a transcription result line or body
// ({"duration": s, ...}); other lines count 0.
func unitsFromDuration(line []byte) float64 {
	var r struct {
		Duration *float64 `json:"duration"`
	}
	if json.Unmarshal(line, &r) != nil || r.Duration == nil {
		return 0
	}
	return *r.Duration
}

// SynthWAV returns secs seconds of a 16-bit mono WAV at rate Hz: a 220 Hz tone whose
// amplitude rises and falls every half second, like syllables, so voice-activity detection
// finds speech in it.
func SynthWAV(secs float64, rate int) []byte {
	n := int(secs * float64(rate))
	var buf bytes.Buffer
	le := binary.LittleEndian
	buf.WriteString("RIFF")
	_ = binary.Write(&buf, le, uint32(36+2*n))
	buf.WriteString("WAVEfmt ")
	_ = binary.Write(&buf, le, struct {
		Size                uint32
		Format, Channels    uint16
		Rate, ByteRate      uint32
		BlockAlign, BitsPer uint16
	}{16, 1, 1, uint32(rate), uint32(2 * rate), 2, 16})
	buf.WriteString("data")
	_ = binary.Write(&buf, le, uint32(2*n))
	samples := make([]int16, n)
	for i := range samples {
		t := float64(i) / float64(rate)
		env := 0.5 - 0.5*math.Cos(2*math.Pi*2*t)
		samples[i] = int16(12000 * env * math.Sin(2*math.Pi*220*t))
	}
	_ = binary.Write(&buf, le, samples)
	return buf.Bytes()
}

// SynthJPEG returns a size×size JPEG gradient.
func SynthJPEG(size int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			img.Set(x, y, color.RGBA{uint8(x * 255 / size), uint8(y * 255 / size), 128, 255})
		}
	}
	var buf bytes.Buffer
	_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}) // in-memory RGBA: cannot fail
	return buf.Bytes()
}
