package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/media/video"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// TestVideoAudioTrack: a text-to-audio-video model's job (MiniMax-H3, simulated) downloads as
// an MP4 with an H.264 and an AAC stream of the same length, at the catalogued sample rate;
// a video-only model's MP4 has no audio stream. Nothing but the job's files is left behind.
func TestVideoAudioTrack(t *testing.T) {
	needVideoTools(t)
	for _, tc := range []struct {
		runner   string
		body     map[string]any
		frames   int
		fps      int
		audio    bool
		duration float64
	}{
		{runner: catalogue.RunnerMiniMaxH3T2VA, body: map[string]any{"prompt": "rain on a tin roof", "duration_seconds": 4, "aspect_ratio": "1:1"},
			frames: 107, fps: 24, audio: true, duration: 107.0 / 24},
		{runner: catalogue.RunnerWan22, body: map[string]any{"prompt": "a silent film", "num_inference_steps": 4}, frames: 81, fps: 16, duration: 81.0 / 16},
	} {
		t.Run(tc.runner, func(t *testing.T) {
			e := newVideoEnv(t, tc.runner, time.Millisecond, nil)
			resp, job := e.post(t, "/v1/videos/generations", tc.body)
			require.Equal(t, http.StatusAccepted, resp.StatusCode, job)
			require.Equal(t, jobs.Completed, e.wait(t))
			id := job["id"].(string)
			r, mp4 := e.get(t, "/v1/videos/generations/"+id+"/download")
			require.Equal(t, http.StatusOK, r.StatusCode, string(mp4))
			path := filepath.Join(t.TempDir(), "v.mp4")
			require.NoError(t, os.WriteFile(path, mp4, 0o600))
			info, err := video.Probe(context.Background(), path)
			require.NoError(t, err)
			require.Equal(t, "h264", info.Codec)
			require.Equal(t, tc.frames, info.Frames)
			require.InDelta(t, tc.duration, info.Duration, 0.5/float64(tc.fps))
			if !tc.audio {
				require.Empty(t, info.Audio.Codec, "a video-only model's MP4 has no audio stream")
			} else {
				spec, ok := catalogue.Lookup(tc.runner)
				require.True(t, ok)
				require.Equal(t, video.AudioInfo{Codec: "aac", SampleRate: spec.Video.Audio.SampleRate, Channels: spec.Video.Audio.Channels,
					Duration: info.Audio.Duration}, info.Audio)
				require.InDelta(t, info.Duration, info.Audio.Duration, 1/float64(tc.fps), "the soundtrack lasts as long as the picture")
			}
			left, err := os.ReadDir(e.files.Dir)
			require.NoError(t, err)
			names := make([]string, 0, len(left))
			for _, f := range left {
				names = append(names, f.Name())
			}
			require.ElementsMatch(t, []string{id + ".mp4", id + ".thumbnail.webp", id + ".spritesheet.webp"}, names)
		})
	}
}
