package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"testing"

	"github.com/stretchr/testify/require"
)

// exifAPP1 builds an APP1 Exif segment whose IFD0 holds the given entries (tag, type, value)
// in the given byte order, after one unrelated entry.
func exifAPP1(bo binary.ByteOrder, entries [][3]uint16) []byte {
	var tiff bytes.Buffer
	if bo == binary.LittleEndian {
		tiff.WriteString("II*\x00")
	} else {
		tiff.WriteString("MM\x00*")
	}
	_ = binary.Write(&tiff, bo, uint32(8))
	all := append([][3]uint16{{0x010F, 2, 0}}, entries...) // Make (ASCII), first
	_ = binary.Write(&tiff, bo, uint16(len(all)))
	for _, e := range all {
		_ = binary.Write(&tiff, bo, e[0])
		_ = binary.Write(&tiff, bo, e[1])
		_ = binary.Write(&tiff, bo, uint32(1))
		_ = binary.Write(&tiff, bo, e[2])
		_ = binary.Write(&tiff, bo, uint16(0))
	}
	_ = binary.Write(&tiff, bo, uint32(0)) // no next IFD
	payload := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	return append(seg, payload...)
}

// withSegments inserts segments right after a JPEG's SOI marker.
func withSegments(jpg []byte, segs ...[]byte) []byte {
	out := append([]byte(nil), jpg[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	return append(out, jpg[2:]...)
}

func smallJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, testPicture(w, h), &jpeg.Options{Quality: 95}))
	return buf.Bytes()
}

func TestJPEGOrientation(t *testing.T) {
	jpg := smallJPEG(t, 8, 8)
	app0 := []byte{0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}
	xmp := append([]byte{0xFF, 0xE1, 0, 31}, []byte("http://ns.adobe.com/xap/1.0/\x00")...)
	tests := []struct {
		name string
		data []byte
		want int
	}{
		{"no exif", jpg, 1},
		{"little endian 6", withSegments(jpg, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 3, 6}})), 6},
		{"big endian 8", withSegments(jpg, exifAPP1(binary.BigEndian, [][3]uint16{{0x0112, 3, 8}})), 8},
		{"after JFIF and XMP", withSegments(jpg, app0, xmp, exifAPP1(binary.BigEndian, [][3]uint16{{0x0112, 3, 3}})), 3},
		{"fill bytes before a marker", withSegments(jpg, []byte{0xFF, 0xFF}, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 3, 5}})), 5},
		{"value out of range", withSegments(jpg, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 3, 9}})), 1},
		{"wrong type", withSegments(jpg, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 4, 6}})), 1},
		{"no orientation tag", withSegments(jpg, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0110, 2, 0}})), 1},
		{"exif after the scan is ignored", append(append([]byte(nil), jpg[:len(jpg)-2]...), exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 3, 6}})...), 1},
		{"truncated segment", withSegments(jpg, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 3, 6}}))[:30], 1},
		{"not a JPEG", []byte("\x89PNG\r\n\x1a\n...."), 1},
		{"empty", nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, JPEGOrientation(tc.data))
		})
	}
}

// TestOrient checks every orientation on a 3×2 image whose pixels are numbered 0..5 row-major:
// the expected grids are PIL's exif_transpose results.
func TestOrient(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	for i := range 6 {
		src.Pix[4*i] = uint8(i)
	}
	tests := []struct {
		o    int
		want [][]uint8
	}{
		{1, [][]uint8{{0, 1, 2}, {3, 4, 5}}},
		{2, [][]uint8{{2, 1, 0}, {5, 4, 3}}},
		{3, [][]uint8{{5, 4, 3}, {2, 1, 0}}},
		{4, [][]uint8{{3, 4, 5}, {0, 1, 2}}},
		{5, [][]uint8{{0, 3}, {1, 4}, {2, 5}}},
		{6, [][]uint8{{3, 0}, {4, 1}, {5, 2}}},
		{7, [][]uint8{{5, 2}, {4, 1}, {3, 0}}},
		{8, [][]uint8{{2, 5}, {1, 4}, {0, 3}}},
		{0, [][]uint8{{0, 1, 2}, {3, 4, 5}}},
	}
	for _, tc := range tests {
		out := Orient(src, tc.o)
		require.Equal(t, image.Rect(0, 0, len(tc.want[0]), len(tc.want)), out.Bounds(), "orientation %d", tc.o)
		got := make([][]uint8, len(tc.want))
		for y := range got {
			got[y] = make([]uint8, len(tc.want[0]))
			for x := range got[y] {
				got[y][x] = out.NRGBAAt(x, y).R
			}
		}
		require.Equal(t, tc.want, got, "orientation %d", tc.o)
	}
}

// TestDecodeRGBHonoursEXIF decodes the same JPEG with and without an orientation tag: the tagged
// one must come out as the untagged one turned upright.
func TestDecodeRGBHonoursEXIF(t *testing.T) {
	jpg := smallJPEG(t, 24, 16)
	plain, _, err := DecodeRGB(jpg, 0)
	require.NoError(t, err)
	for o := 1; o <= 8; o++ {
		tagged := withSegments(jpg, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 3, uint16(o)}}))
		got, _, err := DecodeRGB(tagged, 0)
		require.NoError(t, err)
		require.Equal(t, Orient(plain, o), got, "orientation %d", o)
		if o >= OrientTranspose {
			require.Equal(t, image.Rect(0, 0, 16, 24), got.Bounds())
		}
	}
}

func FuzzJPEGOrientation(f *testing.F) {
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x08, 'E', 'x', 'i', 'f', 0, 0})
	f.Add(withSegments([]byte{0xFF, 0xD8, 0xFF, 0xD9}, exifAPP1(binary.BigEndian, [][3]uint16{{0x0112, 3, 6}})))
	f.Add(withSegments([]byte{0xFF, 0xD8, 0xFF, 0xD9}, exifAPP1(binary.LittleEndian, [][3]uint16{{0x0112, 3, 2}})))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := JPEGOrientation(data)
		if o < OrientNormal || o > OrientRotate90CC {
			t.Fatalf("orientation %d", o)
		}
	})
}
