package imaging

import (
	"bytes"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// rgbAt is the RGB of an NRGBA pixel, which must be opaque.
func rgbAt(t *testing.T, img *image.NRGBA, x, y int) [3]uint8 {
	t.Helper()
	c := img.NRGBAAt(x, y)
	require.Equal(t, uint8(0xFF), c.A)
	return [3]uint8{c.R, c.G, c.B}
}

func TestToRGBModes(t *testing.T) {
	r1 := image.Rect(0, 0, 1, 1)
	gray := image.NewGray(r1)
	gray.Pix[0] = 77
	gray16 := image.NewGray16(r1)
	gray16.SetGray16(0, 0, color.Gray16{Y: 0xABCD})
	nrgba := image.NewNRGBA(r1)
	nrgba.Pix = []uint8{10, 20, 30, 0} // fully transparent: the colour stays
	rgba := image.NewRGBA(r1)
	rgba.Pix = []uint8{50, 25, 0, 128} // premultiplied half-transparent (100, 50, 0)
	nrgba64 := image.NewNRGBA64(r1)
	nrgba64.SetNRGBA64(0, 0, color.NRGBA64{R: 0x1234, G: 0xFF00, B: 0x00FF, A: 0x0101})
	pal := image.NewPaletted(r1, color.Palette{color.RGBA{1, 2, 3, 255}, color.NRGBA{200, 100, 50, 255}})
	pal.Pix[0] = 1
	cmyk := image.NewCMYK(r1)
	cmyk.Pix = []uint8{0, 255, 255, 0} // red
	ycc := image.NewYCbCr(r1, image.YCbCrSubsampleRatio444)
	ycc.Y[0], ycc.Cb[0], ycc.Cr[0] = 100, 90, 200
	yr, yg, yb := color.YCbCrToRGB(100, 90, 200)
	nycca := image.NewNYCbCrA(r1, image.YCbCrSubsampleRatio444)
	nycca.Y[0], nycca.Cb[0], nycca.Cr[0], nycca.A[0] = 100, 90, 200, 0

	tests := []struct {
		name string
		img  image.Image
		want [3]uint8
	}{
		{"gray replicated", gray, [3]uint8{77, 77, 77}},
		{"gray16 high byte", gray16, [3]uint8{0xAB, 0xAB, 0xAB}},
		{"nrgba alpha dropped", nrgba, [3]uint8{10, 20, 30}},
		{"rgba unpremultiplied", rgba, [3]uint8{99, 49, 0}},
		{"nrgba64 high bytes, alpha dropped", nrgba64, [3]uint8{0x12, 0xFF, 0x00}},
		{"palette lookup", pal, [3]uint8{200, 100, 50}},
		{"cmyk", cmyk, [3]uint8{255, 0, 0}},
		{"ycbcr 4:4:4", ycc, [3]uint8{yr, yg, yb}},
		{"nycbcra alpha dropped", nycca, [3]uint8{yr, yg, yb}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := ToRGB(tc.img)
			require.Equal(t, image.Rect(0, 0, 1, 1), out.Bounds())
			require.Equal(t, tc.want, rgbAt(t, out, 0, 0))
		})
	}
	t.Run("origin moves to zero", func(t *testing.T) {
		sub := image.NewNRGBA(image.Rect(5, 7, 8, 9))
		sub.SetNRGBA(6, 8, color.NRGBA{1, 2, 3, 4})
		out := ToRGB(sub)
		require.Equal(t, image.Rect(0, 0, 3, 2), out.Bounds())
		require.Equal(t, [3]uint8{1, 2, 3}, rgbAt(t, out, 1, 1))
	})
}

