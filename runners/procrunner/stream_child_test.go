//go:build cgo

package procrunner

import (
	"context"
	"errors"
	"fmt"
	"image"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/simimage"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/simaudio"
)

// streamLog records, in the order they happen, a task's Progress calls and emitted chunks,
// and answers the n-th Emit (from 1) with fail(n).
type streamLog struct {
	mu       sync.Mutex
	events   []string
	previews []*runners.ImagePartial
	chunks   []runners.TranscriptChunk
	fail     func(n int) error
}

func (l *streamLog) progress(done, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("progress %d/%d", done, total))
}

func (l *streamLog) emit(c runners.Chunk) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch v := c.(type) {
	case *runners.ImagePartial:
		l.events = append(l.events, fmt.Sprintf("partial %d (image %d) after step %d of %d, %v",
			v.Index, v.ImageIndex, v.Step, v.Steps, v.Image.Bounds()))
		l.previews = append(l.previews, v)
	case runners.TranscriptChunk:
		l.events = append(l.events, fmt.Sprintf("chunk %d %q", v.ChunkID, v.Text))
		l.chunks = append(l.chunks, v)
	default:
		l.events = append(l.events, fmt.Sprintf("unexpected %T", c))
	}
	if l.fail != nil {
		return l.fail(len(l.previews) + len(l.chunks))
	}
	return nil
}

// runStream runs req on r as one streaming task with its own context.
func runStream(ctx context.Context, r runners.Runner, req runners.Request, l *streamLog) runners.Outcome {
	return r.Run(context.Background(), []runners.Task{{Ctx: ctx, Request: req, Emit: l.emit, Progress: l.progress}})[0]
}

// TestPreviewsAndProgressReachTheParent: through the child a streaming image task's step
// progress and previews reach the parent's Progress and Emit in the order the runner made
// them, all before Run returns, with the same previews (every field, every pixel) as the
// in-process runner.
func TestPreviewsAndProgressReachTheParent(t *testing.T) {
	r, _ := newChild(t, nil, nil)
	warm(t, r)
	local := simimage.New(catalogue.RunnerSDXL, 1024, simdev.Latency{})
	t.Cleanup(func() { _ = local.Close() })
	req := &runners.ImageRequest{Prompt: "Volcano on a beach", NumInferenceSteps: 9, Seed: seedPtr(3), PartialImages: 2}

	var remote, inproc streamLog
	got := runStream(context.Background(), r, req, &remote)
	want := runStream(context.Background(), local, req, &inproc)
	require.NoError(t, got.Err)
	require.NoError(t, want.Err)

	require.Equal(t, []string{
		"progress 1/9", "progress 2/9", "progress 3/9",
		"partial 0 (image 0) after step 3 of 9, (0,0)-(256,256)",
		"progress 4/9", "progress 5/9", "progress 6/9",
		"partial 1 (image 0) after step 6 of 9, (0,0)-(256,256)",
		"progress 7/9", "progress 8/9", "progress 9/9",
	}, remote.events)
	require.Equal(t, inproc.events, remote.events)
	for i, p := range remote.previews {
		require.Equal(t, inproc.previews[i].Image.(*image.RGBA).Pix, p.Image.(*image.RGBA).Pix, "preview %d", i)
	}
	require.Equal(t, want.Value.(*runners.ImageResult).Images[0].(*image.RGBA).Pix,
		got.Value.(*runners.ImageResult).Images[0].(*image.RGBA).Pix)
}

// TestEmitErrorsReachTheChild: the parent's Emit error is what the runner's Emit returns in
// the child, so the runner behaves as it does in process: a live task whose stream refuses
// previews still finishes (no further previews), a task whose client went away stops at that
// step, and a transcription fails naming the error.
func TestEmitErrorsReachTheChild(t *testing.T) {
	image := &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 12, Seed: seedPtr(5), PartialImages: 3}
	audio := &runners.AudioRequest{Samples: sineAudio(3), SampleRate: 16000, Duration: 3, Stream: true,
		Segments: []runners.Span{{Start: 0.1, End: 2.8}}}
	refused := errors.New("this stream cannot carry previews")
	tests := []struct {
		name    string
		runner  string
		local   func() runners.Runner
		req     runners.Request
		gone    bool // the failing Emit cancels the task's context first, as a client leaving does
		failAt  int
		wantErr error
		emits   int
	}{
		{"image: stream refuses previews", catalogue.RunnerSDXL, func() runners.Runner {
			return simimage.New(catalogue.RunnerSDXL, 1024, simdev.Latency{})
		}, image, false, 1, nil, 1},
		{"image: client gone", catalogue.RunnerSDXL, func() runners.Runner {
			return simimage.New(catalogue.RunnerSDXL, 1024, simdev.Latency{})
		}, image, true, 2, context.Canceled, 2},
		{"transcription: client gone", catalogue.RunnerWhisper, func() runners.Runner {
			return simaudio.New(simdev.Latency{})
		}, audio, true, 2, context.Canceled, 2},
		{"transcription: emit fails", catalogue.RunnerWhisper, func() runners.Runner {
			return simaudio.New(simdev.Latency{})
		}, audio, false, 2, refused, 2},
	}
	parent := t
	children := map[string]*Runner{} // one per model, reused: a job's failure leaves the child up
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := children[tt.runner]
			if r == nil {
				r, _ = newChild(parent, map[string]string{"MODEL_RUNNER": tt.runner}, nil) // closed when the whole test ends
				warm(t, r)
				children[tt.runner] = r
			}
			local := tt.local()
			t.Cleanup(func() { _ = local.Close() })
			run := func(r runners.Runner) (runners.Outcome, *streamLog) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				l := &streamLog{fail: func(n int) error {
					if n < tt.failAt {
						return nil
					}
					if tt.gone {
						cancel()
						return context.Canceled
					}
					return refused
				}}
				return runStream(ctx, r, tt.req, l), l
			}
			got, remote := run(r)
			want, inproc := run(local)
			require.Equal(t, inproc.events, remote.events, "the runner went on exactly as in process")
			require.Equal(t, tt.emits, len(remote.previews)+len(remote.chunks))
			if tt.wantErr == nil {
				require.NoError(t, want.Err)
				require.NoError(t, got.Err)
				return
			}
			require.ErrorIs(t, want.Err, tt.wantErr)
			require.NotErrorIs(t, got.Err, runners.ErrDeviceLost)
			if tt.wantErr == refused { //nolint:errorlint // which case this is, not an error check // its text crossed the pipe (and classes do, below)
				require.EqualError(t, got.Err, want.Err.Error(), "the child's Emit returned the parent's error")
				return
			}
			require.ErrorIs(t, got.Err, tt.wantErr)
		})
	}
}
