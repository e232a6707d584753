package procrunner

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

func roundTrip(t *testing.T, m *message) *message {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, writeFrame(&buf, m))
	got, err := readFrame(&buf)
	require.NoError(t, err)
	_, err = readFrame(&buf)
	require.ErrorIs(t, err, io.EOF, "exactly one frame")
	return got
}

func TestRequestsSurviveTheWire(t *testing.T) {
	seed := int64(42)
	deadline := time.Now().Add(time.Minute).Round(0)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	gray := image.NewGray(image.Rect(3, 5, 10, 9))
	gray.Set(4, 6, color.Gray{Y: 200})
	tests := []struct {
		name string
		req  runners.Request
		want any
	}{
		{"image with seed and empty schedule", &runners.ImageRequest{Prompt: "p", Seed: &seed, NumInferenceSteps: 7,
			CropCoordsTopLeft: [2]float64{1, 2}, Timesteps: []float64{}, Sigmas: nil},
			&runners.ImageRequest{Prompt: "p", Seed: &seed, NumInferenceSteps: 7,
				CropCoordsTopLeft: [2]float64{1, 2}, Timesteps: []float64{}}},
		{"audio without pre-processing", &runners.AudioRequest{Samples: []float32{0.5, -0.25}, SampleRate: 16000, Duration: 2},
			&runners.AudioRequest{Samples: []float32{0.5, -0.25}, SampleRate: 16000, Duration: 2}},
		{"audio with no speech found", &runners.AudioRequest{Samples: []float32{1}, Segments: []runners.Span{}, Stream: true},
			&runners.AudioRequest{Samples: []float32{1}, Segments: []runners.Span{}, Stream: true}},
		{"audio with segments", &runners.AudioRequest{Segments: []runners.Span{{Start: 1, End: 2.5}}},
			&runners.AudioRequest{Segments: []runners.Span{{Start: 1, End: 2.5}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := toWireJob(9, runners.Task{Ctx: ctx, Request: tt.req})
			require.NoError(t, err)
			m := roundTrip(t, &message{Kind: kindBatch, Jobs: []wireJob{w}})
			require.Len(t, m.Jobs, 1)
			require.Equal(t, uint64(9), m.Jobs[0].ID)
			require.WithinDuration(t, deadline, fromUnixSeconds(m.Jobs[0].Deadline), time.Microsecond)
			got, err := m.Jobs[0].request()
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	t.Run("cnn image becomes RGBA with its rectangle", func(t *testing.T) {
		w, err := toWireJob(1, runners.Task{Request: &runners.CNNRequest{Image: gray, TopK: 5, MinConfidence: 10}})
		require.NoError(t, err)
		require.False(t, w.Stream)
		got, err := roundTrip(t, &message{Kind: kindBatch, Jobs: []wireJob{w}}).Jobs[0].request()
		require.NoError(t, err)
		req := got.(*runners.CNNRequest)
		require.Equal(t, 5, req.TopK)
		require.Equal(t, 10.0, req.MinConfidence)
		require.Equal(t, gray.Bounds(), req.Image.Bounds())
		for y := 5; y < 9; y++ {
			for x := 3; x < 10; x++ {
				require.Equal(t, color.RGBAModel.Convert(gray.At(x, y)), req.Image.At(x, y))
			}
		}
	})
	t.Run("image-to-image with mask and LoRA", func(t *testing.T) {
		init := image.NewRGBA(image.Rect(0, 0, 3, 2))
		init.Pix[5] = 77
		mask := image.NewGray(image.Rect(0, 0, 3, 2))
		mask.Pix[4] = 255
		w, err := toWireJob(2, runners.Task{Request: &runners.ImageRequest{Prompt: "p", InitImage: init, Mask: mask,
			Strength: 0.6, LoRAPath: "/l/a.safetensors", LoRAScale: 1.5}})
		require.NoError(t, err)
		require.Equal(t, formatGray8, w.Image.Mask.Format)
		got, err := roundTrip(t, &message{Kind: kindBatch, Jobs: []wireJob{w}}).Jobs[0].request()
		require.NoError(t, err)
		req := got.(*runners.ImageRequest)
		require.Equal(t, init, req.InitImage)
		require.Equal(t, mask, req.Mask)
		require.Equal(t, 0.6, req.Strength)
		require.Equal(t, "/l/a.safetensors", req.LoRAPath)
		require.Equal(t, 1.5, req.LoRAScale)
	})
	t.Run("unknown request type", func(t *testing.T) {
		_, err := toWireJob(1, runners.Task{Request: textRequest("text")})
		require.ErrorContains(t, err, "request type procrunner.textRequest cannot be sent")
	})
}

// textRequest is a request type the wire does not know.
type textRequest string

func (textRequest) Service() runners.Service { return "" }

func TestResultsAndErrorsSurviveTheWire(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 2, color.RGBA{R: 9, G: 8, B: 7, A: 255})
	sub := img.SubImage(image.Rect(1, 1, 3, 3)) // stride != 4*width: copied
	values := []runners.Result{
		&runners.ImageResult{Images: []image.Image{img, sub}},
		&runners.TranscriptionResult{Text: "hi", Task: "transcribe", Duration: 1.5,
			Segments: []runners.TranscriptionSegment{{ID: 0, Speaker: "S", StartTime: 0, EndTime: 1, Text: "hi"}}},
		&runners.CNNResult{Top: []runners.Classification{{Label: "tabby", Index: 281, Probability: 0.7}}},
		&runners.CNNResult{Top: []runners.Classification{}, Detections: []runners.Detection{
			{Label: "dog", Index: 16, Score: 0.9, Box: [4]float64{0.1, 0.2, 0.5, 0.75}},
			{Label: "person", Index: 0, Score: 0.4, Box: [4]float64{3, 4, 30, 40}}}},
		&runners.CNNResult{Top: []runners.Classification{{Label: "road", Index: 0, Probability: 0.5}},
			Mask: &runners.Mask{Width: 3, Height: 2, Class: []uint8{0, 1, 2, 18, 0, 7}, Labels: []string{"road"}}},
	}
	for _, v := range values {
		w, err := toWireResult(v)
		require.NoError(t, err)
		got, err := roundTrip(t, &message{Kind: kindResult, Job: 3, Result: w}).Result.value()
		require.NoError(t, err)
		if ir, ok := v.(*runners.ImageResult); ok {
			gr := got.(*runners.ImageResult)
			require.Len(t, gr.Images, 2)
			for i, want := range ir.Images {
				b := want.Bounds()
				require.Equal(t, b, gr.Images[i].Bounds())
				for y := b.Min.Y; y < b.Max.Y; y++ {
					for x := b.Min.X; x < b.Max.X; x++ {
						require.Equal(t, want.At(x, y), gr.Images[i].At(x, y))
					}
				}
			}
			continue
		}
		require.Equal(t, v, got)
	}

	t.Run("a mask whose blob is not width x height bytes", func(t *testing.T) {
		w, err := toWireResult(&runners.CNNResult{Mask: &runners.Mask{Width: 3, Height: 2, Class: []uint8{1, 2}}})
		require.NoError(t, err)
		_, err = roundTrip(t, &message{Kind: kindResult, Job: 3, Result: w}).Result.value()
		require.ErrorIs(t, err, ErrProtocol)
		require.ErrorContains(t, err, "3x2 mask of 2 bytes")
	})

	errs := []struct {
		err  error
		is   error
		text string
	}{
		{errors.Join(errors.New("x"), runners.ErrBadRequest), runners.ErrBadRequest, "x\nbad request"},
		{errors.Join(errors.New("gone"), runners.ErrDeviceLost), runners.ErrDeviceLost, "gone\ndevice lost"},
		{context.DeadlineExceeded, context.DeadlineExceeded, "context deadline exceeded"},
		{context.Canceled, context.Canceled, "context canceled"},
		{errors.New("plain"), nil, "plain"},
		{runners.Permanent(errors.New("program resnet50: shape differs")), runners.ErrConfig, "program resnet50: shape differs"},
	}
	for _, tt := range errs {
		got := roundTrip(t, &message{Kind: kindResult, Err: toWireError(tt.err)}).Err.err()
		require.EqualError(t, got, tt.text)
		if tt.is != nil {
			require.ErrorIs(t, got, tt.is)
		}
		for _, other := range []error{runners.ErrBadRequest, runners.ErrDeviceLost, runners.ErrConfig, context.Canceled, context.DeadlineExceeded} {
			if other != tt.is { //nolint:errorlint // which sentinel the case names, not an error check
				require.NotErrorIs(t, got, other)
			}
		}
	}
}

func TestBadFrames(t *testing.T) {
	frame := func(n uint32, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, n)
		return append(b, body...)
	}
	// withHeader is a frame with the JSON header h and a payload of n zero bytes.
	withHeader := func(h string, n int) []byte {
		body := binary.BigEndian.AppendUint32(nil, uint32(len(h)))
		body = append(append(body, h...), make([]byte, n)...)
		return frame(uint32(len(body)), body)
	}
	var valid bytes.Buffer
	require.NoError(t, writeFrame(&valid, &message{Kind: kindHeartbeat}))
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"zero length", frame(0, nil), "frame length 0"},
		{"too long", frame(MaxFrame+1, nil), "frame length"},
		{"truncated header", []byte{0, 0}, "truncated frame header"},
		{"truncated body", valid.Bytes()[:valid.Len()-1], "truncated frame"},
		{"short", frame(3, []byte{1, 2, 3}), "frame length 3"},
		{"header longer than the frame", frame(8, []byte{0, 0, 0, 9, '{', '}', ' ', ' '}), "header length 9"},
		{"not JSON", frame(7, []byte{0, 0, 0, 3, 1, 2, 3}), "decode frame header"},
		{"blobs that do not fill the payload", withHeader(`{"kind":"heartbeat","blobs":[2]}`, 1), "blob 0 of 2 bytes in a payload of 1"},
		{"a blob index out of range", withHeader(`{"kind":"batch","jobs":[{"id":1,"audio":{"samples":3}}],"blobs":[1]}`, 1), "refers to blob 3 of 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFrame(bytes.NewReader(tt.data))
			require.ErrorIs(t, err, ErrProtocol)
			require.ErrorContains(t, err, tt.want)
		})
	}
	t.Run("unknown kind", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, writeFrame(&buf, &message{Kind: 99}))
		_, err := readFrame(&buf)
		require.ErrorIs(t, err, ErrProtocol)
		require.ErrorContains(t, err, `unknown message "kind(99)"`)
	})
	t.Run("pixels that do not fill the rectangle", func(t *testing.T) {
		_, err := wireImage{Width: 2, Height: 2, Format: formatRGBA8, Pixels: blob{Data: make([]byte, 15)}}.rgba()
		require.ErrorIs(t, err, ErrProtocol)
	})
}

