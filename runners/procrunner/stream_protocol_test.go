package procrunner

import (
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// preview is a w×h picture at origin (x0, y0) whose every pixel differs.
func preview(x0, y0, w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(x0, y0, x0+w, y0+h))
	for y := y0; y < y0+h; y++ {
		for x := x0; x < x0+w; x++ {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: uint8(x ^ y), A: 255})
		}
	}
	return img
}

// requireSamePicture compares two pictures in RGBA, pixel for pixel.
func requireSamePicture(t *testing.T, want, got image.Image) {
	t.Helper()
	require.Equal(t, want.Bounds(), got.Bounds())
	asRGBA := func(img image.Image) []byte {
		out := image.NewRGBA(img.Bounds())
		draw.Draw(out, out.Rect, img, img.Bounds().Min, draw.Src)
		return out.Pix
	}
	require.Equal(t, asRGBA(want), asRGBA(got))
}

func TestChunksSurviveTheWire(t *testing.T) {
	nrgba := image.NewNRGBA(image.Rect(0, 0, 5, 4))
	nrgba.Set(2, 3, color.NRGBA{R: 200, G: 100, B: 50, A: 128}) // converted to premultiplied RGBA
	big := preview(0, 0, 256, 256)
	tests := []struct {
		name  string
		chunk runners.Chunk
		want  runners.Chunk // nil: want is chunk itself
	}{
		{"transcript chunk", runners.TranscriptChunk{Text: " hello", ChunkID: 4}, nil},
		{"transcript chunk by pointer arrives by value", &runners.TranscriptChunk{Text: "x", ChunkID: 1},
			runners.TranscriptChunk{Text: "x", ChunkID: 1}},
		{"256x256 preview", &runners.ImagePartial{Index: 1, ImageIndex: 2, Step: 13, Steps: 20, Image: big}, nil},
		{"offset sub-image preview", &runners.ImagePartial{Index: 2, ImageIndex: 1, Step: 3, Steps: 4,
			Image: preview(0, 0, 40, 30).SubImage(image.Rect(7, 5, 33, 21))}, nil},
		{"NRGBA preview", &runners.ImagePartial{Step: 1, Steps: 2, Image: nrgba}, nil},
		{"preview without a picture", &runners.ImagePartial{Index: 1, Step: 2, Steps: 3}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = tt.chunk
			}
			tc, partial, err := toWireChunk(tt.chunk)
			require.NoError(t, err)
			m := roundTrip(t, &message{Kind: kindChunk, Job: 7, Seq: 99, Chunk: tc, Partial: partial})
			require.Equal(t, uint64(7), m.Job)
			require.Equal(t, uint64(99), m.Seq)
			got, err := m.chunk()
			require.NoError(t, err)
			wp, isPartial := want.(*runners.ImagePartial)
			if !isPartial {
				require.Equal(t, want, got)
				return
			}
			gp, ok := got.(*runners.ImagePartial)
			require.True(t, ok, "a preview arrives as *runners.ImagePartial, got %T", got)
			require.Equal(t, [4]int{wp.Index, wp.ImageIndex, wp.Step, wp.Steps}, [4]int{gp.Index, gp.ImageIndex, gp.Step, gp.Steps})
			if wp.Image == nil {
				require.Nil(t, gp.Image)
				return
			}
			requireSamePicture(t, wp.Image, gp.Image)
		})
	}

	bad := []struct {
		name  string
		chunk runners.Chunk
		m     *message
		want  string
	}{
		{name: "unknown chunk type", chunk: textRequest("42"), want: "chunk type procrunner.textRequest cannot be sent"},
		{name: "nil preview", chunk: (*runners.ImagePartial)(nil), want: "chunk type *runners.ImagePartial cannot be sent"},
		{name: "nil transcript chunk", chunk: (*runners.TranscriptChunk)(nil), want: "cannot be sent"},
		{name: "empty chunk", m: &message{Kind: kindChunk, Job: 3}, want: "empty chunk of job 3"},
		{name: "both kinds", m: &message{Kind: kindChunk, Job: 3, Chunk: &wireTranscriptChunk{}, Partial: &wirePartial{}},
			want: "carries more than one piece"},
		{name: "pixels that do not fill the rectangle", m: &message{Kind: kindChunk, Job: 3,
			Partial: &wirePartial{Image: &wireImage{Width: 2, Height: 2, Format: formatRGBA8, Pixels: blob{Data: make([]byte, 12)}}}}, want: "with 12 bytes of pixels"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if tt.m == nil {
				_, _, err := toWireChunk(tt.chunk)
				require.ErrorContains(t, err, tt.want)
				return
			}
			_, err := roundTrip(t, tt.m).chunk()
			require.ErrorIs(t, err, ErrProtocol)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestProgressAcksAndVersionSurviveTheWire(t *testing.T) {
	tests := []struct {
		name  string
		m     *message
		check func(t *testing.T, got *message)
	}{
		{"progress", &message{Kind: kindProgress, Job: 5, Done: 3, Total: 20}, func(t *testing.T, got *message) {
			require.Equal(t, kindProgress, got.Kind)
			require.Equal(t, [3]int{5, 3, 20}, [3]int{int(got.Job), got.Done, got.Total})
		}},
		{"ack without error", &message{Kind: kindChunkAck, Job: 5, Seq: 12}, func(t *testing.T, got *message) {
			require.Equal(t, kindChunkAck, got.Kind)
			require.Equal(t, uint64(12), got.Seq)
			require.NoError(t, got.Err.err())
		}},
		{"ack of a client gone", &message{Kind: kindChunkAck, Job: 5, Seq: 13, Err: toWireError(context.Canceled)},
			func(t *testing.T, got *message) {
				require.ErrorIs(t, got.Err.err(), context.Canceled)
			}},
		{"ack of a protocol error", &message{Kind: kindChunkAck, Seq: 1, Err: toWireError(errors.Join(errors.New("x"), ErrProtocol))},
			func(t *testing.T, got *message) {
				require.ErrorIs(t, got.Err.err(), ErrProtocol)
				require.NotErrorIs(t, got.Err.err(), context.Canceled)
			}},
		{"warmup names the version", &message{Kind: kindWarmup, Version: ProtocolVersion, Heartbeat: millis(time.Second)},
			func(t *testing.T, got *message) {
				require.Equal(t, ProtocolVersion, got.Version)
				require.Equal(t, time.Second, time.Duration(got.Heartbeat))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, roundTrip(t, tt.m))
		})
	}
	require.Equal(t, "chunk_ack", kindChunkAck.String())
	require.Equal(t, "progress", kindProgress.String())
}

// TestPreviewFrameSize: a 1024x1024 preview (4 MiB of pixels) fits one frame with little
// overhead; frames stay bounded by MaxFrame as every frame is (TestBadFrames).
func TestPreviewFrameSize(t *testing.T) {
	_, p, err := toWireChunk(&runners.ImagePartial{Image: image.NewRGBA(image.Rect(0, 0, 1024, 1024))})
	require.NoError(t, err)
	b, err := encodeFrame(&message{Kind: kindChunk, Job: 1, Seq: 1, Partial: p})
	require.NoError(t, err)
	require.Greater(t, len(b), 4<<20)
	require.Less(t, len(b), 4<<20+256, "pixels plus a short JSON header")
}

// fakeRunner is an in-memory runner for Serve: run is its Run for one task.
type fakeRunner struct {
	run func(t runners.Task) runners.Outcome
}

func (f *fakeRunner) Warmup(context.Context) error { return nil }
func (f *fakeRunner) Close() error                 { return nil }
func (f *fakeRunner) Run(_ context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for i, t := range tasks {
		out[i] = f.run(t)
	}
	return out
}

// serveOverPipes runs Serve with r, returning the parent's ends of its pipes and a channel
// with Serve's error.
func serveOverPipes(t *testing.T, r runners.Runner) (io.WriteCloser, io.Reader, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Serve(context.Background(), r, inR, outW)
		_ = outW.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		require.NoError(t, <-done)
	})
	return inW, outR, done
}

