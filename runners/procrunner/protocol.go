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
	"math"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// MaxFrame is the largest frame either side accepts (a frame carries one message; the biggest
// are a batch of audio requests and a batch of 1024x1024 RGBA images).
const MaxFrame = 256 << 20

// ErrProtocol marks a malformed frame or an unexpected message.
var ErrProtocol = errors.New("worker protocol error")

// ProtocolVersion is the version of the framed protocol this build speaks. The parent sends it
// in warmup and the child answers ready with its own; a mismatch (a worker executable replaced
// on disk by another build while the server runs) fails the warm-up with ErrProtocol instead
// of a confusing error later. Raise it whenever a message's meaning changes; adding an
// optional field that old peers may ignore does not need it. Version 0 is a build from before
// the number existed (it sends none).
//
//	1: transcript chunks, relayed without an answer
//	2: image previews as chunks, per-task progress, every chunk answered (chunk_ack) with
//	   the parent's Emit error
const ProtocolVersion = 2

// kind is a message type.
type kind uint8

// Message types. Parent → child: warmup, batch, cancel, shutdown, chunk_ack. Child → parent:
// ready, chunk, progress, result, heartbeat. New kinds go at the end (the numbers are on the
// wire).
const (
	kindWarmup kind = iota + 1
	kindReady
	kindBatch
	kindChunk
	kindResult
	kindCancel
	kindHeartbeat
	kindShutdown
	kindProgress
	kindChunkAck

	kindLast = kindChunkAck
)

func (k kind) String() string {
	names := map[kind]string{kindWarmup: "warmup", kindReady: "ready", kindBatch: "batch", kindChunk: "chunk",
		kindResult: "result", kindCancel: "cancel", kindHeartbeat: "heartbeat", kindShutdown: "shutdown",
		kindProgress: "progress", kindChunkAck: "chunk_ack"}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// message is one frame's content. Which fields are set depends on Kind.
type message struct {
	Kind kind
	// Warmup and Ready: the sender's ProtocolVersion.
	Version int
	// Warmup: how often the child sends heartbeats.
	Heartbeat time.Duration
	// Batch: the jobs to run together.
	Jobs []wireJob
	// Chunk, ChunkAck, Progress, Result, Cancel: the job.
	Job uint64
	// Chunk and ChunkAck: the chunk's number (per child, from 1), which its answer repeats.
	Seq uint64
	// Chunk: a streamed piece, one of Chunk and Partial.
	Chunk   *runners.TranscriptChunk
	Partial *wirePartial
	// Progress: step Done of Total.
	Done, Total int
	// Result: the job's value; Ready, Result and ChunkAck: the error.
	Result *wireResult
	Err    *wireError
}

// wirePartial is a *runners.ImagePartial: the preview travels as raw RGBA pixels (256 KiB
// for a 256x256 preview: a copy, where PNG would cost milliseconds of CPU on both sides).
type wirePartial struct {
	Index, ImageIndex, Step, Steps int
	Image                          *wireImage // nil: no picture
}

// toWireChunk encodes a streamed chunk: a transcript piece or an image preview (by value or
// by pointer).
func toWireChunk(chunk any) (*runners.TranscriptChunk, *wirePartial, error) {
	switch v := chunk.(type) {
	case runners.TranscriptChunk:
		return &v, nil, nil
	case *runners.TranscriptChunk:
		if v != nil {
			c := *v
			return &c, nil, nil
		}
	case runners.ImagePartial:
		return nil, toWirePartial(&v), nil
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
func (m *message) chunk() (any, error) {
	switch {
	case m.Chunk != nil && m.Partial != nil:
		return nil, fmt.Errorf("%w: chunk of job %d is both a transcript piece and a preview", ErrProtocol, m.Job)
	case m.Chunk != nil:
		return *m.Chunk, nil
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

// wireJob is one task of a batch.
type wireJob struct {
	ID       uint64
	Deadline time.Time // zero: none
	Stream   bool      // the parent relays chunks (the task has an Emit)
	Progress bool      // the parent relays progress (the task has a Progress)
	Image    *wireImageRequest
	Audio    *wireAudioRequest
	CNN      *wireCNNRequest
}

// wireImageRequest keeps nil and empty schedules apart (gob does not).
type wireImageRequest struct {
	Req                     runners.ImageRequest
	HasTimesteps, HasSigmas bool
}

// wireAudioRequest keeps nil (no pre-processing) and empty Segments apart. The samples
// travel as little-endian float32 bytes in Samples (Req.Samples stays nil): gob encodes a
// []float32 value by value, about 100 times slower than this copy.
type wireAudioRequest struct {
	Req         runners.AudioRequest
	Samples     []byte
	HasSegments bool
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
	errProtocol   = "protocol"
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
	j := wireJob{ID: id, Stream: t.Emit != nil, Progress: t.Progress != nil}
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
		j.Audio = &wireAudioRequest{Req: *r, Samples: float32Bytes(r.Samples), HasSegments: r.Segments != nil}
		j.Audio.Req.Samples = nil
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
		if len(j.Audio.Samples) > 0 {
			var err error
			if r.Samples, err = bytesFloat32(j.Audio.Samples); err != nil {
				return nil, err
			}
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

// readAhead is how much of a frame's announced length readFrame allocates before the bytes
// arrive: a whole 1024² RGBA result at once, while a corrupt length cannot make it allocate
// the announced size (up to MaxFrame) for bytes that never come.
const readAhead = 8 << 20

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
	// Allocate up to readAhead at once; beyond it, grow with what arrives.
	body := make([]byte, min(int(n), readAhead))
	got, err := io.ReadFull(r, body)
	if err == nil && int(n) > len(body) {
		var rest []byte
		rest, err = io.ReadAll(io.LimitReader(r, int64(n)-int64(len(body))))
		body = append(body, rest...)
		got = len(body)
	}
	if err != nil || got != int(n) {
		return nil, fmt.Errorf("%w: truncated frame (%d of %d bytes): %v", ErrProtocol, got, n, err)
	}
	m := new(message)
	dec := gob.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%w: decode frame: %w", ErrProtocol, err)
	}
	if m.Kind < kindWarmup || m.Kind > kindLast {
		return nil, fmt.Errorf("%w: unknown message %v", ErrProtocol, m.Kind)
	}
	return m, nil
}
