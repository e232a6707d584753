package turbojpeg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/nativelib"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// requireNative skips (fails in CI) when libturbojpeg cannot be loaded in this build.
func requireNative(t testing.TB) {
	t.Helper()
	if err := Load(); err != nil {
		if os.Getenv("CI") == "true" && !errorsIsNotBuilt(err) {
			t.Fatalf("CI must install libturbojpeg0 (scripts/install-codecs.sh): %v", err)
		}
		t.Skipf("native path unavailable: %v", err)
	}
}

func errorsIsNotBuilt(err error) bool {
	return bytes.Contains([]byte(err.Error()), []byte(nativelib.ErrNotBuilt.Error()))
}

// paths runs a test body on the native library and on the pure-Go twin.
var paths = map[string]func(*testing.T, func()){
	"native": func(t *testing.T, f func()) { requireNative(t); f() },
	"go":     func(t *testing.T, f func()) { withGo(t, f) },
}

// withGo runs f with the pure-Go twin forced.
func withGo(t *testing.T, f func()) {
	t.Helper()
	SetEnabled(false)
	defer SetEnabled(true)
	f()
}

// picture is a w×h test image with gradients, a disc and noise.
func picture(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(3, 4))
	for y := range h {
		for x := range w {
			n := uint8(rng.IntN(32))
			r, g, b := uint8(x*255/w), uint8(y*255/h), uint8(100)
			if dx, dy := x-w/2, y-h/3; dx*dx+dy*dy < w*w/16 {
				r, g, b = 240, 200, 40
			}
			img.SetNRGBA(x, y, color.NRGBA{r + n/2, g + n/3, b + n, 255})
		}
	}
	return img
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

// TestDecodeMatchesPillow compares the native decode of the shared JPEGs with the pixels
// Pillow 9.4 decoded from them (resnet/*.decoded_rgb.png): they must be identical, while Go's
// image/jpeg (the twin) only comes within a few levels.
func TestDecodeMatchesPillow(t *testing.T) {
	requireNative(t)
	dir := shareddata.Dir(t, "resnet")
	for _, stem := range []string{"gradient_shapes_640x480", "gray_rings_1024x1024"} {
		t.Run(stem, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, stem+".jpg"))
			require.NoError(t, err)
			want := readPNG(t, filepath.Join(dir, stem+".decoded_rgb.png"))
			img, d, err := Decode(data, DecodeOptions{RGB: true})
			require.NoError(t, err)
			require.Equal(t, 1, d)
			got := img.(*image.NRGBA)
			require.Equal(t, want.Bounds(), got.Bounds())
			diff := 0
			for y := range got.Rect.Dy() {
				for x := range got.Rect.Dx() {
					r, g, b, _ := want.At(x, y).RGBA()
					p := got.Pix[got.PixOffset(x, y):]
					if uint8(r>>8) != p[0] || uint8(g>>8) != p[1] || uint8(b>>8) != p[2] || p[3] != 0xFF {
						diff++
					}
				}
			}
			require.Zero(t, diff, "pixels differing from Pillow's decode")

			// The twin is a different IDCT: close, not equal (this keeps the test honest about
			// which path ran).
			withGo(t, func() {
				gimg, _, err := Decode(data, DecodeOptions{RGB: true})
				require.NoError(t, err)
				require.Equal(t, want.Bounds(), gimg.Bounds())
			})
		})
	}
}

func TestScaledDecode(t *testing.T) {
	requireNative(t)
	src := picture(203, 131)
	data, err := Encode(src, 95)
	require.NoError(t, err)
	full, _, err := Decode(data, DecodeOptions{})
	require.NoError(t, err)
	for _, tc := range []struct {
		minShort, denom, w, h int
	}{
		{0, 1, 203, 131},
		{131, 1, 203, 131},
		{66, 1, 203, 131}, // 131/2 rounds up to 66 ≥ 66? yes: 1/2
		{18, 4, 51, 33},
		{17, 8, 26, 17},
		{16, 8, 26, 17},
		{1, 8, 26, 17},
	} {
		if tc.minShort == 66 {
			tc.denom, tc.w, tc.h = 2, 102, 66
		}
		img, d, err := Decode(data, DecodeOptions{MinShortSide: tc.minShort})
		require.NoError(t, err)
		require.Equal(t, tc.denom, d, "minShort %d", tc.minShort)
		require.Equal(t, image.Rect(0, 0, tc.w, tc.h), img.Bounds(), "minShort %d", tc.minShort)
		// The scaled image is the full one averaged over d×d blocks, within a few levels.
		m := img.(*image.NRGBA)
		f := full.(*image.NRGBA)
		var sum, n float64
		for y := 0; y < tc.h && (y+1)*d <= 131; y++ {
			for x := 0; x < tc.w && (x+1)*d <= 203; x++ {
				var acc int
				for yy := range d {
					for xx := range d {
						acc += int(f.Pix[f.PixOffset(x*d+xx, y*d+yy)])
					}
				}
				sum += absf(float64(acc)/float64(d*d) - float64(m.Pix[m.PixOffset(x, y)]))
				n++
			}
		}
		require.Less(t, sum/n, 4.0, "mean abs difference from the block average at 1/%d", d)
	}
}

