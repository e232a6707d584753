package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
)

// pngHeader is a PNG signature and IHDR chunk only: enough for DecodeConfig and DecodeCost,
// nothing to decode.
func pngHeader(w, h uint32, depth, colorType byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = depth, colorType
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestDecodeCost(t *testing.T) {
	small := func(img image.Image) []byte {
		var b bytes.Buffer
		require.NoError(t, png.Encode(&b, img))
		return b.Bytes()
	}
	r := image.Rect(0, 0, 10, 20)
	tests := []struct {
		name string
		data []byte
		want int64
	}{
		{"16-bit RGBA bomb header", pngHeader(6300, 6300, 16, 6), 6300 * 6300 * (8 + 4)},
		{"8-bit RGB header", pngHeader(1000, 500, 8, 2), 1000 * 500 * (4 + 4)},
		{"16-bit grey header", pngHeader(100, 100, 16, 0), 100 * 100 * (2 + 4)},
		{"grey png", small(image.NewGray(r)), 200 * (1 + 4)},
		{"paletted png", small(image.NewPaletted(r, color.Palette{color.Black, color.White})), 200 * (1 + 4)},
		{"nrgba png", small(image.NewNRGBA(r)), 200 * (4 + 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeCost(tt.data)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := DecodeCost([]byte("not an image"))
	require.ErrorIs(t, err, ErrInvalidImage)
}

// TestMaxBytesRefusesBeforeDecoding: a header promising more memory than MaxBytes is refused
// with ErrTooLarge, though its pixel data is missing (nothing was decoded); a small image
// under the budget decodes.
func TestMaxBytesRefusesBeforeDecoding(t *testing.T) {
	_, _, err := DecodeRGBWith(pngHeader(6300, 6300, 16, 6), DecodeOptions{MaxBytes: 256 << 20})
	require.ErrorIs(t, err, ErrTooLarge)
	require.Contains(t, err.Error(), "454 MiB")
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewNRGBA64(image.Rect(0, 0, 64, 64))))
	img, _, err := DecodeRGBWith(b.Bytes(), DecodeOptions{MaxBytes: 64 * 64 * 12})
	require.NoError(t, err)
	require.Equal(t, 64, img.Bounds().Dx())
	_, _, err = DecodeRGBWith(b.Bytes(), DecodeOptions{MaxBytes: 64*64*12 - 1})
	require.True(t, errors.Is(err, ErrTooLarge))
}

// TestToRGBSixteenBitFastPaths: the NRGBA64 and Gray16 fast paths give what the generic path
// (NRGBA64Model, high byte) gives.
func TestToRGBSixteenBitFastPaths(t *testing.T) {
	r := image.Rect(3, 5, 40, 29)
	n := image.NewNRGBA64(r)
	g := image.NewGray16(r)
	for i := range n.Pix {
		n.Pix[i] = byte(i*131 + i/7)
	}
	for i := range g.Pix {
		g.Pix[i] = byte(i*97 + 13)
	}
	for _, img := range []image.Image{n, g, n.SubImage(image.Rect(10, 10, 20, 25)), g.SubImage(image.Rect(4, 6, 9, 28))} {
		got := ToRGB(img)
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.NRGBA64Model.Convert(img.At(x, y)).(color.NRGBA64)
				want := color.NRGBA{uint8(c.R >> 8), uint8(c.G >> 8), uint8(c.B >> 8), 0xFF}
				require.Equal(t, want, got.NRGBAAt(x-b.Min.X, y-b.Min.Y), "%T at %d,%d", img, x, y)
			}
		}
	}
}