// FuzzReadFrame: any input either decodes or fails with ErrProtocol/EOF, never panics.
func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	_ = writeFrame(&buf, &message{Kind: kindBatch, Jobs: []wireJob{{ID: 1, Audio: &wireAudioRequest{Segments: []wireSpan{}, Samples: blob{Data: make([]byte, 8)}}}}})
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 1, 0})
	buf.Reset()
	_ = writeFrame(&buf, &message{Kind: kindChunk, Job: 2, Seq: 1, Partial: &wirePartial{Index: 1, Step: 2, Steps: 3,
		Image: &wireImage{X: 1, Y: 1, Width: 2, Height: 1, Format: formatRGBA8, Pixels: blob{Data: make([]byte, 8)}}}})
	_ = writeFrame(&buf, &message{Kind: kindProgress, Job: 2, Done: 1, Total: 3})
	_ = writeFrame(&buf, &message{Kind: kindChunkAck, Job: 2, Seq: 1, Err: &wireError{Class: errCanceled, Msg: "gone"}})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			m, err := readFrame(r)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrProtocol) {
					t.Fatalf("unexpected error class: %v", err)
				}
				return
			}
			for _, j := range m.Jobs {
				_, _ = j.request()
			}
			_, _ = m.Result.value()
			if m.Kind == kindChunk {
				_, _ = m.chunk()
			}
		}
	})
}
