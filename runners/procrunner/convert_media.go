package procrunner

// Conversions of text-to-speech and video jobs between the runners types and wire_media.go.

import (
	"fmt"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// countSet is how many of the flags are true.
func countSet(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}

// toWireMediaJob encodes a speech or video request into j.
func toWireMediaJob(j *wireJob, req runners.Request) error {
	switch r := req.(type) {
	case *runners.SpeechRequest:
		if r == nil {
			return fmt.Errorf("nil *runners.SpeechRequest")
		}
		s := &wireSpeechRequest{Text: r.Text, SpeakerID: r.SpeakerID, Stream: r.Stream}
		if r.Embedding != nil {
			s.Embedding = &blob{Data: float32Bytes(r.Embedding)}
		}
		j.Speech = s
	case *runners.VideoRequest:
		if r == nil {
			return fmt.Errorf("nil *runners.VideoRequest")
		}
		v := &wireVideoRequest{Prompt: r.Prompt, NegativePrompt: r.NegativePrompt, Steps: r.Steps, Seed: r.Seed,
			Width: r.Width, Height: r.Height, Frames: r.Frames}
		for _, im := range r.Images {
			if im.Image == nil {
				return fmt.Errorf("I2V image at frame %d without a picture", im.FramePos)
			}
			v.Images = append(v.Images, wireVideoImage{Image: toWireImage(im.Image), FramePos: im.FramePos})
		}
		j.Video = v
	default:
		return fmt.Errorf("request type %T cannot be sent to a worker process", req)
	}
	return nil
}

func (w *wireSpeechRequest) request() (runners.Request, error) {
	r := &runners.SpeechRequest{Text: w.Text, SpeakerID: w.SpeakerID, Stream: w.Stream}
	if w.Embedding != nil {
		e, err := bytesFloat32(w.Embedding.Data)
		if err != nil {
			return nil, err
		}
		if len(e) != runners.SpeechEmbeddingDim {
			return nil, fmt.Errorf("%w: speaker embedding of %d floats (want %d)", ErrProtocol, len(e), runners.SpeechEmbeddingDim)
		}
		r.Embedding = e
	}
	return r, nil
}

func (w *wireVideoRequest) request() (runners.Request, error) {
	r := &runners.VideoRequest{Prompt: w.Prompt, NegativePrompt: w.NegativePrompt, Steps: w.Steps, Seed: w.Seed,
		Width: w.Width, Height: w.Height, Frames: w.Frames}
	for _, im := range w.Images {
		img, err := im.Image.rgba()
		if err != nil {
			return nil, err
		}
		r.Images = append(r.Images, runners.VideoImage{Image: img, FramePos: im.FramePos})
	}
	return r, nil
}

// toWireMediaResult encodes a speech or video result.
func toWireMediaResult(v runners.Result) (*wireResult, error) {
	switch r := v.(type) {
	case *runners.SpeechResult:
		return &wireResult{Speech: &wireSpeech{Samples: blob{Data: float32Bytes(r.Samples)}, SampleRate: r.SampleRate,
			SpeakerID: r.SpeakerID, Chunks: r.Chunks, Steps: r.Steps, Tokens: r.Tokens}}, nil
	case *runners.VideoResult:
		size := 3 * r.Width * r.Height
		px := make([]byte, 0, size*len(r.Frames))
		for i, f := range r.Frames {
			if len(f) != size {
				return nil, fmt.Errorf("video frame %d has %d bytes, not %dx%d RGB24", i, len(f), r.Width, r.Height)
			}
			px = append(px, f...)
		}
		if r.File != "" {
			if len(r.Frames) > 0 {
				return nil, fmt.Errorf("a video result with both frames and a file")
			}
			return &wireResult{Video: &wireVideo{FPS: r.FPS, File: r.File}}, nil
		}
		return &wireResult{Video: &wireVideo{Width: r.Width, Height: r.Height, FPS: r.FPS, Frames: len(r.Frames),
			Pixels: &blob{Data: px}}}, nil
	}
	return nil, fmt.Errorf("result type %T cannot be sent from a worker process", v)
}

func (w *wireSpeech) value() (runners.Result, error) {
	samples, err := bytesFloat32(w.Samples.Data)
	if err != nil {
		return nil, err
	}
	if w.SampleRate <= 0 {
		return nil, fmt.Errorf("%w: speech at %d Hz", ErrProtocol, w.SampleRate)
	}
	return &runners.SpeechResult{Samples: samples, SampleRate: w.SampleRate, SpeakerID: w.SpeakerID,
		Chunks: w.Chunks, Steps: w.Steps, Tokens: w.Tokens}, nil
}

// value splits the clip's blob into its frames (no copy).
func (w *wireVideo) value() (runners.Result, error) {
	if w.FPS <= 0 {
		return nil, fmt.Errorf("%w: video at %d fps", ErrProtocol, w.FPS)
	}
	if w.File != "" { // the runner's own MP4: Runner.takeFiles checks and takes it
		if w.Pixels != nil {
			return nil, fmt.Errorf("%w: a video result with both a file and pixels", ErrProtocol)
		}
		return &runners.VideoResult{FPS: w.FPS, File: w.File}, nil
	}
	if w.Pixels == nil {
		return nil, fmt.Errorf("%w: a video result with neither pixels nor a file", ErrProtocol)
	}
	size := int64(w.Width) * int64(w.Height) * 3
	if w.Width <= 0 || w.Height <= 0 || w.Frames <= 0 || size*int64(w.Frames) != int64(len(w.Pixels.Data)) {
		return nil, fmt.Errorf("%w: video of %d frames %dx%d with %d bytes of pixels", ErrProtocol, w.Frames, w.Width, w.Height, len(w.Pixels.Data))
	}
	r := &runners.VideoResult{Width: w.Width, Height: w.Height, FPS: w.FPS, Frames: make([][]byte, w.Frames)}
	n := int(size)
	for i := range r.Frames {
		r.Frames[i] = w.Pixels.Data[i*n : (i+1)*n : (i+1)*n]
	}
	return r, nil
}

// toWireMediaChunk encodes a speech chunk or video progress into m; false for other chunks.
func toWireMediaChunk(m *message, chunk runners.Chunk) bool {
	switch c := chunk.(type) {
	case *runners.SpeechChunk:
		if c == nil {
			return false
		}
		m.Speech = &wireSpeechChunk{Index: c.Index, Chunks: c.Chunks, Samples: blob{Data: float32Bytes(c.Samples)}, SampleRate: c.SampleRate}
		return true
	case runners.VideoProgress:
		m.VideoProgress = &wireVideoProgress{Done: c.Done, Total: c.Total}
		return true
	}
	return false
}

func (w *wireSpeechChunk) chunk() (runners.Chunk, error) {
	samples, err := bytesFloat32(w.Samples.Data)
	if err != nil {
		return nil, err
	}
	return &runners.SpeechChunk{Index: w.Index, Chunks: w.Chunks, Samples: samples, SampleRate: w.SampleRate}, nil
}