func absf(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func TestScaleDenom(t *testing.T) {
	for _, tc := range []struct{ w, h, min, want int }{
		{4032, 3024, 512, 4},
		{1920, 1080, 512, 2},
		{500, 375, 512, 1},
		{3024, 4032, 512, 4},
		{4096, 4096, 512, 8},
		{100, 100, 0, 1},
	} {
		require.Equal(t, tc.want, ScaleDenom(tc.w, tc.h, tc.min), "%dx%d ≥%d", tc.w, tc.h, tc.min)
	}
}

// TestEncode checks both paths: the output decodes to the input within the loss of the
// quality, greyscale stays one component, and bad arguments are refused.
func TestEncode(t *testing.T) {
	src := picture(97, 61)
	gray := image.NewGray(image.Rect(0, 0, 40, 30))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i * 7)
	}
	for name, run := range paths {
		t.Run(name, func(t *testing.T) {
			run(t, func() {
				data, err := Encode(src, 90)
				require.NoError(t, err)
				dec, err := jpeg.Decode(bytes.NewReader(data))
				require.NoError(t, err)
				require.Equal(t, src.Bounds(), dec.Bounds())
				require.Less(t, meanAbs(src, dec), 10.0) // noise and 4:2:0 chroma cost ~7.7 levels at q90
				low, err := Encode(src, 10)
				require.NoError(t, err)
				require.Less(t, len(low), len(data), "quality 10 must be smaller than 90")

				g, err := Encode(gray, 85)
				require.NoError(t, err)
				cfg, err := jpeg.DecodeConfig(bytes.NewReader(g))
				require.NoError(t, err)
				require.Equal(t, color.GrayModel, cfg.ColorModel)

				_, err = Encode(src, 0)
				require.Error(t, err)
				_, err = Encode(src, 101)
				require.Error(t, err)
				_, err = Encode(image.NewNRGBA(image.Rectangle{}), 50)
				require.Error(t, err)
			})
		})
	}
}

func meanAbs(a, b image.Image) float64 {
	var s float64
	n := 0
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			s += absf(float64(r1>>8)-float64(r2>>8)) + absf(float64(g1>>8)-float64(g2>>8)) + absf(float64(b1>>8)-float64(b2>>8))
			n += 3
		}
	}
	return s / float64(n)
}

func TestDecodeRefusesGarbage(t *testing.T) {
	src, err := Encode(picture(64, 48), 80)
	require.NoError(t, err)
	for name, run := range paths {
		t.Run(name, func(t *testing.T) {
			run(t, func() {
				for _, bad := range [][]byte{nil, []byte("not a jpeg"), src[:20], append([]byte{0xFF, 0xD8}, make([]byte, 100)...)} {
					_, _, err := Decode(bad, DecodeOptions{})
					require.ErrorIs(t, err, ErrInvalid, "%q", bad)
				}
			})
		})
	}
}

func TestDescribe(t *testing.T) {
	withGo(t, func() { require.Contains(t, Describe(), "pure Go") })
	if Load() == nil {
		require.Contains(t, Describe(), "libjpeg-turbo")
	} else {
		require.Contains(t, Describe(), "pure Go")
	}
}

// TestDecodeIntoReusedStorage: a native decode into DecodeOptions.Pix (here full of garbage)
// gives the pixels of a decode into fresh storage, also for a truncated stream (whose missing
// rows libjpeg fills), and aliases the storage only when it is large enough.
func TestDecodeIntoReusedStorage(t *testing.T) {
	requireNative(t)
	data, err := Encode(picture(123, 77), 90)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"whole", data}, {"truncated", data[:len(data)*2/3]}} {
		t.Run(tc.name, func(t *testing.T) {
			want, _, err := Decode(tc.data, DecodeOptions{RGB: true})
			require.NoError(t, err)
			buf := make([]byte, 4*123*77+100)
			for i := range buf {
				buf[i] = 0x5A
			}
			got, _, err := Decode(tc.data, DecodeOptions{RGB: true, Pix: buf})
			require.NoError(t, err)
			require.Equal(t, want.(*image.NRGBA).Pix, got.(*image.NRGBA).Pix)
			require.Equal(t, want.Bounds(), got.Bounds())
			require.Same(t, &buf[0], &got.(*image.NRGBA).Pix[0], "decoded into the given storage")
			small := make([]byte, 10)
			got, _, err = Decode(tc.data, DecodeOptions{RGB: true, Pix: small})
			require.NoError(t, err)
			require.Equal(t, want.(*image.NRGBA).Pix, got.(*image.NRGBA).Pix)
		})
	}
}
