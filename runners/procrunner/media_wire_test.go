package procrunner

import (
	"context"
	"image"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// Speech and video jobs, their results and chunks survive the wire: samples and pixels as blobs
// (bit for bit), I2V images as pictures, the frames of a clip as one blob split back without a
// copy; malformed ones are protocol errors.
func TestSpeechAndVideoSurviveTheWire(t *testing.T) {
	emb := make([]float32, runners.SpeechEmbeddingDim)
	for i := range emb {
		emb[i] = float32(i)/512 - 0.5
	}
	img := preview(0, 0, 6, 4)
	requests := []runners.Request{
		&runners.SpeechRequest{Text: "Hello there.", SpeakerID: "speaker_0100", Stream: true},
		&runners.SpeechRequest{Text: "Mine.", Embedding: emb},
		&runners.VideoRequest{Prompt: "a lighthouse", NegativePrompt: "fog", Steps: 12, Seed: -3, Width: 104, Height: 60, Frames: 81},
		&runners.VideoRequest{Prompt: "i2v", Steps: 4, Seed: 9, Width: 8, Height: 8, Frames: 5,
			Images: []runners.VideoImage{{Image: img, FramePos: 0}, {Image: img, FramePos: 4}}},
	}
	for _, req := range requests {
		j, err := toWireJob(3, runners.Task{Ctx: context.Background(), Request: req})
		require.NoError(t, err)
		m := roundTrip(t, &message{Kind: kindBatch, Jobs: []wireJob{j}})
		got, err := m.Jobs[0].request()
		require.NoError(t, err)
		if v, ok := req.(*runners.VideoRequest); ok && len(v.Images) > 0 {
			g := got.(*runners.VideoRequest)
			require.Len(t, g.Images, len(v.Images))
			for i := range v.Images {
				require.Equal(t, v.Images[i].FramePos, g.Images[i].FramePos)
				require.Equal(t, v.Images[i].Image.(*image.RGBA).Pix, g.Images[i].Image.(*image.RGBA).Pix)
			}
			v2, g2 := *v, *g
			v2.Images, g2.Images = nil, nil
			require.Equal(t, v2, g2)
			continue
		}
		require.Equal(t, req, got)
	}

	frames := [][]byte{make([]byte, 2*3*3), make([]byte, 2*3*3)}
	frames[1][5] = 200
	results := []runners.Result{
		&runners.SpeechResult{Samples: []float32{0, 0.25, -1, 1}, SampleRate: 16000, SpeakerID: "speaker_7306", Chunks: 2, Steps: 30, Tokens: 12},
		&runners.VideoResult{Width: 3, Height: 2, FPS: 16, Frames: frames},
		&runners.VideoResult{FPS: 24, File: "/srv/export/out/clip.mp4"},
	}
	for _, res := range results {
		w, err := toWireResult(res)
		require.NoError(t, err)
		m := roundTrip(t, &message{Kind: kindResult, Job: 3, Result: w})
		got, err := m.Result.value()
		require.NoError(t, err)
		require.Equal(t, res, got)
	}
	_, err := toWireResult(&runners.VideoResult{Width: 3, Height: 2, FPS: 16, Frames: [][]byte{make([]byte, 17)}})
	require.ErrorContains(t, err, "frame 0 has 17 bytes")

	for _, c := range []runners.Chunk{
		&runners.SpeechChunk{Index: 1, Chunks: 3, Samples: []float32{0.5, -0.5}, SampleRate: 16000},
		runners.VideoProgress{Done: 0, Total: 12},
		runners.VideoProgress{Done: 12, Total: 12},
	} {
		m := &message{Kind: kindChunk, Job: 3, Seq: 1}
		require.True(t, toWireMediaChunk(m, c))
		got, err := roundTrip(t, m).chunk()
		require.NoError(t, err)
		require.Equal(t, c, got)
	}

	bad := []*message{
		{Kind: kindResult, Job: 1, Result: &wireResult{Video: &wireVideo{Width: 3, Height: 2, FPS: 16, Frames: 2, Pixels: &blob{Data: make([]byte, 35)}}}},
		{Kind: kindResult, Job: 1, Result: &wireResult{Video: &wireVideo{Width: 3, Height: 2, FPS: 0, Frames: 1, Pixels: &blob{Data: make([]byte, 18)}}}},
		{Kind: kindResult, Job: 1, Result: &wireResult{Video: &wireVideo{FPS: 16}}},
		{Kind: kindResult, Job: 1, Result: &wireResult{Video: &wireVideo{FPS: 16, File: "/x.mp4", Pixels: &blob{Data: make([]byte, 3)}}}},
		{Kind: kindResult, Job: 1, Result: &wireResult{Speech: &wireSpeech{Samples: blob{Data: make([]byte, 6)}, SampleRate: 16000}}},
		{Kind: kindResult, Job: 1, Result: &wireResult{Speech: &wireSpeech{Samples: blob{Data: make([]byte, 8)}}}},
	}
	for _, m := range bad {
		_, err := roundTrip(t, m).Result.value()
		require.ErrorIs(t, err, ErrProtocol)
	}
	_, err = roundTrip(t, &message{Kind: kindBatch, Jobs: []wireJob{{ID: 1, Speech: &wireSpeechRequest{Text: "x", Embedding: &blob{Data: make([]byte, 40)}}}}}).Jobs[0].request()
	require.ErrorIs(t, err, ErrProtocol)
	_, err = roundTrip(t, &message{Kind: kindChunk, Job: 1, Seq: 1, VideoProgress: &wireVideoProgress{Total: 1},
		Speech: &wireSpeechChunk{Samples: blob{Data: make([]byte, 4)}, SampleRate: 1}}).chunk()
	require.ErrorIs(t, err, ErrProtocol)
}
