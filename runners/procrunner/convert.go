package procrunner

// Conversions between the runners types and the wire parts of wire.go: requests, results,
// chunks, pictures, samples and deadlines.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"math"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

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
	case countSet(m.Chunk != nil, m.Partial != nil, m.Speech != nil, m.VideoProgress != nil) > 1:
		return nil, fmt.Errorf("%w: chunk of job %d carries more than one piece", ErrProtocol, m.Job)
	case m.Speech != nil:
		return m.Speech.chunk()
	case m.VideoProgress != nil:
		return runners.VideoProgress{Done: m.VideoProgress.Done, Total: m.VideoProgress.Total}, nil
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
		return j, toWireMediaJob(&j, t.Request)
	}
	return j, nil
}

// request decodes the job's request.
func (j wireJob) request() (runners.Request, error) {
	set := 0
	for _, p := range []bool{j.Image != nil, j.Audio != nil, j.CNN != nil, j.Speech != nil, j.Video != nil} {
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
	case j.Speech != nil:
		return j.Speech.request()
	case j.Video != nil:
		return j.Video.request()
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
		for _, d := range r.Detections {
			c.Detections = append(c.Detections, wireDetection(d))
		}
		if m := r.Mask; m != nil {
			c.Mask = &wireMask{Width: m.Width, Height: m.Height, Class: blob{Data: m.Class}, Labels: m.Labels}
		}
		return &wireResult{CNN: c}, nil
	}
	return toWireMediaResult(v)
}

// value decodes the result.
func (w *wireResult) value() (runners.Result, error) {
	switch {
	case w == nil:
		return nil, fmt.Errorf("%w: result without a value", ErrProtocol)
	case w.Speech != nil:
		return w.Speech.value()
	case w.Video != nil:
		return w.Video.value()
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
		for _, d := range w.CNN.Detections {
			r.Detections = append(r.Detections, runners.Detection(d))
		}
		if m := w.CNN.Mask; m != nil {
			if m.Width <= 0 || m.Height <= 0 || len(m.Class.Data) != m.Width*m.Height {
				return nil, fmt.Errorf("%w: a %dx%d mask of %d bytes", ErrProtocol, m.Width, m.Height, len(m.Class.Data))
			}
			r.Mask = &runners.Mask{Width: m.Width, Height: m.Height, Class: m.Class.Data, Labels: m.Labels}
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
