package wan

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// TestSimAudio: the simulated soundtrack lasts exactly as long as the clip, is a deterministic
// function of prompt and seed, differs between prompts, and is not silent.
func TestSimAudio(t *testing.T) {
	track := runners.AudioTrack{SampleRate: 48000, Channels: 2}
	req := &runners.VideoRequest{Prompt: "rain on a tin roof", Seed: 7}
	a := simAudio(req, track, 124, 24)
	require.Equal(t, 48000, a.SampleRate)
	require.Equal(t, 2, a.Channels)
	require.Len(t, a.Samples, 124*48000/24*2, "as long as 124 frames at 24 fps")
	require.Equal(t, a, simAudio(req, track, 124, 24))
	other := simAudio(&runners.VideoRequest{Prompt: "a dog barking", Seed: 7}, track, 124, 24)
	require.NotEqual(t, a.Samples, other.Samples)
	peak := 0
	for _, v := range a.Samples {
		peak = max(peak, int(v), -int(v))
	}
	require.Greater(t, peak, 5000, "not silent")
	mono := simAudio(req, runners.AudioTrack{SampleRate: 44100, Channels: 1}, 81, 16)
	require.Len(t, mono.Samples, 81*44100/16)
}