// TestFancyUpsampleMatchesLibjpeg checks the chroma upsampling against values worked out by hand
// from libjpeg's jdsample.c on a 4×4 4:2:0 image with 2×2 chroma.
func TestFancyUpsampleMatchesLibjpeg(t *testing.T) {
	m := image.NewYCbCr(image.Rect(0, 0, 4, 4), image.YCbCrSubsampleRatio420)
	for i := range m.Y {
		m.Y[i] = 128
	}
	copy(m.Cb, []uint8{0, 160, 80, 240}) // rows (0,160), (80,240)
	copy(m.Cr, []uint8{128, 128, 128, 128})
	out := image.NewNRGBA(m.Rect)
	require.True(t, fancyUpsample(out, m))
	// Upsampled Cb of output row 0: colsums 3*row0 + row0 (edge) = (0, 640); outputs
	// (4*0+8)>>4=0, (3*0+640+7)>>4=40, (3*640+0+8)>>4=120, (4*640+7)>>4=160.
	// Row 1: colsums 3*row0 + row1 = (80, 720): 20, (240+720+7)>>4=60, (2160+80+8)>>4=140, 180.
	wantCb := [][]uint8{{0, 40, 120, 160}, {20, 60, 140, 180}, {60, 100, 180, 220}, {80, 120, 200, 240}}
	for y := range 4 {
		for x := range 4 {
			r, g, b := color.YCbCrToRGB(128, wantCb[y][x], 128)
			require.Equal(t, [3]uint8{r, g, b}, rgbAt(t, out, x, y), "x=%d y=%d", x, y)
		}
	}
	// 4:2:2, one row: h2v1 rounding (3s+n+1)>>2 and (3s+n+2)>>2.
	m2 := image.NewYCbCr(image.Rect(0, 0, 4, 1), image.YCbCrSubsampleRatio422)
	copy(m2.Cb, []uint8{0, 101})
	copy(m2.Cr, []uint8{128, 128})
	out2 := image.NewNRGBA(m2.Rect)
	require.True(t, fancyUpsample(out2, m2))
	for x, cb := range []uint8{0, 25, 76, 101} { // 0, (0+101+2)>>2, (303+0+1)>>2, 101
		r, g, b := color.YCbCrToRGB(m2.Y[x], cb, 128)
		require.Equal(t, [3]uint8{r, g, b}, rgbAt(t, out2, x, 0), "x=%d", x)
	}
	// Other layouts are left to the plain path.
	require.False(t, fancyUpsample(out, image.NewYCbCr(m.Rect, image.YCbCrSubsampleRatio444)))
	require.False(t, fancyUpsample(out, image.NewYCbCr(image.Rect(1, 1, 5, 5), image.YCbCrSubsampleRatio420)))
}

func TestDecodeRGBFormats(t *testing.T) {
	t.Run("GIF first frame", func(t *testing.T) {
		frame := func(c uint8) *image.Paletted {
			p := image.NewPaletted(image.Rect(0, 0, 4, 3), palette.Plan9)
			for i := range p.Pix {
				p.Pix[i] = c
			}
			return p
		}
		var buf bytes.Buffer
		require.NoError(t, gif.EncodeAll(&buf, &gif.GIF{Image: []*image.Paletted{frame(10), frame(200)}, Delay: []int{1, 1}}))
		out, format, err := DecodeRGB(buf.Bytes(), 0)
		require.NoError(t, err)
		require.Equal(t, "gif", format)
		c := color.NRGBAModel.Convert(palette.Plan9[10]).(color.NRGBA)
		require.Equal(t, [3]uint8{c.R, c.G, c.B}, rgbAt(t, out, 3, 2))
	})
	t.Run("16-bit PNG keeps the high byte", func(t *testing.T) {
		img := image.NewNRGBA64(image.Rect(0, 0, 2, 2))
		img.SetNRGBA64(1, 1, color.NRGBA64{R: 0xFEDC, G: 0x0123, B: 0x8080, A: 0x8000})
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, img))
		out, _, err := DecodeRGB(buf.Bytes(), 0)
		require.NoError(t, err)
		require.Equal(t, [3]uint8{0xFE, 0x01, 0x80}, rgbAt(t, out, 1, 1))
	})
	t.Run("palette PNG", func(t *testing.T) {
		img := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{color.NRGBA{9, 8, 7, 255}, color.NRGBA{250, 20, 30, 255}})
		img.Pix[1] = 1
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, img))
		out, _, err := DecodeRGB(buf.Bytes(), 0)
		require.NoError(t, err)
		require.Equal(t, [3]uint8{9, 8, 7}, rgbAt(t, out, 0, 0))
		require.Equal(t, [3]uint8{250, 20, 30}, rgbAt(t, out, 1, 0))
	})
	t.Run("grayscale JPEG", func(t *testing.T) {
		img := image.NewGray(image.Rect(0, 0, 16, 16))
		for i := range img.Pix {
			img.Pix[i] = uint8(i)
		}
		var buf bytes.Buffer
		require.NoError(t, jpeg.Encode(&buf, img, nil))
		out, _, err := DecodeRGB(buf.Bytes(), 0)
		require.NoError(t, err)
		for y := range 16 {
			for x := range 16 {
				c := rgbAt(t, out, x, y)
				require.True(t, c[0] == c[1] && c[1] == c[2])
			}
		}
	})
	t.Run("pixel cap and bad data keep Decode's errors", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, image.NewGray(image.Rect(0, 0, 10, 10))))
		_, _, err := DecodeRGB(buf.Bytes(), 99)
		require.ErrorIs(t, err, ErrTooLarge)
		_, _, err = DecodeRGB([]byte("not an image"), 0)
		require.ErrorIs(t, err, ErrInvalidImage)
	})
}

