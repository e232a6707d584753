package imaging

import (
	"encoding/binary"
	"image"
)

// EXIF orientations (TIFF tag 0x0112), as PIL's ImageOps.exif_transpose applies them.
const (
	OrientNormal     = 1 // as stored
	OrientFlipH      = 2 // mirrored left-right
	OrientRotate180  = 3
	OrientFlipV      = 4 // mirrored top-bottom
	OrientTranspose  = 5 // mirrored along the main diagonal
	OrientRotate90CW = 6 // stored rotated 90° counter-clockwise: turn it 90° clockwise to view
	OrientTransverse = 7 // mirrored along the anti-diagonal
	OrientRotate90CC = 8 // stored rotated 90° clockwise: turn it 90° counter-clockwise to view
)

const (
	exifOrientationTag = 0x0112
	tiffTypeShort      = 3
	// maxJPEGSegments bounds the marker walk on hostile input.
	maxJPEGSegments = 1024
)

// JPEGOrientation returns the EXIF orientation (1-8) stored in the IFD0 of a JPEG's APP1 Exif
// segment, or OrientNormal when data is not a JPEG, has no Exif segment, or the tag is missing
// or malformed. It reads only the segment headers before the first scan and never panics.
func JPEGOrientation(data []byte) int {
	if len(data) < 4 || data[0] != 0xFF || data[1] != 0xD8 {
		return OrientNormal
	}
	p := 2
	for range maxJPEGSegments {
		// Skip fill bytes before a marker.
		for p < len(data) && data[p] == 0xFF && p+1 < len(data) && data[p+1] == 0xFF {
			p++
		}
		if p+4 > len(data) || data[p] != 0xFF {
			return OrientNormal
		}
		marker := data[p+1]
		switch {
		case marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7):
			p += 2 // markers without a length
			continue
		case marker == 0xD9 || marker == 0xDA:
			return OrientNormal // end of image or start of scan: no Exif before the data
		}
		n := int(binary.BigEndian.Uint16(data[p+2:]))
		if n < 2 || p+2+n > len(data) {
			return OrientNormal
		}
		seg := data[p+4 : p+2+n]
		if marker == 0xE1 && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
			if o, ok := tiffOrientation(seg[6:]); ok {
				return o
			}
			// A malformed or XMP-like APP1: keep looking, as readers do.
		}
		p += 2 + n
	}
	return OrientNormal
}

// tiffOrientation reads the Orientation entry of IFD0 of a TIFF structure.
func tiffOrientation(t []byte) (int, bool) {
	if len(t) < 8 {
		return 0, false
	}
	var bo binary.ByteOrder
	switch string(t[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 0, false
	}
	off := uint64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > uint64(len(t)) {
		return 0, false
	}
	count := uint64(bo.Uint16(t[off:]))
	entries := off + 2
	for i := range count {
		e := entries + 12*i
		if e+12 > uint64(len(t)) {
			return 0, false
		}
		if bo.Uint16(t[e:]) != exifOrientationTag {
			continue
		}
		typ, n := bo.Uint16(t[e+2:]), bo.Uint32(t[e+4:])
		if typ != tiffTypeShort || n < 1 {
			return 0, false
		}
		o := int(bo.Uint16(t[e+8:]))
		if o < OrientNormal || o > OrientRotate90CC {
			return 0, false
		}
		return o, true
	}
	return 0, false
}

// Orient returns img turned upright for EXIF orientation o, as PIL's exif_transpose does
// (2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270, 7 TRANSVERSE,
// 8 ROTATE_90). For orientation 1 or an unknown value img itself is returned; otherwise a new
// image with its origin at (0,0).
func Orient(img *image.NRGBA, o int) *image.NRGBA {
	if o <= OrientNormal || o > OrientRotate90CC {
		return img
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	ow, oh := w, h
	if o >= OrientTranspose {
		ow, oh = h, w
	}
	out := image.NewNRGBA(image.Rect(0, 0, ow, oh))
	// src maps an output pixel to the source pixel it shows.
	var src func(x, y int) (int, int)
	switch o {
	case OrientFlipH:
		src = func(x, y int) (int, int) { return w - 1 - x, y }
	case OrientRotate180:
		src = func(x, y int) (int, int) { return w - 1 - x, h - 1 - y }
	case OrientFlipV:
		src = func(x, y int) (int, int) { return x, h - 1 - y }
	case OrientTranspose:
		src = func(x, y int) (int, int) { return y, x }
	case OrientRotate90CW:
		src = func(x, y int) (int, int) { return y, h - 1 - x }
	case OrientTransverse:
		src = func(x, y int) (int, int) { return w - 1 - y, h - 1 - x }
	case OrientRotate90CC:
		src = func(x, y int) (int, int) { return w - 1 - y, x }
	}
	for y := range oh {
		row := out.Pix[y*out.Stride : y*out.Stride+4*ow]
		for x := range ow {
			sx, sy := src(x, y)
			i := img.PixOffset(b.Min.X+sx, b.Min.Y+sy)
			copy(row[4*x:4*x+4], img.Pix[i:i+4])
		}
	}
	return out
}
