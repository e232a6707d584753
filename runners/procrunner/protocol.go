package procrunner

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"io"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// MaxFrame is the largest frame either side accepts (a frame carries one message; the biggest
// are a batch of audio requests and a batch of 1024x1024 RGBA images).
const MaxFrame = 256 << 20

// ErrProtocol marks a malformed frame or an unexpected message.
var ErrProtocol = errors.New("worker protocol error")

// kind is a message type.
type kind uint8

// Message types. Parent → child: warmup, batch, cancel, shutdown. Child → parent: ready,
// chunk, result, heartbeat.
const (
	kindWarmup kind = iota + 1
	kindReady
	kindBatch
	kindChunk
	kindResult
	kindCancel
	kindHeartbeat
	kindShutdown
)

func (k kind) String() string {
	names := map[kind]string{kindWarmup: "warmup", kindReady: "ready", kindBatch: "batch", kindChunk: "chunk",
		kindResult: "result", kindCancel: "cancel", kindHeartbeat: "heartbeat", kindShutdown: "shutdown"}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// message is one frame's content. Which fields are set depends on Kind.
type message struct {
	Kind kind
	// Warmup: how often the child sends heartbeats.
	Heartbeat time.Duration
	// Batch: the jobs to run together.
	Jobs []wireJob
	// Chunk, Result, Cancel: the job.
	Job uint64
	// Chunk: a streamed piece.
	Chunk *runners.TranscriptChunk
	// Result: the job's value; Ready and Result: the error.
	Result *wireResult
	Err    *wireError
}

// wireJob is one task of a batch.
type wireJob struct {
	ID       uint64
	Deadline time.Time // zero: none
	Stream   bool      // the parent relays chunks (the task has an Emit)
	Image    *wireImageRequest
	Audio    *wireAudioRequest
	CNN      *wireCNNRequest
}

// wireImageRequest keeps nil and empty schedules apart (gob does not).
type wireImageRequest struct {
	Req                     runners.ImageRequest
	HasTimesteps, HasSigmas bool
}

// wireAudioRequest keeps nil (no pre-processing) and empty Segments apart.
type wireAudioRequest struct {
	Req         runners.AudioRequest
	HasSegments bool
}

// wireCNNRequest carries the image as RGBA pixels.
type wireCNNRequest struct {
	Image         wireImage
	TopK          int
	MinConfidence float64
}

// wireImage is an RGBA picture: its rectangle and pixels (4 bytes per pixel, stride 4*width).
type wireImage struct {
	Rect image.Rectangle
	Pix  []byte
}

// wireResult is one job's value.
type wireResult struct {
	Images     []wireImage
	Transcript *runners.TranscriptionResult
	CNN        *runners.CNNResult
}

// Error classes that survive the trip, so the parent's errors.Is still works.
const (
	errOther      = ""
	errBadRequest = "bad_request"
	errDeviceLost = "device_lost"
	errCanceled   = "canceled"
	errDeadline   = "deadline"
)

// wireError is an error as text plus its class.
type wireError struct {
	Class string
	Msg   string
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
	case errCanceled:
		return target == context.Canceled
	case errDeadline:
		return target == context.DeadlineExceeded
	}
	return false
}

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	return &remoteError{class: w.Class, msg: w.Msg}
}

// toWireImage copies any image into RGBA pixels.
func toWireImage(img image.Image) wireImage {
	if img == nil {
		return wireImage{}
	}
	rgba, ok := img.(*image.RGBA)
	if !ok || rgba.Stride != 4*rgba.Rect.Dx() {
		b := img.Bounds()
		rgba = image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
	}
	return wireImage{Rect: rgba.Rect, Pix: rgba.Pix}
}

// rgba rebuilds the picture, checking that the pixels fill the rectangle.
func (w wireImage) rgba() (*image.RGBA, error) {
	dx, dy := w.Rect.Dx(), w.Rect.Dy()
	if dx < 0 || dy < 0 || int64(dx)*int64(dy)*4 != int64(len(w.Pix)) {
		return nil, fmt.Errorf("%w: image %v with %d bytes of pixels", ErrProtocol, w.Rect, len(w.Pix))
	}
	return &image.RGBA{Pix: w.Pix, Stride: 4 * dx, Rect: w.Rect}, nil
}

