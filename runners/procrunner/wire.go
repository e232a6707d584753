package procrunner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"math"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// The messages' parts, as the JSON header spells them (docs/WORKER-PROTOCOL.md). Each mirrors
// a runners type field by field, with explicit names, so the wire stays put when a Go type
// grows a field: a new field is carried once it is added here (and to the spec).

// wireJob is one task of a batch: exactly one of Image, Audio and CNN is set.
type wireJob struct {
	ID uint64 `json:"id"`
	// Deadline is the job's deadline in Unix seconds (fractional); 0: none.
	Deadline float64           `json:"deadline,omitempty"`
	Stream   bool              `json:"stream,omitempty"`   // the parent relays chunks (the task has an Emit)
	Progress bool              `json:"progress,omitempty"` // the parent relays progress (the task has a Progress)
	Image    *wireImageRequest `json:"image,omitempty"`
	Audio    *wireAudioRequest `json:"audio,omitempty"`
	CNN      *wireCNNRequest   `json:"cnn,omitempty"`
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

// wireResult is one job's value: exactly one of Images, Transcript and CNN.
type wireResult struct {
	Images     []wireImage     `json:"images,omitempty"`
	Transcript *wireTranscript `json:"transcript,omitempty"`
	CNN        *wireCNNResult  `json:"cnn,omitempty"`
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

// wireCNNResult is a runners.CNNResult: classes best first, probabilities in [0,1].
type wireCNNResult struct {
	Top []wireClass `json:"top"`
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

// toWireChunk encodes a streamed chunk: a transcript piece (by value or by pointer) or an
// image preview.
func toWireChunk(chunk runners.Chunk) (*wireTranscriptChunk, *wirePartial, error) {
	switch v := chunk.(type) {
	case runners.TranscriptChunk:
		return &wireTranscriptChunk{Text: v.Text, ChunkID: v.ChunkID}, nil, nil
	case *runners.TranscriptChunk:
		if v != nil {
			return &wireTranscriptChunk{Text: v.Text, ChunkID: v.ChunkID}, nil, nil
		}
	case *runners.ImagePartial:
		if v != nil {
			return nil, toWirePartial(v), nil
		}
	}
	return nil, nil, fmt.Errorf("chunk type %T cannot be sent from a worker process", chunk)
}

func toWirePartial(p *runners.ImagePartial) *wirePartial {
	w := &wirePartial{Index: p.Index, ImageIndex: p.ImageIndex, Step: p.Step, Steps: p.Steps}
	if p.Image != nil {
		img := toWireImage(p.Image)
		w.Image = &img
	}
	return w
}

// chunk decodes a chunk message's piece: a runners.TranscriptChunk (by value, as the
// transcription runners emit it) or a *runners.ImagePartial.
func (m *message) chunk() (runners.Chunk, error) {
	switch {
	case m.Chunk != nil && m.Partial != nil:
		return nil, fmt.Errorf("%w: chunk of job %d is both a transcript piece and a preview", ErrProtocol, m.Job)
	case m.Chunk != nil:
		return runners.TranscriptChunk{Text: m.Chunk.Text, ChunkID: m.Chunk.ChunkID}, nil
	case m.Partial != nil:
		p := &runners.ImagePartial{Index: m.Partial.Index, ImageIndex: m.Partial.ImageIndex,
			Step: m.Partial.Step, Steps: m.Partial.Steps}
		if m.Partial.Image != nil {
			img, err := m.Partial.Image.rgba()
			if err != nil {
				return nil, err
			}
			p.Image = img
		}
		return p, nil
	}
	return nil, fmt.Errorf("%w: empty chunk of job %d", ErrProtocol, m.Job)
}

// float32Bytes packs samples as little-endian IEEE 754 bytes.
func float32Bytes(samples []float32) []byte {
	if len(samples) == 0 {
		return nil
	}
	out := make([]byte, 4*len(samples))
	for i, v := range samples {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// bytesFloat32 unpacks float32Bytes.
func bytesFloat32(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: %d bytes of audio samples is not a whole number of float32s", ErrProtocol, len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
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

// toWireImage copies any image into RGBA pixels (an *image.RGBA without padding goes as it is).
func toWireImage(img image.Image) wireImage {
	if img == nil {
		return wireImage{Format: formatRGBA8}
	}
	rgba, ok := img.(*image.RGBA)
	if !ok || rgba.Stride != 4*rgba.Rect.Dx() {
		b := img.Bounds()
		rgba = image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
	}
	r := rgba.Rect
	return wireImage{X: r.Min.X, Y: r.Min.Y, Width: r.Dx(), Height: r.Dy(), Format: formatRGBA8, Pixels: blob{Data: rgba.Pix}}
}

// grayWireImage sends a one-channel picture as gray8.
func grayWireImage(m *image.Gray) *wireImage {
	r := m.Rect
	px := m.Pix
	if m.Stride != r.Dx() {
		px = make([]byte, 0, r.Dx()*r.Dy())
		for y := r.Min.Y; y < r.Max.Y; y++ {
			o := m.PixOffset(r.Min.X, y)
			px = append(px, m.Pix[o:o+r.Dx()]...)
		}
	}
	return &wireImage{X: r.Min.X, Y: r.Min.Y, Width: r.Dx(), Height: r.Dy(), Format: formatGray8, Pixels: blob{Data: px}}
}

// gray rebuilds a one-channel picture (gray8; rgba8 and rgb8 give their red channel).
func (w wireImage) gray() (*image.Gray, error) {
	if w.Format == formatGray8 {
		if w.Width < 0 || w.Height < 0 || int64(w.Width)*int64(w.Height) != int64(len(w.Pixels.Data)) {
			return nil, fmt.Errorf("%w: gray8 image %dx%d with %d bytes of pixels", ErrProtocol, w.Width, w.Height, len(w.Pixels.Data))
		}
		return &image.Gray{Pix: w.Pixels.Data, Stride: w.Width, Rect: image.Rect(w.X, w.Y, w.X+w.Width, w.Y+w.Height)}, nil
	}
	rgba, err := w.rgba()
	if err != nil {
		return nil, err
	}
	g := image.NewGray(rgba.Rect)
	for i := range g.Pix {
		g.Pix[i] = rgba.Pix[4*i]
	}
	return g, nil
}

// rgba rebuilds the picture, checking that the pixels fill the rectangle; RGB and gray
// pixels are expanded to RGBA (alpha 255).
func (w wireImage) rgba() (*image.RGBA, error) {
	per := map[string]int64{formatRGBA8: 4, formatRGB8: 3, formatGray8: 1}[w.Format]
	if per == 0 {
		return nil, fmt.Errorf("%w: image pixel format %q (rgba8, rgb8 or gray8)", ErrProtocol, w.Format)
	}
	px := w.Pixels.Data
	if w.Width < 0 || w.Height < 0 || int64(w.Width)*int64(w.Height)*per != int64(len(px)) {
		return nil, fmt.Errorf("%w: %s image %dx%d with %d bytes of pixels", ErrProtocol, w.Format, w.Width, w.Height, len(px))
	}
	rect := image.Rect(w.X, w.Y, w.X+w.Width, w.Y+w.Height)
	if per == 4 {
		return &image.RGBA{Pix: px, Stride: 4 * w.Width, Rect: rect}, nil
	}
	out := image.NewRGBA(rect)
	dst := out.Pix
	if per == 3 {
		for i, j := 0, 0; i < len(px); i, j = i+3, j+4 {
			dst[j], dst[j+1], dst[j+2], dst[j+3] = px[i], px[i+1], px[i+2], 255
		}
	} else {
		for i, v := range px {
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = v, v, v, 255
		}
	}
	return out, nil
}

// unixSeconds is t as fractional Unix seconds; the zero time is 0.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// fromUnixSeconds undoes unixSeconds (to the microsecond).
func fromUnixSeconds(s float64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(math.Round(s * 1e6)))
}

// toWireJob encodes a task's request.
func toWireJob(id uint64, t runners.Task) (wireJob, error) {
	j := wireJob{ID: id, Stream: t.Emit != nil, Progress: t.Progress != nil}
	if t.Ctx != nil {
		if dl, ok := t.Ctx.Deadline(); ok {
			j.Deadline = unixSeconds(dl)
		}
	}
	switch r := t.Request.(type) {
	case *runners.ImageRequest:
		if r == nil {
			return j, errors.New("nil *runners.ImageRequest")
		}
		j.Image = &wireImageRequest{Prompt: r.Prompt, NegativePrompt: r.NegativePrompt, Prompt2: r.Prompt2,
			NegativePrompt2: r.NegativePrompt2, NumInferenceSteps: r.NumInferenceSteps, Seed: r.Seed,
			GuidanceScale: r.GuidanceScale, GuidanceRescale: r.GuidanceRescale, CropCoordsTopLeft: r.CropCoordsTopLeft,
			Timesteps: r.Timesteps, Sigmas: r.Sigmas, PartialImages: r.PartialImages,
			Strength: r.Strength, LoRAPath: r.LoRAPath, LoRAScale: r.LoRAScale}
		if r.InitImage != nil {
			img := toWireImage(r.InitImage)
			j.Image.InitImage = &img
		}
		if r.Mask != nil {
			j.Image.Mask = grayWireImage(r.Mask)
		}
	case *runners.AudioRequest:
		if r == nil {
			return j, errors.New("nil *runners.AudioRequest")
		}
		a := &wireAudioRequest{Samples: blob{Data: float32Bytes(r.Samples)}, SampleRate: r.SampleRate, Duration: r.Duration,
			Stream: r.Stream, Language: r.Language, Task: r.Task, Prompt: r.Prompt, Temperature: r.Temperature,
			Temperatures: r.Decode.Temperatures, CompressionRatioThreshold: r.Decode.CompressionRatioThreshold,
			LogprobThreshold: r.Decode.LogprobThreshold, NoSpeechThreshold: r.Decode.NoSpeechThreshold}
		if r.Segments != nil {
			a.Segments = make([]wireSpan, len(r.Segments))
			for i, s := range r.Segments {
				a.Segments[i] = wireSpan(s)
			}
		}
		j.Audio = a
	case *runners.CNNRequest:
		if r == nil || r.Image == nil {
			return j, errors.New("*runners.CNNRequest without an image")
		}
		j.CNN = &wireCNNRequest{Image: toWireImage(r.Image), TopK: r.TopK, MinConfidence: r.MinConfidence}
	default:
		return j, fmt.Errorf("request type %T cannot be sent to a worker process", t.Request)
	}
	return j, nil
}

// request decodes the job's request.
func (j wireJob) request() (runners.Request, error) {
	set := 0
	for _, p := range []bool{j.Image != nil, j.Audio != nil, j.CNN != nil} {
		if p {
			set++
		}
	}
	if set > 1 {
		return nil, fmt.Errorf("%w: job %d has %d requests", ErrProtocol, j.ID, set)
	}
	switch {
	case j.Image != nil:
		w := j.Image
		r := &runners.ImageRequest{Prompt: w.Prompt, NegativePrompt: w.NegativePrompt, Prompt2: w.Prompt2,
			NegativePrompt2: w.NegativePrompt2, NumInferenceSteps: w.NumInferenceSteps, Seed: w.Seed,
			GuidanceScale: w.GuidanceScale, GuidanceRescale: w.GuidanceRescale, CropCoordsTopLeft: w.CropCoordsTopLeft,
			Timesteps: w.Timesteps, Sigmas: w.Sigmas, PartialImages: w.PartialImages,
			Strength: w.Strength, LoRAPath: w.LoRAPath, LoRAScale: w.LoRAScale}
		if w.InitImage != nil {
			img, err := w.InitImage.rgba()
			if err != nil {
				return nil, err
			}
			r.InitImage = img
		}
		if w.Mask != nil {
			m, err := w.Mask.gray()
			if err != nil {
				return nil, err
			}
			r.Mask = m
		}
		return r, nil
	case j.Audio != nil:
		w := j.Audio
		r := &runners.AudioRequest{SampleRate: w.SampleRate, Duration: w.Duration, Stream: w.Stream,
			Language: w.Language, Task: w.Task, Prompt: w.Prompt, Temperature: w.Temperature,
			Decode: runners.DecodeOptions{Temperatures: w.Temperatures, CompressionRatioThreshold: w.CompressionRatioThreshold,
				LogprobThreshold: w.LogprobThreshold, NoSpeechThreshold: w.NoSpeechThreshold}}
		if w.Segments != nil {
			r.Segments = make([]runners.Span, len(w.Segments))
			for i, s := range w.Segments {
				r.Segments[i] = runners.Span(s)
			}
		}
		var err error
		if r.Samples, err = bytesFloat32(w.Samples.Data); err != nil {
			return nil, err
		}
		return r, nil
	case j.CNN != nil:
		img, err := j.CNN.Image.rgba()
		if err != nil {
			return nil, err
		}
		return &runners.CNNRequest{Image: img, TopK: j.CNN.TopK, MinConfidence: j.CNN.MinConfidence}, nil
	}
	return nil, fmt.Errorf("%w: job %d has no request", ErrProtocol, j.ID)
}

// toWireResult encodes a runner's value.
func toWireResult(v runners.Result) (*wireResult, error) {
	switch r := v.(type) {
	case *runners.ImageResult:
		w := &wireResult{Images: make([]wireImage, 0, len(r.Images))}
		for _, img := range r.Images {
			w.Images = append(w.Images, toWireImage(img))
		}
		return w, nil
	case *runners.TranscriptionResult:
		t := &wireTranscript{Text: r.Text, Task: r.Task, Language: r.Language, Duration: r.Duration,
			SpeakerCount: r.SpeakerCount, Speakers: r.Speakers}
		for _, s := range r.Segments {
			t.Segments = append(t.Segments, wireSegment{ID: s.ID, Speaker: s.Speaker, StartTime: s.StartTime,
				EndTime: s.EndTime, Text: s.Text, Seek: s.Seek, Tokens: s.Tokens, Temperature: s.Temperature,
				AvgLogprob: s.AvgLogprob, CompressionRatio: s.CompressionRatio, NoSpeechProb: s.NoSpeechProb})
		}
		return &wireResult{Transcript: t}, nil
	case *runners.CNNResult:
		c := &wireCNNResult{Top: make([]wireClass, len(r.Top))}
		for i, t := range r.Top {
			c.Top[i] = wireClass(t)
		}
		return &wireResult{CNN: c}, nil
	}
	return nil, fmt.Errorf("result type %T cannot be sent from a worker process", v)
}

// value decodes the result.
func (w *wireResult) value() (runners.Result, error) {
	switch {
	case w == nil:
		return nil, fmt.Errorf("%w: result without a value", ErrProtocol)
	case w.Transcript != nil:
		t := w.Transcript
		r := &runners.TranscriptionResult{Text: t.Text, Task: t.Task, Language: t.Language, Duration: t.Duration,
			SpeakerCount: t.SpeakerCount, Speakers: t.Speakers}
		for _, s := range t.Segments {
			r.Segments = append(r.Segments, runners.TranscriptionSegment{ID: s.ID, Speaker: s.Speaker,
				StartTime: s.StartTime, EndTime: s.EndTime, Text: s.Text, Seek: s.Seek, Tokens: s.Tokens,
				Temperature: s.Temperature, AvgLogprob: s.AvgLogprob, CompressionRatio: s.CompressionRatio,
				NoSpeechProb: s.NoSpeechProb})
		}
		return r, nil
	case w.CNN != nil:
		r := &runners.CNNResult{Top: make([]runners.Classification, len(w.CNN.Top))}
		for i, c := range w.CNN.Top {
			r.Top[i] = runners.Classification(c)
		}
		return r, nil
	case w.Images != nil:
		res := &runners.ImageResult{Images: make([]image.Image, 0, len(w.Images))}
		for _, wi := range w.Images {
			img, err := wi.rgba()
			if err != nil {
				return nil, err
			}
			res.Images = append(res.Images, img)
		}
		return res, nil
	}
	return nil, fmt.Errorf("%w: empty result", ErrProtocol)
}
