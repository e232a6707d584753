package procrunner

import (
	"context"
	"errors"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// The messages' parts, as the JSON header spells them (docs/WORKER-PROTOCOL.md). Each mirrors
// a runners type field by field, with explicit names, so the wire stays put when a Go type
// grows a field: a new field is carried once it is added here, to convert.go and to the spec.

// wireJob is one task of a batch: exactly one of Image, Audio, CNN, Speech and Video is set.
type wireJob struct {
	ID uint64 `json:"id"`
	// Deadline is the job's deadline in Unix seconds (fractional); 0: none.
	Deadline float64            `json:"deadline,omitempty"`
	Stream   bool               `json:"stream,omitempty"`   // the parent relays chunks (the task has an Emit)
	Progress bool               `json:"progress,omitempty"` // the parent relays progress (the task has a Progress)
	Image    *wireImageRequest  `json:"image,omitempty"`
	Audio    *wireAudioRequest  `json:"audio,omitempty"`
	CNN      *wireCNNRequest    `json:"cnn,omitempty"`
	Speech   *wireSpeechRequest `json:"speech,omitempty"`
	Video    *wireVideoRequest  `json:"video,omitempty"`
}

// wireImageRequest is a runners.ImageRequest. JSON keeps null (nil) and [] (empty) schedules
// apart.
type wireImageRequest struct {
	Prompt            string     `json:"prompt"`
	NegativePrompt    string     `json:"negative_prompt"`
	Prompt2           string     `json:"prompt_2"`
	NegativePrompt2   string     `json:"negative_prompt_2"`
	NumInferenceSteps int        `json:"num_inference_steps"`
	Seed              *int64     `json:"seed"`
	GuidanceScale     float64    `json:"guidance_scale"`
	GuidanceRescale   float64    `json:"guidance_rescale"`
	CropCoordsTopLeft [2]float64 `json:"crop_coords_top_left"`
	Timesteps         []float64  `json:"timesteps"`
	Sigmas            []float64  `json:"sigmas"`
	PartialImages     int        `json:"partial_images"`
	// Image-to-image and inpainting: the input image, the one-channel mask (gray8; white =
	// repaint) and strength. LoRA: the adapter's path under LORA_ROOT and its scale.
	InitImage *wireImage `json:"init_image,omitempty"`
	Mask      *wireImage `json:"mask,omitempty"`
	Strength  float64    `json:"strength,omitempty"`
	LoRAPath  string     `json:"lora_path,omitempty"`
	LoRAScale float64    `json:"lora_scale,omitempty"`
}

// wireAudioRequest is a runners.AudioRequest; the samples travel as a blob of little-endian
// float32s. Segments null: no pre-processing; []: no speech found.
type wireAudioRequest struct {
	Samples     blob       `json:"samples"`
	SampleRate  int        `json:"sample_rate"`
	Duration    float64    `json:"duration"`
	Segments    []wireSpan `json:"segments"`
	Stream      bool       `json:"stream"`
	Language    string     `json:"language"`
	Task        string     `json:"task"`
	Prompt      string     `json:"prompt"`
	Temperature float64    `json:"temperature"`
	// HEAD's decoding fields (runners.DecodeOptions); absent: the runner's defaults.
	Temperatures              []float64 `json:"temperatures,omitempty"`
	CompressionRatioThreshold *float64  `json:"compression_ratio_threshold,omitempty"`
	LogprobThreshold          *float64  `json:"logprob_threshold,omitempty"`
	NoSpeechThreshold         *float64  `json:"no_speech_threshold,omitempty"`
}

type wireSpan struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// wireCNNRequest is a runners.CNNRequest.
type wireCNNRequest struct {
	Image         wireImage `json:"image"`
	TopK          int       `json:"top_k"`
	MinConfidence float64   `json:"min_confidence"`
}

// Pixel formats of wireImage.
const (
	formatRGBA8 = "rgba8" // 4 bytes per pixel, R G B A
	formatRGB8  = "rgb8"  // 3 bytes per pixel, R G B (PIL's "RGB" tobytes())
	formatGray8 = "gray8" // 1 byte per pixel (PIL's "L")
)

// wireImage is a picture: its rectangle (X, Y: the top-left corner, usually 0) and rows of
// pixels, top to bottom, without padding.
type wireImage struct {
	X      int    `json:"x,omitempty"`
	Y      int    `json:"y,omitempty"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Format string `json:"format"`
	Pixels blob   `json:"pixels"`
}

// wireTranscriptChunk is a runners.TranscriptChunk.
type wireTranscriptChunk struct {
	Text    string `json:"text"`
	ChunkID int    `json:"chunk_id"`
}

// wirePartial is a *runners.ImagePartial: the preview travels as raw pixels (256 KiB for a
// 256x256 preview: a copy, where PNG would cost milliseconds of CPU on both sides).
type wirePartial struct {
	Index      int        `json:"index"`
	ImageIndex int        `json:"image_index"`
	Step       int        `json:"step"`
	Steps      int        `json:"steps"`
	Image      *wireImage `json:"image,omitempty"` // nil: no picture
}

// wireResult is one job's value: exactly one of Images, Transcript, CNN, Speech and Video.
type wireResult struct {
	Images     []wireImage     `json:"images,omitempty"`
	Transcript *wireTranscript `json:"transcript,omitempty"`
	CNN        *wireCNNResult  `json:"cnn,omitempty"`
	Speech     *wireSpeech     `json:"speech,omitempty"`
	Video      *wireVideo      `json:"video,omitempty"`
}

// wireTranscript is a runners.TranscriptionResult, decoder statistics included.
type wireTranscript struct {
	Text         string        `json:"text"`
	Task         string        `json:"task"`
	Language     string        `json:"language"`
	Duration     float64       `json:"duration"`
	Segments     []wireSegment `json:"segments"`
	SpeakerCount int           `json:"speaker_count"`
	Speakers     []string      `json:"speakers"`
}

type wireSegment struct {
	ID               int     `json:"id"`
	Speaker          string  `json:"speaker"`
	StartTime        float64 `json:"start_time"`
	EndTime          float64 `json:"end_time"`
	Text             string  `json:"text"`
	Seek             int     `json:"seek,omitempty"`
	Tokens           []int   `json:"tokens,omitempty"`
	Temperature      float64 `json:"temperature,omitempty"`
	AvgLogprob       float64 `json:"avg_logprob,omitempty"`
	CompressionRatio float64 `json:"compression_ratio,omitempty"`
	NoSpeechProb     float64 `json:"no_speech_prob,omitempty"`
}

// wireCNNResult is a runners.CNNResult: classes best first, probabilities in [0,1]; a
// detector's boxes; a segmenter's mask.
type wireCNNResult struct {
	Top        []wireClass     `json:"top"`
	Detections []wireDetection `json:"detections,omitempty"`
	Mask       *wireMask       `json:"mask,omitempty"`
}

// wireDetection is a runners.Detection: box (x1, y1, x2, y2) in the model's coordinates.
type wireDetection struct {
	Label string     `json:"label"`
	Index int        `json:"index"`
	Score float64    `json:"score"`
	Box   [4]float64 `json:"box"`
}

// wireMask is a runners.Mask: Width × Height class indices, one byte each, row by row, as a
// blob; Labels (optional) names each class index.
type wireMask struct {
	Width  int      `json:"width"`
	Height int      `json:"height"`
	Class  blob     `json:"class"`
	Labels []string `json:"labels,omitempty"`
}

type wireClass struct {
	Label       string  `json:"label"`
	Index       int     `json:"index"`
	Probability float64 `json:"probability"`
}

// Error classes that survive the trip, so the parent's errors.Is still works.
const (
	errOther      = ""
	errBadRequest = "bad_request"
	errDeviceLost = "device_lost"
	errCanceled   = "canceled"
	errDeadline   = "deadline"
	errProtocol   = "protocol"
	errConfig     = "config"
)

// wireError is an error as text plus its class.
type wireError struct {
	Class string `json:"class,omitempty"`
	Msg   string `json:"message"`
}

// toWireError classifies err; nil stays nil.
func toWireError(err error) *wireError {
	if err == nil {
		return nil
	}
	class := errOther
	switch {
	case errors.Is(err, runners.ErrDeviceLost):
		class = errDeviceLost
	case errors.Is(err, runners.ErrBadRequest):
		class = errBadRequest
	case errors.Is(err, runners.ErrConfig):
		class = errConfig
	case errors.Is(err, ErrProtocol):
		class = errProtocol
	case errors.Is(err, context.DeadlineExceeded):
		class = errDeadline
	case errors.Is(err, context.Canceled):
		class = errCanceled
	}
	return &wireError{Class: class, Msg: err.Error()}
}

// remoteError is an error that happened in the worker process.
type remoteError struct {
	class, msg string
}

func (e *remoteError) Error() string { return e.msg }

// Is lets errors.Is see the class sentinels.
func (e *remoteError) Is(target error) bool {
	switch e.class {
	case errBadRequest:
		return target == runners.ErrBadRequest
	case errDeviceLost:
		return target == runners.ErrDeviceLost
	case errConfig:
		return target == runners.ErrConfig
	case errCanceled:
		return target == context.Canceled
	case errDeadline:
		return target == context.DeadlineExceeded
	case errProtocol:
		return target == ErrProtocol
	}
	return false
}

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	return &remoteError{class: w.Class, msg: w.Msg}
}
