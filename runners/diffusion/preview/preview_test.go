package preview

import (
	"image/color"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSteps(t *testing.T) {
	tests := []struct {
		steps, k int
		want     []int
	}{
		{20, 0, nil},
		{20, 1, []int{10}},
		{20, 3, []int{5, 10, 15}},
		{4, 3, []int{1, 2, 3}},
		{3, 3, []int{1, 2}},
		{1, 3, nil},
		{28, 2, []int{9, 18}},
	}
	for _, tc := range tests {
		got := Steps(tc.steps, tc.k)
		require.Equal(t, tc.want, got, "steps %d, k %d", tc.steps, tc.k)
		for i := 1; i < len(got); i++ {
			require.Greater(t, got[i], got[i-1])
		}
	}
}

func TestRender(t *testing.T) {
	// One pixel per channel count: the latent vector e_c (1 in channel c) gives bias + row c.
	for _, tc := range []struct {
		name string
		f    factors
	}{{"sdxl", sdxl}, {"sd3", sd3}} {
		t.Run(tc.name, func(t *testing.T) {
			c := len(tc.f.m)
			for ch := range c {
				lat := make([]float32, c*1*2) // 1x2 pixels; the second stays 0 (bias only)
				lat[ch*2] = 1
				img, err := Render(lat, c, 1, 2, 3)
				require.NoError(t, err)
				require.Equal(t, 6, img.Bounds().Dx())
				require.Equal(t, 3, img.Bounds().Dy())
				want := func(v [3]float32) color.NRGBA {
					b := func(x float32) uint8 { return uint8(math.Round(float64(min(max((x+1)/2, 0), 1) * 255))) }
					return color.NRGBA{b(v[0]), b(v[1]), b(v[2]), 255}
				}
				var v [3]float32
				for k := range 3 {
					v[k] = tc.f.bias[k] + tc.f.m[ch][k]
				}
				for y := range 3 {
					for x := range 3 {
						require.Equal(t, want(v), img.NRGBAAt(x, y), "channel %d pixel (%d,%d)", ch, x, y)
						require.Equal(t, want(tc.f.bias), img.NRGBAAt(3+x, y))
					}
				}
			}
		})
	}
}

func TestRenderClampsAndRejects(t *testing.T) {
	lat := []float32{100, 0, 0, 0}
	img, err := Render(lat, 4, 1, 1, 1)
	require.NoError(t, err)
	require.Equal(t, color.NRGBA{255, 255, 255, 255}, img.NRGBAAt(0, 0))
	img, err = Render([]float32{-100, 0, 0, 0}, 4, 1, 1, 1)
	require.NoError(t, err)
	require.Equal(t, color.NRGBA{0, 0, 0, 255}, img.NRGBAAt(0, 0))
	nan := float32(math.NaN())
	img, err = Render([]float32{nan, 0, 0, 0}, 4, 1, 1, 1)
	require.NoError(t, err)
	require.Equal(t, uint8(0), img.NRGBAAt(0, 0).R)

	_, err = Render(make([]float32, 8), 8, 1, 1, 1)
	require.ErrorIs(t, err, ErrChannels)
	_, err = Render(make([]float32, 3), 4, 1, 1, 1)
	require.Error(t, err)
	_, err = Render(make([]float32, 4), 4, 1, 1, 0)
	require.Error(t, err)
}

func BenchmarkRenderSD3(b *testing.B) {
	lat := make([]float32, 16*128*128)
	for i := range lat {
		lat[i] = float32(i%7) / 7
	}
	for b.Loop() {
		if _, err := Render(lat, 16, 128, 128, 2); err != nil {
			b.Fatal(err)
		}
	}
}
