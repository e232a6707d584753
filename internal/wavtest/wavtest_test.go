package wavtest

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPCM16Layout: the canonical 44-byte header every WAV reader takes (RIFF size, fmt chunk of
// 16 bytes, PCM, mono, rate, byte rate, block align 2, 16 bits, data size), then the samples
// little-endian.
func TestPCM16Layout(t *testing.T) {
	tests := []struct {
		name    string
		rate    int
		samples []int16
	}{
		{"three samples", 16000, []int16{0, -32768, 32767}},
		{"empty", 8000, nil},
		{"tone", 22050, Tone(22050, 0.01, 440, 0.5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := PCM16(tc.rate, tc.samples)
			le := binary.LittleEndian
			require.Len(t, b, 44+2*len(tc.samples))
			require.Equal(t, "RIFF", string(b[0:4]))
			require.Equal(t, uint32(len(b)-8), le.Uint32(b[4:]))
			require.Equal(t, "WAVEfmt ", string(b[8:16]))
			require.Equal(t, uint32(16), le.Uint32(b[16:]))
			require.Equal(t, uint16(1), le.Uint16(b[20:]), "PCM")
			require.Equal(t, uint16(1), le.Uint16(b[22:]), "mono")
			require.Equal(t, uint32(tc.rate), le.Uint32(b[24:]))
			require.Equal(t, uint32(2*tc.rate), le.Uint32(b[28:]))
			require.Equal(t, uint16(2), le.Uint16(b[32:]))
			require.Equal(t, uint16(16), le.Uint16(b[34:]))
			require.Equal(t, "data", string(b[36:40]))
			require.Equal(t, uint32(2*len(tc.samples)), le.Uint32(b[40:]))
			for i, v := range tc.samples {
				require.Equal(t, v, int16(le.Uint16(b[44+2*i:])), "sample %d", i)
			}
		})
	}
}

func TestTone(t *testing.T) {
	s := Tone(16000, 1, 440, 0.5)
	require.Len(t, s, 16000)
	require.Equal(t, int16(0), s[0])
	peak := int16(0)
	for _, v := range s {
		peak = max(peak, v)
	}
	require.InDelta(t, 16384, int(peak), 2)
}
