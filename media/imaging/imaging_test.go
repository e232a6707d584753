package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/bmp"
)

// testPicture is a w×h picture with gradients, a disc and noise, roughly like a generated image.
func testPicture(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := uint8(rng.IntN(24))
			r, g, b := uint8(x*255/w), uint8(y*255/h), uint8(128)
			dx, dy := x-w/2, y-h/3
			if dx*dx+dy*dy < w*w/16 {
				r, g, b = 240, 200, 40
			}
			img.SetRGBA(x, y, color.RGBA{r + n/2, g + n/3, b + n, 255})
		}
	}
	return img
}

func encodeWith(t *testing.T, enc func(*bytes.Buffer, image.Image) error, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, enc(&buf, img))
	return buf.Bytes()
}

// pngHeaderOnly is a PNG signature and IHDR chunk claiming w×h RGBA pixels, with no pixel data.
func pngHeaderOnly(w, h uint32) []byte {
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := append([]byte("IHDR"), ihdr...)
	_ = binary.Write(&buf, binary.BigEndian, uint32(len(ihdr)))
	buf.Write(chunk)
	_ = binary.Write(&buf, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return buf.Bytes()
}

func TestEncodeJPEG(t *testing.T) {
	img := testPicture(320, 200)
	lo, err := EncodeJPEG(img, 30)
	require.NoError(t, err)
	hi, err := EncodeJPEG(img, 95)
	require.NoError(t, err)
	require.Less(t, len(lo), len(hi), "higher quality must cost bytes")
	require.Equal(t, []byte{0xFF, 0xD8}, hi[:2])
	// Baseline: a SOF0 marker, no SOF2 (progressive).
	require.True(t, bytes.Contains(hi, []byte{0xFF, 0xC0}))
	require.False(t, bytes.Contains(hi, []byte{0xFF, 0xC2}))

	got, format, err := Decode(hi, 0)
	require.NoError(t, err)
	require.Equal(t, "jpeg", format)
	require.Equal(t, img.Bounds(), got.Bounds())
	r, g, b, _ := got.At(160, 66).RGBA() // centre of the yellow disc
	require.InDelta(t, 240, r>>8, 20)
	require.InDelta(t, 200, g>>8, 20)
	require.InDelta(t, 40, b>>8, 30)

	for _, q := range []int{0, -1, 101} {
		_, err := EncodeJPEG(img, q)
		require.Error(t, err, "quality %d", q)
	}
	_, err = EncodeJPEG(nil, 85)
	require.Error(t, err)
}

func TestEncodePNGRoundTrip(t *testing.T) {
	img := testPicture(64, 48)
	data, err := EncodePNG(img)
	require.NoError(t, err)
	got, format, err := Decode(data, 64*48)
	require.NoError(t, err)
	require.Equal(t, "png", format)
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			require.Equal(t, img.RGBAAt(x, y), color.RGBAModel.Convert(got.At(x, y)), "pixel %d,%d", x, y)
		}
	}
	_, err = EncodePNG(nil)
	require.Error(t, err)
}

func TestDecodeFormats(t *testing.T) {
	img := testPicture(40, 30)
	pal := image.NewPaletted(image.Rect(0, 0, 40, 30), color.Palette{color.Black, color.White})
	pal.SetColorIndex(3, 4, 1)
	anim := &gif.GIF{
		Image: []*image.Paletted{pal, image.NewPaletted(image.Rect(0, 0, 40, 30), color.Palette{color.White})},
		Delay: []int{10, 10},
	}
	var gifBuf bytes.Buffer
	require.NoError(t, gif.EncodeAll(&gifBuf, anim))

	tests := []struct {
		name   string
		data   []byte
		format string
	}{
		{"png", encodeWith(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }, img), "png"},
		{"jpeg", encodeWith(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) }, img), "jpeg"},
		{"bmp", encodeWith(t, func(b *bytes.Buffer, m image.Image) error { return bmp.Encode(b, m) }, img), "bmp"},
		{"gif first frame", gifBuf.Bytes(), "gif"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, format, err := Decode(tc.data, 0)
			require.NoError(t, err)
			require.Equal(t, tc.format, format)
			require.False(t, got.Bounds().Empty())
		})
	}

	// GIF: the first frame, not the last.
	got, _, err := Decode(gifBuf.Bytes(), 0)
	require.NoError(t, err)
	r, _, _, _ := got.At(3, 4).RGBA()
	require.Equal(t, uint32(0xFFFF), r)
	r, _, _, _ = got.At(0, 0).RGBA()
	require.Equal(t, uint32(0), r)
}

