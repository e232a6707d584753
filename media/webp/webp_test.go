package webp

import (
	"bytes"
	"image"
	"image/color"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/nativelib"
	xwebp "golang.org/x/image/webp"
)

func picture(w, h int, alpha uint8) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(5, 6))
	for y := range h {
		for x := range w {
			n := uint8(rng.IntN(16))
			img.SetNRGBA(x, y, color.NRGBA{uint8(x*200/w) + n, uint8(y*200/h) + n/2, 90, alpha})
		}
	}
	return img
}

var paths = map[string]func(*testing.T, func()){
	"native": func(t *testing.T, f func()) {
		if err := Load(); err != nil {
			if os.Getenv("CI") == "true" && err.Error() != nativelib.ErrNotBuilt.Error() {
				t.Fatalf("CI must install libwebp7: %v", err)
			}
			t.Skipf("native path unavailable: %v", err)
		}
		f()
	},
	"go": func(t *testing.T, f func()) {
		SetEnabled(false)
		defer SetEnabled(true)
		f()
	},
}

// TestEncode: the output is a WebP that golang.org/x/image/webp decodes to the input (exactly
// for the lossless twin, within the loss for libwebp's lossy), and lower quality is smaller.
func TestEncode(t *testing.T) {
	src := picture(120, 80, 255)
	for name, run := range paths {
		t.Run(name, func(t *testing.T) {
			run(t, func() {
				data, err := Encode(src, 90)
				require.NoError(t, err)
				require.Equal(t, "RIFF", string(data[:4]))
				require.Equal(t, "WEBP", string(data[8:12]))
				dec, err := xwebp.Decode(bytes.NewReader(data))
				require.NoError(t, err)
				require.Equal(t, src.Bounds(), dec.Bounds())
				var sum float64
				for y := range 80 {
					for x := range 120 {
						r, _, _, _ := dec.At(x, y).RGBA()
						d := float64(r>>8) - float64(src.Pix[src.PixOffset(x, y)])
						sum += max(d, -d)
					}
				}
				mean := sum / (120 * 80)
				if Native() {
					require.Equal(t, "VP8 ", string(data[12:16]), "libwebp writes lossy VP8")
					require.Less(t, mean, 8.0) // VP8 smooths the ±8 level pixel noise
					low, err := Encode(src, 5)
					require.NoError(t, err)
					require.Less(t, len(low), len(data))
				} else {
					require.Equal(t, "VP8L", string(data[12:16]), "the twin writes lossless VP8L")
					require.Zero(t, mean)
				}
				_, err = Encode(src, 101)
				require.Error(t, err)
				_, err = Encode(nil, 50)
				require.Error(t, err)
			})
		})
	}
}

// TestEncodeAlpha: a translucent image keeps its alpha on both paths.
func TestEncodeAlpha(t *testing.T) {
	src := picture(32, 16, 128)
	for name, run := range paths {
		t.Run(name, func(t *testing.T) {
			run(t, func() {
				data, err := Encode(src, 80)
				require.NoError(t, err)
				dec, err := xwebp.Decode(bytes.NewReader(data))
				require.NoError(t, err)
				_, _, _, a := dec.At(3, 3).RGBA()
				require.InDelta(t, 128, float64(a>>8), 2)
			})
		})
	}
}

func TestDescribe(t *testing.T) {
	SetEnabled(false)
	require.Contains(t, Describe(), "pure Go")
	SetEnabled(true)
	if Load() == nil {
		require.Contains(t, Describe(), "libwebp")
	}
}
