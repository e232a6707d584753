// Package runners defines the Runner interface every model family implements, the typed
// requests and results that flow between the HTTP layer and the device workers, and the
// registry that maps MODEL_RUNNER names to runner factories (the Python server's "runner
// fabric"). Runners never see HTTP; they see typed requests and a device.
package runners

import (
	"context"
	"errors"
	"fmt"
	"image"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// Service is the API family a runner serves (the catalogue's); one pool per service.
type Service = catalogue.Service

// The API families, as the catalogue names them (for the Request interface's users).
const (
	ServiceImage = catalogue.ServiceImage
	ServiceAudio = catalogue.ServiceAudio
	ServiceCNN   = catalogue.ServiceCNN
)

// ErrUnknownRunner is returned by the registry for a MODEL_RUNNER it does not know.
var ErrUnknownRunner = errors.New("unknown model runner")

// ErrDeviceLost marks a runner whose device (or worker process) is gone: the worker fails the
// batch's jobs with 503, resets the group's devices and starts a new runner.
var ErrDeviceLost = errors.New("device lost")

// ErrConfig marks a runner that cannot start under this configuration however often it is
// retried — e.g. a device program in MODEL_WEIGHTS_PATH that does not match its declaration
// (runners/programs). The worker marks itself failed at once instead of resetting the device
// and retrying.
var ErrConfig = errors.New("configuration error")

// Permanent marks err as an ErrConfig without changing its message.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() []error { return []error{p.error, ErrConfig} }

// ErrBadRequest marks runner-side rejections of a request that the HTTP layer could not
// check up front (e.g. both timesteps and sigmas); the server answers 400 for them.
var ErrBadRequest = errors.New("bad request")

// Task is one request handed to a runner inside a batch.
type Task struct {
	// Ctx is the request's own context: its deadline and the client's disconnect. A runner
	// checks it at every step boundary and stops that task early when it is done.
	Ctx context.Context
	// Request is one of *ImageRequest, *AudioRequest, *CNNRequest (RequestAs reads it).
	Request Request
	// Emit delivers a streaming chunk to the client; nil when the request does not stream.
	// It returns an error when the client has gone; the runner should then stop the task.
	Emit func(chunk Chunk) error
	// Progress, when not nil, is told after each finished step of a multi-step task (a
	// denoising step, a decoded window): done of total. It must be cheap and never blocks.
	Progress func(done, total int)
}

// Outcome is the terminal result of one task: Value is *ImageResult, *TranscriptionResult
// or *CNNResult, or Err says why it failed.
type Outcome struct {
	Value Result
	Err   error
}

// Request is a validated request on its way from a handler to a runner: *ImageRequest,
// *AudioRequest or *CNNRequest. Service names the API family (the pool) that serves it. The
// scheduler carries it without looking inside; the runner takes it back with RequestAs.
type Request interface{ Service() Service }

// Result is a task's terminal value: *ImageResult, *TranscriptionResult or *CNNResult; the
// handler takes it back with ResultAs.
type Result interface{ Service() Service }

// Chunk is one streamed piece of a task: *ImagePartial or TranscriptChunk (ChunkAs).
type Chunk interface{ Service() Service }

// RequestAs is t's request as the type Req a runner serves, or an error naming what it got:
// the one place a runner looks at which request it was given.
func RequestAs[Req Request](t Task) (Req, error) {
	req, ok := t.Request.(Req)
	if !ok || t.Request == nil {
		var want Req
		return want, fmt.Errorf("request is %T, not %T", t.Request, want)
	}
	return req, nil
}

// ResultAs is a job's result as the type Res its route expects; ok is false for another type.
func ResultAs[Res Result](v Result) (res Res, ok bool) {
	res, ok = v.(Res)
	return res, ok
}

// ChunkAs is a streamed chunk as the type C a handler relays; ok is false for another type.
func ChunkAs[C Chunk](c Chunk) (C, bool) {
	v, ok := c.(C)
	return v, ok
}

// Service of each request, result and chunk type: the API family it belongs to.
func (*ImageRequest) Service() Service        { return ServiceImage }
func (*ImageResult) Service() Service         { return ServiceImage }
func (*ImagePartial) Service() Service        { return ServiceImage }
func (*AudioRequest) Service() Service        { return ServiceAudio }
func (*TranscriptionResult) Service() Service { return ServiceAudio }
func (TranscriptChunk) Service() Service      { return ServiceAudio }
func (*CNNRequest) Service() Service          { return ServiceCNN }
func (*CNNResult) Service() Service           { return ServiceCNN }

// Runner is the host-side pipeline of one model family on one device group.
// A runner is used by exactly one worker goroutine; it needs no locking of its own.
type Runner interface {
	// Warmup opens the device, loads the model and runs one warm-up inference.
	Warmup(ctx context.Context) error
	// Run executes a batch. It returns exactly len(tasks) outcomes, in order.
	Run(ctx context.Context, tasks []Task) []Outcome
	// Close releases the device. It is safe to call after a failed Warmup.
	Close() error
}

// Prober is implemented by runners that can check their device cheaply while idle (a
// worker process's liveness, a device status read) without spending device time on a real
// inference. The worker calls Probe every CANARY_INTERVAL_SECONDS of idleness; an error makes
// it restart the runner, so a dead device is found before a client's request hits it.
type Prober interface {
	Probe(ctx context.Context) error
}

// Exiter is implemented by runners whose device lives in a process of their own: Exited is
// closed the moment that process has exited and been reaped, so the worker stops counting as
// ready at once instead of at the next canary probe or request.
type Exiter interface {
	Exited() <-chan struct{}
}

// ImageRequest is a text-to-image request (SDXL, SD3.5), validated by the server.
type ImageRequest struct {
	Prompt            string
	NegativePrompt    string
	Prompt2           string
	NegativePrompt2   string
	NumInferenceSteps int
	Seed              *int64
	// GuidanceScale is the classifier-free guidance scale (> 1 guides). The server fills the
	// model's DefaultGuidance when the client sent none; the runners read 0 (a caller that did
	// not set it) as that default too (Guidance).
	GuidanceScale     float64
	GuidanceRescale   float64
	CropCoordsTopLeft [2]float64
	Timesteps         []float64
	Sigmas            []float64
	// ScheduleSteps is how many denoising steps Timesteps or Sigmas run (the server counts
	// them for the model's scheduler and holds them to the step limit); 0 without a custom
	// schedule. Cost prices the job by it.
	ScheduleSteps int
	// PartialImages (0-3) asks a streaming request for that many previews of the
	// intermediate latents, sent through Task.Emit as *ImagePartial before the result.
	PartialImages int
	// InitImage is the image-to-image or inpainting input (decoded, RGB; any size: the runner
	// resizes it to the model's); nil for text-to-image.
	InitImage image.Image
	// Mask is the inpainting mask as one channel (white = repaint), the size of InitImage; nil
	// without inpainting.
	Mask *image.Gray
	// Strength in [0, 1] is how much of the schedule image-to-image and inpainting run.
	Strength float64
	// LoRAPath is a LoRA adapter's real path under LORA_ROOT ("" = none), fused with
	// LoRAScale (0-2).
	LoRAPath  string
	LoRAScale float64
}

// Guidance is the request's guidance scale on runner: GuidanceScale, or the model's
// DefaultGuidance when it is 0 (not set).
func (r *ImageRequest) Guidance(runner string) float64 {
	if r.GuidanceScale == 0 {
		return DefaultGuidance(runner)
	}
	return r.GuidanceScale
}

// ImagePartial is one streamed preview of an image still being denoised: a cheap
// latent-to-RGB rendering after Step of Steps denoising steps. Index is the preview's
// number (0-based, at most PartialImages-1); Image is the request's ImageIndex-th image.
type ImagePartial struct {
	Index      int
	ImageIndex int
	Step       int
	Steps      int
	Image      image.Image
}

// ImageResult holds the generated images, in request order.
type ImageResult struct {
	Images []image.Image
}

// Span is a stretch of audio in seconds.
type Span struct {
	Start float64
	End   float64
}

// AudioRequest is a transcription request: decoded audio, 16 kHz mono float32.
type AudioRequest struct {
	Samples    []float32
	SampleRate int
	// Duration of Samples in seconds.
	Duration float64
	// Segments are the speech stretches found by pre-processing (VAD); nil when
	// pre-processing is off, in which case the whole audio is one piece.
	Segments []Span
	Stream   bool
	// Decoding options (OpenAI's transcription fields). Language is an ISO-639-1 code, ""
	// detects it; Task is "transcribe" ("" means transcribe) or "translate"; Prompt conditions
	// the first window; Temperature is the first temperature of the fallback schedule.
	Language    string
	Task        string
	Prompt      string
	Temperature float64
	// Decode are the Python server's (HEAD) Whisper decoding fields.
	Decode DecodeOptions
}

// DecodeOptions are HEAD's Whisper decoding fields (AudioProcessingRequest). The zero value
// keeps the runner's defaults: the fallback schedule from Temperature, whisper's thresholds.
type DecodeOptions struct {
	// Temperatures, when not empty, is the whole fallback schedule (HEAD's temperatures),
	// tried in order; it replaces the schedule built from Temperature.
	Temperatures []float64
	// CompressionRatioThreshold, LogprobThreshold and NoSpeechThreshold replace whisper's
	// 2.4, -1.0 and 0.6 when set.
	CompressionRatioThreshold *float64
	LogprobThreshold          *float64
	NoSpeechThreshold         *float64
}

// TranscriptionSegment is one speech segment of a transcription (the Python server's
// TranscriptionSegment).
type TranscriptionSegment struct {
	ID        int     `json:"id"`
	Speaker   string  `json:"speaker"`
	StartTime float64 `json:"start_time"`
	EndTime   float64 `json:"end_time"`
	Text      string  `json:"text"`
	// Decoder statistics of the real Whisper pipeline (OpenAI's verbose_json segment fields).
	// The Python server's response has none of them, so they stay out of its JSON; the /v1
	// routes map them. Zero when the runner has no decoder (mock transcription).
	Seek             int     `json:"-"`
	Tokens           []int   `json:"-"`
	Temperature      float64 `json:"-"`
	AvgLogprob       float64 `json:"-"`
	CompressionRatio float64 `json:"-"`
	NoSpeechProb     float64 `json:"-"`
}

// TranscriptionResult is the final transcription (the Python server's TranscriptionResponse).
type TranscriptionResult struct {
	Text         string                 `json:"text"`
	Task         string                 `json:"task"`
	Language     string                 `json:"language"`
	Duration     float64                `json:"duration"`
	Segments     []TranscriptionSegment `json:"segments,omitempty"`
	SpeakerCount int                    `json:"speaker_count,omitempty"`
	Speakers     []string               `json:"speakers,omitempty"`
}

// TranscriptChunk is one streamed piece of a transcription.
type TranscriptChunk struct {
	Text    string `json:"text"`
	ChunkID int    `json:"chunk_id"`
}

// CNNRequest is an image-classification request.
type CNNRequest struct {
	Image image.Image
	// TopK is how many classes to report (default 3).
	TopK int
	// MinConfidence in percent (0-100): classes below it are left out of the top-k list.
	MinConfidence float64
}

// Classification is one class with its probability in [0,1].
type Classification struct {
	Label       string
	Index       int
	Probability float64
}

// CNNResult is one image's answer: the ranked classes, best first (at least the top-1 class,
// except for a detector, whose Detections may be empty); a detector's boxes; a segmenter's
// mask. Which of them a model fills, and how its route writes them, is the catalogue's
// CNNPolicy.Output.
type CNNResult struct {
	Top []Classification
	// Detections are a detector's boxes, best score first.
	Detections []Detection
	// Mask is a segmenter's per-pixel classes.
	Mask *Mask
}

// Detection is one detected object: its class, score in [0,1] and box (x1, y1, x2, y2), in
// the coordinates the model reports (YOLOv4: fractions of the image; YOLOX: pixels of the
// original image).
type Detection struct {
	Label string
	Index int
	Score float64
	Box   [4]float64
}

// Mask is a segmentation mask: Width × Height class indices, row by row; Labels names each
// class index.
type Mask struct {
	Width, Height int
	Class         []uint8
	Labels        []string
}

// Cost of an image job for the scheduler's wait predictions: the denoising steps it will run
// (a custom schedule's, else num_inference_steps; image-to-image and inpainting run the
// Strength share of them, as diffusers' get_timesteps).
func (r *ImageRequest) Cost() float64 {
	steps := r.NumInferenceSteps
	if r.ScheduleSteps > 0 {
		steps = r.ScheduleSteps
	}
	if r.InitImage != nil && r.Strength > 0 && r.Strength < 1 {
		steps = int(float64(steps) * r.Strength)
	}
	return float64(max(steps, 1))
}

// BatchKey groups image jobs that may share a device batch: the pipeline takes steps,
// guidance, negative prompts, crop and schedule from the batch's first request, so only
// requests that agree on them are batched together.
func (r *ImageRequest) BatchKey() string {
	return fmt.Sprintf("steps=%d cfg=%g rescale=%g crop=%v neg=%q neg2=%q ts=%v sig=%v strength=%g lora=%q@%g",
		r.NumInferenceSteps, r.GuidanceScale, r.GuidanceRescale, r.CropCoordsTopLeft,
		r.NegativePrompt, r.NegativePrompt2, r.Timesteps, r.Sigmas, r.Strength, r.LoRAPath, r.LoRAScale)
}

// Cost of a transcription job: seconds of audio (at least one).
func (r *AudioRequest) Cost() float64 { return max(r.Duration, 1) }

// Cost of a classification job: one image.
func (r *CNNRequest) Cost() float64 { return 1 }