func TestDecodeWebP(t *testing.T) {
	for _, name := range []string{"red_4x3.webp", "red_4x3_lossless.webp"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err, "testdata/%s is checked in", name)
			img, format, err := Decode(data, 12)
			require.NoError(t, err)
			require.Equal(t, "webp", format)
			require.Equal(t, image.Rect(0, 0, 4, 3), img.Bounds())
			r, g, b, _ := img.At(1, 1).RGBA()
			require.InDelta(t, 230, int(r>>8), 15)
			require.InDelta(t, 20, int(g>>8), 15)
			require.InDelta(t, 20, int(b>>8), 15)
			_, _, err = Decode(data, 11)
			require.ErrorIs(t, err, ErrTooLarge)
		})
	}
}

func TestDecodeCapsAndErrors(t *testing.T) {
	small := encodeWith(t, func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }, testPicture(10, 10))
	tests := []struct {
		name      string
		data      []byte
		maxPixels int
		want      error
	}{
		{"at the cap", small, 100, nil},
		{"one over the cap", small, 99, ErrTooLarge},
		{"no cap", small, 0, nil},
		// 100000² pixels would be 40 GB: refused from the header alone.
		{"huge header, no pixels", pngHeaderOnly(100000, 100000), 50_000_000, ErrTooLarge},
		{"empty", nil, 0, ErrInvalidImage},
		{"garbage", []byte("this is not an image at all"), 0, ErrInvalidImage},
		{"truncated png", small[:len(small)/2], 0, ErrInvalidImage},
		{"zero width", pngHeaderOnly(0, 10), 0, ErrInvalidImage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img, _, err := Decode(tc.data, tc.maxPixels)
			if tc.want == nil {
				require.NoError(t, err)
				require.NotNil(t, img)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, img)
		})
	}
}

func FuzzDecode(f *testing.F) {
	img := testPicture(8, 6)
	for _, enc := range []func(*bytes.Buffer, image.Image) error{
		func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) },
		func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) },
		func(b *bytes.Buffer, m image.Image) error { return bmp.Encode(b, m) },
		func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) },
	} {
		var buf bytes.Buffer
		if err := enc(&buf, img); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	if webp, err := os.ReadFile(filepath.Join("testdata", "red_4x3.webp")); err == nil {
		f.Add(webp)
	}
	f.Add(pngHeaderOnly(3000, 3000))
	const maxPixels = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		img, format, err := Decode(data, maxPixels)
		if err != nil {
			if !errorsIsAny(err, ErrInvalidImage, ErrTooLarge) {
				t.Fatalf("error %v is neither ErrInvalidImage nor ErrTooLarge", err)
			}
			return
		}
		b := img.Bounds()
		if format == "" || b.Empty() || b.Dx()*b.Dy() > maxPixels {
			t.Fatalf("format %q bounds %v", format, b)
		}
	})
}

func errorsIsAny(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func BenchmarkEncodeJPEG1024Q85(b *testing.B) {
	img := testPicture(1024, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeJPEG(img, 85); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePNG1024(b *testing.B) {
	img := testPicture(1024, 1024)
	for b.Loop() {
		if _, err := EncodePNG(img); err != nil {
			b.Fatal(err)
		}
	}
}