// TestServeVersionMismatch: a child answers a warmup of another protocol version with an
// ErrProtocol error naming both versions, and does not warm up.
func TestServeVersionMismatch(t *testing.T) {
	warmed := false
	r := &fakeRunner{run: func(runners.Task) runners.Outcome { return runners.Outcome{} }}
	in, out, _ := serveOverPipes(t, &warmupSpy{Runner: r, warmed: &warmed})
	require.NoError(t, writeFrame(in, &message{Kind: kindWarmup, Version: 1}))
	m, err := readFrame(out)
	require.NoError(t, err)
	require.Equal(t, kindReady, m.Kind)
	require.Equal(t, ProtocolVersion, m.Version)
	require.ErrorIs(t, m.Err.err(), ErrProtocol)
	require.ErrorContains(t, m.Err.err(), "the server speaks protocol version 1, this worker 3")
	require.False(t, warmed)
}

type warmupSpy struct {
	runners.Runner
	warmed *bool
}

func (w *warmupSpy) Warmup(ctx context.Context) error { *w.warmed = true; return w.Runner.Warmup(ctx) }

// TestServeEmitWaitsForTheAnswer: in the child a task's Emit returns only when the parent has
// answered the chunk, and returns the parent's error; progress goes out as it happens.
func TestServeEmitWaitsForTheAnswer(t *testing.T) {
	emitted := make(chan error, 2)
	r := &fakeRunner{run: func(task runners.Task) runners.Outcome {
		task.Progress(1, 2)
		emitted <- task.Emit(&runners.ImagePartial{Index: 0, Step: 1, Steps: 2, Image: preview(0, 0, 3, 3)})
		task.Progress(2, 2)
		emitted <- task.Emit(runners.TranscriptChunk{Text: "t"})
		return runners.Outcome{Value: &runners.CNNResult{}}
	}}
	in, out, _ := serveOverPipes(t, r)
	require.NoError(t, writeFrame(in, &message{Kind: kindWarmup, Version: ProtocolVersion}))
	m, err := readFrame(out)
	require.NoError(t, err)
	require.Equal(t, kindReady, m.Kind)
	require.NoError(t, m.Err.err())

	require.NoError(t, writeFrame(in, &message{Kind: kindBatch, Jobs: []wireJob{{ID: 4, Stream: true, Progress: true,
		CNN: &wireCNNRequest{Image: toWireImage(preview(0, 0, 2, 2))}}}}))
	next := func(want kind) *message {
		t.Helper()
		m, err := readFrame(out)
		require.NoError(t, err)
		require.Equal(t, want, m.Kind, "got %v", m.Kind)
		require.Equal(t, uint64(4), m.Job)
		return m
	}
	p := next(kindProgress)
	require.Equal(t, [2]int{1, 2}, [2]int{p.Done, p.Total})
	c := next(kindChunk)
	require.NotNil(t, c.Partial)
	select {
	case err := <-emitted:
		t.Fatalf("Emit returned %v before the parent answered", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, writeFrame(in, &message{Kind: kindChunkAck, Job: 4, Seq: c.Seq + 1000})) // not this chunk's
	require.NoError(t, writeFrame(in, &message{Kind: kindChunkAck, Job: 4, Seq: c.Seq}))
	require.NoError(t, <-emitted)

	next(kindProgress)
	c2 := next(kindChunk)
	require.Greater(t, c2.Seq, c.Seq)
	require.Equal(t, &wireTranscriptChunk{Text: "t"}, c2.Chunk)
	require.NoError(t, writeFrame(in, &message{Kind: kindChunkAck, Job: 4, Seq: c2.Seq, Err: toWireError(context.Canceled)}))
	err = <-emitted
	require.ErrorIs(t, err, context.Canceled, "the parent's Emit error is the child's")
	next(kindResult)
	require.NoError(t, writeFrame(in, &message{Kind: kindShutdown}))
}
