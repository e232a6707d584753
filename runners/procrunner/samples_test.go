package procrunner

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

func TestSamplesTravelAsBytes(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00001)} // a NaN with a payload
	tests := []struct {
		name    string
		samples []float32
	}{
		{"none", nil},
		{"special values bit for bit", special},
		{"five seconds", make([]float32, 5*16000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := toWireJob(1, runners.Task{Request: &runners.AudioRequest{Samples: tt.samples, SampleRate: 16000}})
			require.NoError(t, err)
			require.Len(t, w.Audio.Samples.Data, 4*len(tt.samples), "samples go as a blob of float32 bytes")
			got, err := roundTrip(t, &message{Kind: kindBatch, Jobs: []wireJob{w}}).Jobs[0].request()
			require.NoError(t, err)
			back := got.(*runners.AudioRequest).Samples
			require.Len(t, back, len(tt.samples))
			for i := range tt.samples {
				require.Equal(t, math.Float32bits(tt.samples[i]), math.Float32bits(back[i]), "sample %d", i)
			}
		})
	}
	t.Run("a partial sample is a protocol error", func(t *testing.T) {
		_, err := wireJob{ID: 1, Audio: &wireAudioRequest{Samples: blob{Data: []byte{1, 2, 3, 4, 5}}}}.request()
		require.ErrorIs(t, err, ErrProtocol)
	})
}
