package transcribe

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
)

// TestWindowsSliceTheWholeFileLogMel: as in whisper, every window is a slice of the log-mel
// of the whole file, floored at the file's maximum - 8: a quiet first half-minute followed by
// loud audio is not floored at its own maximum, and frames past a window's audio are zeros.
func TestWindowsSliceTheWholeFileLogMel(t *testing.T) {
	tok := byteTokenizer(t)
	T := func(sec float64) int { return ts(tok, sec) }
	x := make([]float32, 45*16000)
	for i := range x {
		amp := 1e-6
		if i >= 30*16000 {
			amp = 0.5
		}
		x[i] = float32(amp * math.Sin(float64(i)*0.07))
	}
	m := &fakeModel{tok: tok, windows: []fakeWindow{
		{attempts: [][]int{seq(tok, T(0), " A", T(1))}},
		{attempts: [][]int{seq(tok, T(0), " B", T(1))}},
	}}
	opts := byteOptions()
	var seeks []int
	opts.OnWindow = func(seek, content int) {
		require.Equal(t, 4500, content)
		seeks = append(seeks, seek)
	}
	res, err := Transcribe(context.Background(), m, tok, x, opts, nil)
	require.NoError(t, err)
	require.Equal(t, " A B", res.Text)
	require.Equal(t, []int{3000, 4500}, seeks, "OnWindow after each window with the next seek")

	lm, err := audio.WhisperLogMel(80)
	require.NoError(t, err)
	full, err := lm.ComputeFull(context.Background(), x)
	require.NoError(t, err)
	w0, err := full.Window(0, 3000, nil)
	require.NoError(t, err)
	w1, err := full.Window(3000, 1500, nil)
	require.NoError(t, err)
	require.Len(t, m.mels, 2)
	require.Equal(t, w0, m.mels[0])
	require.Equal(t, w1, m.mels[1])
	require.Equal(t, float32(0), m.mels[1][2999], "past the audio: zeros")
	own, err := lm.Compute(context.Background(), x[:30*16000], nil)
	require.NoError(t, err)
	require.NotEqual(t, own, m.mels[0], "a per-window log-mel floors the quiet window at its own maximum")
}