// resnetGolden is ../shared/testdata/resnet beside the repository; tests skip without it.
func resnetGolden(t *testing.T) string {
	t.Helper()
	return filepath.Dir(shareddata.File(t, "resnet", "index.json"))
}

// TestDecodeRGBMatchesPILConvert compares DecodeRGB with PIL's Image.open(f).convert('RGB') of
// the golden images: the RGBA PNG exactly (alpha dropped, not composited), the JPEGs within the
// IDCT difference between Go and libjpeg-turbo.
func TestDecodeRGBMatchesPILConvert(t *testing.T) {
	dir := resnetGolden(t)
	for _, tc := range []struct {
		file, stem string
		maxDiff    int
	}{
		{"alpha_shapes_300x500.png", "alpha_shapes_300x500", 0},
		{"gradient_shapes_640x480.jpg", "gradient_shapes_640x480", 3},
		{"gray_rings_1024x1024.jpg", "gray_rings_1024x1024", 2},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, tc.file))
			require.NoError(t, err)
			got, _, err := DecodeRGB(data, 0)
			require.NoError(t, err)
			f, err := os.Open(filepath.Join(dir, tc.stem+".decoded_rgb.png"))
			require.NoError(t, err)
			defer f.Close()
			ref, err := png.Decode(f)
			require.NoError(t, err)
			want := ToRGB(ref)
			require.Equal(t, want.Bounds(), got.Bounds())
			worst, sum := 0, 0
			for i := range got.Pix {
				d := int(got.Pix[i]) - int(want.Pix[i])
				d = max(d, -d)
				worst = max(worst, d)
				sum += d
			}
			t.Logf("%s: max |diff| %d levels, mean %.4f", tc.file, worst, float64(sum)/float64(len(got.Pix)*3/4))
			require.LessOrEqual(t, worst, tc.maxDiff)
		})
	}
}

// TestRecycleRGB: a JPEG decoded after RecycleRGB gave back an earlier image's storage has the
// pixels of a decode into fresh storage (the recycled bytes never show).
func TestRecycleRGB(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 90, 60))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	data, err := EncodeJPEG(img, 90)
	require.NoError(t, err)
	want, _, err := DecodeRGB(data, 0)
	require.NoError(t, err)
	for range 3 {
		old := image.NewNRGBA(image.Rect(0, 0, 100, 100))
		for i := range old.Pix {
			old.Pix[i] = 0xA5
		}
		RecycleRGB(old)
		got, _, err := DecodeRGB(data, 0)
		require.NoError(t, err)
		require.Equal(t, want, got)
		RecycleRGB(got)
	}
	RecycleRGB(nil) // no-op
}