// toWireJob encodes a task's request.
func toWireJob(id uint64, t runners.Task) (wireJob, error) {
	j := wireJob{ID: id, Stream: t.Emit != nil}
	if t.Ctx != nil {
		if dl, ok := t.Ctx.Deadline(); ok {
			j.Deadline = dl
		}
	}
	switch r := t.Request.(type) {
	case *runners.ImageRequest:
		if r == nil {
			return j, errors.New("nil *runners.ImageRequest")
		}
		j.Image = &wireImageRequest{Req: *r, HasTimesteps: r.Timesteps != nil, HasSigmas: r.Sigmas != nil}
	case *runners.AudioRequest:
		if r == nil {
			return j, errors.New("nil *runners.AudioRequest")
		}
		j.Audio = &wireAudioRequest{Req: *r, HasSegments: r.Segments != nil}
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
func (j wireJob) request() (any, error) {
	switch {
	case j.Image != nil:
		r := j.Image.Req
		if j.Image.HasTimesteps && r.Timesteps == nil {
			r.Timesteps = []float64{}
		}
		if j.Image.HasSigmas && r.Sigmas == nil {
			r.Sigmas = []float64{}
		}
		return &r, nil
	case j.Audio != nil:
		r := j.Audio.Req
		if j.Audio.HasSegments && r.Segments == nil {
			r.Segments = []runners.Span{}
		}
		return &r, nil
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
func toWireResult(v any) (*wireResult, error) {
	switch r := v.(type) {
	case *runners.ImageResult:
		w := &wireResult{Images: make([]wireImage, 0, len(r.Images))}
		for _, img := range r.Images {
			w.Images = append(w.Images, toWireImage(img))
		}
		return w, nil
	case *runners.TranscriptionResult:
		return &wireResult{Transcript: r}, nil
	case *runners.CNNResult:
		return &wireResult{CNN: r}, nil
	}
	return nil, fmt.Errorf("result type %T cannot be sent from a worker process", v)
}

// value decodes the result.
func (w *wireResult) value() (any, error) {
	switch {
	case w == nil:
		return nil, fmt.Errorf("%w: result without a value", ErrProtocol)
	case w.Transcript != nil:
		return w.Transcript, nil
	case w.CNN != nil:
		return w.CNN, nil
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

// writeFrame writes one message: a 4-byte big-endian length, then the gob encoding (a fresh
// encoder per frame, so every frame decodes on its own).
func writeFrame(w io.Writer, m *message) error {
	b, err := encodeFrame(m)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write %v frame: %w", m.Kind, err)
	}
	return nil
}

// encodeFrame returns the frame's bytes, length prefix included.
func encodeFrame(m *message) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	if err := gob.NewEncoder(&buf).Encode(m); err != nil {
		return nil, fmt.Errorf("encode %v frame: %w", m.Kind, err)
	}
	b := buf.Bytes()
	n := len(b) - 4
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %v frame of %d bytes exceeds %d", ErrProtocol, m.Kind, n, MaxFrame)
	}
	binary.BigEndian.PutUint32(b, uint32(n))
	return b, nil
}

// readFrame reads one message. It returns io.EOF only at a clean frame boundary.
func readFrame(r io.Reader) (*message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: truncated frame header", ErrProtocol)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrame {
		return nil, fmt.Errorf("%w: frame length %d (max %d)", ErrProtocol, n, MaxFrame)
	}
	// Read what arrives rather than allocating the announced size up front.
	body, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil || len(body) != int(n) {
		return nil, fmt.Errorf("%w: truncated frame (%d of %d bytes): %v", ErrProtocol, len(body), n, err)
	}
	m := new(message)
	dec := gob.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%w: decode frame: %w", ErrProtocol, err)
	}
	if m.Kind < kindWarmup || m.Kind > kindShutdown {
		return nil, fmt.Errorf("%w: unknown message %v", ErrProtocol, m.Kind)
	}
	return m, nil
}
