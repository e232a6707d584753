package diffusionpipeline

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBF16(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"tie to even (down)", 0x3f808000, 0x3f80},
		{"tie to even (up)", 0x3f818000, 0x3f82},
		{"above half rounds up", 0x3f808001, 0x3f81},
		{"below half rounds down", 0x3f807fff, 0x3f80},
		{"negative", 0xc0490fdb, 0xc049},
		{"max rounds to inf", 0x7f7fffff, 0x7f80},
		{"inf", 0x7f800000, 0x7f80},
		{"quiet NaN kept", 0x7fc00000, 0x7fc0},
		{"signalling NaN with low payload stays NaN", 0x7f800001, 0x7fc0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, 2)
			putBF16(buf, []float32{math.Float32frombits(tc.in)})
			require.Equal(t, tc.want, binary.LittleEndian.Uint16(buf))
			back := make([]float32, 1)
			getBF16(back, buf)
			require.Equal(t, uint32(tc.want)<<16, math.Float32bits(back[0]))
		})
	}
}
