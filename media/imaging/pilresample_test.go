package imaging

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPILCoeffsMatchReference checks the fixed-point filter against values worked out by hand
// from Resample.c for a 2:1 downscale (support 2: taps x-1..x+2 with 1/8, 3/8, 3/8, 1/8).
func TestPILCoeffsMatchReference(t *testing.T) {
	c := NewPILCoeffs(8, 4, PILBilinear)
	require.Equal(t, 5, c.KSize)
	one := int32(1 << PILPrecisionBits)
	// Output 1: centre 3, taps 1..4 → weights (0.25, 0.75, 0.75, 0.25)/2.
	require.Equal(t, []int{1, 4}, c.Bounds[2:4])
	require.Equal(t, []int32{one / 8, 3 * one / 8, 3 * one / 8, one / 8}, c.K[5:9])
	// Output 0 is clipped at the edge: taps 0..2 with (0.75, 0.75, 0.25) normalised by 1.75.
	require.Equal(t, []int{0, 3}, c.Bounds[0:2])
	require.Equal(t, int32(0.5+0.75/1.75*float64(one)), c.K[0])
	// Lanczos: support 3, 13 taps at 2:1; the weights of an interior output sum to one.
	l := NewPILCoeffs(32, 16, PILLanczos)
	require.Equal(t, 13, l.KSize)
	var sum int32
	for _, k := range l.K[8*13 : 8*13+l.Bounds[17]] {
		sum += k
	}
	require.InDelta(t, float64(one), float64(sum), 8)
}

func TestPILResize(t *testing.T) {
	src := []uint8{0, 255, 0, 255, 0, 255, 0, 255} // 8x1 gray stripes
	require.Equal(t, src, PILResize(src, 8, 1, 1, 8, 1, PILLanczos), "same size: unchanged")
	half := PILResize(src, 8, 1, 1, 4, 1, PILBilinear)
	require.Len(t, half, 4)
	for _, v := range half[1:3] {
		require.InDelta(t, 127.5, float64(v), 1, "stripes average out")
	}
	up := PILResize([]uint8{10, 200}, 1, 2, 1, 3, 4, PILLanczos)
	require.Len(t, up, 12)
	require.Equal(t, up[0], up[2], "rows stay uniform")
	require.Equal(t, PILClip8(-5), uint8(0))
	require.Equal(t, PILClip8(300<<PILPrecisionBits), uint8(255))
}
