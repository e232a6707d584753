package imaging

import (
	"image"
	"image/color"
	"sync"
)

// ToRGB converts img to opaque 8-bit RGB as PIL's Image.convert('RGB') does: alpha is DROPPED,
// not composited (the stored colour under a transparent pixel shows), grey is replicated to
// R=G=B, palette entries are looked up, CMYK is converted with (255-C)(255-K)/255, and 16-bit
// samples keep their high byte. The result has its origin at (0,0) and A=255 everywhere.
//
// Subsampled JPEG chroma (4:2:0, 4:2:2) is upsampled with libjpeg's "fancy" triangle filter,
// as PIL's libjpeg-turbo does, not repeated as Go's image.YCbCr.At would.
//
// Known differences from PIL: Go's JPEG IDCT differs from libjpeg-turbo's by about one level
// on some pixels; a 16-bit greyscale PNG keeps its high byte here, while PIL's I;16→RGB clips
// values above 255 to white; a colour hidden under a fully transparent pixel of a premultiplied
// image (image.RGBA, and GIF's transparent palette entry) is lost to Go's decoder and comes
// out black.
func ToRGB(img image.Image) *image.NRGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	switch m := img.(type) {
	case *image.YCbCr:
		if fancyUpsample(out, m) {
			break
		}
		for y := range h {
			row := out.Pix[y*out.Stride:]
			for x := range w {
				yi, ci := m.YOffset(b.Min.X+x, b.Min.Y+y), m.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = r, g, bb, 0xFF
			}
		}
	case *image.NYCbCrA:
		for y := range h {
			row := out.Pix[y*out.Stride:]
			for x := range w {
				yi, ci := m.YOffset(b.Min.X+x, b.Min.Y+y), m.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = r, g, bb, 0xFF
			}
		}
	case *image.Gray:
		for y := range h {
			row := out.Pix[y*out.Stride:]
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				v := src[x]
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = v, v, v, 0xFF
			}
		}
	case *image.NRGBA:
		for y := range h {
			row := out.Pix[y*out.Stride : y*out.Stride+4*w]
			copy(row, m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):])
			for x := range w {
				row[4*x+3] = 0xFF
			}
		}
	case *image.RGBA:
		for y := range h {
			row := out.Pix[y*out.Stride:]
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				s := src[4*x : 4*x+4]
				if s[3] == 0xFF {
					row[4*x], row[4*x+1], row[4*x+2] = s[0], s[1], s[2]
				} else {
					c := color.NRGBAModel.Convert(color.RGBA{s[0], s[1], s[2], s[3]}).(color.NRGBA)
					row[4*x], row[4*x+1], row[4*x+2] = c.R, c.G, c.B
				}
				row[4*x+3] = 0xFF
			}
		}
	case *image.Paletted:
		pal := make([]color.NRGBA, 256)
		for i, c := range m.Palette {
			if i < len(pal) {
				pal[i] = color.NRGBAModel.Convert(c).(color.NRGBA)
			}
		}
		for y := range h {
			row := out.Pix[y*out.Stride:]
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				c := pal[src[x]]
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, 0xFF
			}
		}
	case *image.CMYK:
		for y := range h {
			row := out.Pix[y*out.Stride:]
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				s := src[4*x : 4*x+4]
				r, g, bb := color.CMYKToRGB(s[0], s[1], s[2], s[3])
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = r, g, bb, 0xFF
			}
		}
	case *image.NRGBA64:
		// 16-bit PNGs with alpha: the high byte of each big-endian sample, as the default case
		// computes, without boxing every pixel in a color.Color (a 6300x6300 image is 40 M
		// allocations that way).
		for y := range h {
			row := out.Pix[y*out.Stride:]
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = src[8*x], src[8*x+2], src[8*x+4], 0xFF
			}
		}
	case *image.Gray16:
		for y := range h {
			row := out.Pix[y*out.Stride:]
			src := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := range w {
				v := src[2*x]
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = v, v, v, 0xFF
			}
		}
	default:
		// RGBA64, Alpha and anything else: the non-premultiplied colour, high byte of each
		// 16-bit sample.
		for y := range h {
			row := out.Pix[y*out.Stride:]
			for x := range w {
				c := color.NRGBA64Model.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = uint8(c.R>>8), uint8(c.G>>8), uint8(c.B>>8), 0xFF
			}
		}
	}
	return out
}

// DecodeRGB decodes an image like Decode (same formats, pixel cap and errors; a GIF gives its
// first frame), turns a JPEG upright by its EXIF orientation, and converts the pixels to RGB
// with ToRGB. It is the input stage of classifiers trained on PIL's Image.convert('RGB').
func DecodeRGB(data []byte, maxPixels int) (*image.NRGBA, string, error) {
	return DecodeRGBWith(data, DecodeOptions{MaxPixels: maxPixels})
}

// DecodeRGBWith is DecodeRGB with options (pixel cap, JPEG draft scale). With libjpeg-turbo a
// JPEG's pixels are Pillow's (accurate IDCT, fancy upsampling), so the RGB image equals
// Image.open(f).convert('RGB') exactly.
func DecodeRGBWith(data []byte, o DecodeOptions) (*image.NRGBA, string, error) {
	o.rgb = true
	img, format, err := decode(data, o)
	if err != nil {
		return nil, "", err
	}
	rgb, ok := img.(*image.NRGBA)
	if !ok || format != "jpeg" || rgb.Rect.Min != (image.Point{}) {
		// The native JPEG decoder already gives opaque RGB at the origin; everything else is
		// converted.
		rgb = ToRGB(img)
	}
	if format == "jpeg" {
		rgb = Orient(rgb, JPEGOrientation(data))
	}
	return rgb, format, nil
}

// rgbPool holds pixel storage given back by RecycleRGB for the next native JPEG decode.
var rgbPool sync.Pool // of *[]byte

// RecycleRGB gives the pixel storage of img, an image DecodeRGB or DecodeRGBWith returned that
// nothing reads any more, to a later JPEG decode: a request path that is done with its image
// saves the allocation and clearing of a new one (750 KiB for 500x375). Storage too small for
// the next image is dropped; the pool empties itself as the garbage collector runs.
func RecycleRGB(img *image.NRGBA) {
	if img == nil || cap(img.Pix) == 0 {
		return
	}
	p := img.Pix[:0]
	rgbPool.Put(&p)
}

// pooledPix is storage from RecycleRGB, or nil.
func pooledPix() []byte {
	if p, _ := rgbPool.Get().(*[]byte); p != nil {
		return *p
	}
	return nil
}

// fancyUpsample converts a 4:2:0 or 4:2:2 YCbCr image with its origin at (0,0), as the JPEG
// decoder makes them, upsampling the chroma as libjpeg(-turbo)'s jdsample.c does by default
// (h2v2_fancy_upsample, h2v1_fancy_upsample: 3/4 nearer + 1/4 further sample, edge samples
// replicated). It reports false for other layouts.
func fancyUpsample(out *image.NRGBA, m *image.YCbCr) bool {
	if m.Rect.Min != (image.Point{}) {
		return false
	}
	v2 := false
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio420:
		v2 = true
	case image.YCbCrSubsampleRatio422:
	default:
		return false
	}
	w, h := m.Rect.Dx(), m.Rect.Dy()
	cw := (w + 1) / 2
	ch := h
	if v2 {
		ch = (h + 1) / 2
	}
	if cw < 1 || len(m.Cb) < (ch-1)*m.CStride+cw || len(m.Cr) < (ch-1)*m.CStride+cw {
		return false
	}
	// Per output row: horizontal input sums (3*near row + far row for h2v2, the row itself
	// ×4 for h2v1 so that both use the same horizontal pass), then the horizontal triangle.
	colsum := make([]int32, cw)
	cb := make([]uint8, 2*cw)
	cr := make([]uint8, 2*cw)
	for y := range h {
		for p, plane := range [2][]uint8{m.Cb, m.Cr} {
			dst := cb
			if p == 1 {
				dst = cr
			}
			if v2 {
				cy := y / 2
				far := cy - 1 // upper output row of the pair looks up, lower looks down
				if y%2 == 1 {
					far = cy + 1
				}
				far = min(max(far, 0), ch-1)
				near, other := plane[cy*m.CStride:cy*m.CStride+cw], plane[far*m.CStride:far*m.CStride+cw]
				for i := range cw {
					colsum[i] = 3*int32(near[i]) + int32(other[i])
				}
				h2Fancy(dst, colsum, 8, 7)
			} else {
				row := plane[y*m.CStride : y*m.CStride+cw]
				for i := range cw {
					colsum[i] = 4 * int32(row[i])
				}
				h2Fancy(dst, colsum, 4, 8)
			}
		}
		yrow := m.Y[y*m.YStride : y*m.YStride+w]
		orow := out.Pix[y*out.Stride:]
		for x := range w {
			r, g, b := color.YCbCrToRGB(yrow[x], cb[x], cr[x])
			orow[4*x], orow[4*x+1], orow[4*x+2], orow[4*x+3] = r, g, b, 0xFF
		}
	}
	return true
}

// h2Fancy is the horizontal half of libjpeg's fancy upsampling, on column sums that carry a
// factor 4: out = (3*this + neighbour + bias) >> 4, the neighbour clamped at the edges. h2v2
// uses bias 8 towards the left neighbour and 7 towards the right (jdsample.c). h2v1 rounds
// (3*s + n + 1) >> 2 and (3*s + n + 2) >> 2 on plain samples, which on sums ×4 is biases 4
// and 8.
func h2Fancy(dst []uint8, sum []int32, biasL, biasR int32) {
	n := len(sum)
	if n == 1 {
		dst[0] = uint8((sum[0]*4 + biasL) >> 4)
		dst[1] = uint8((sum[0]*4 + biasR) >> 4)
		return
	}
	for i := range n {
		left, right := sum[max(i-1, 0)], sum[min(i+1, n-1)]
		dst[2*i] = uint8((3*sum[i] + left + biasL) >> 4)
		dst[2*i+1] = uint8((3*sum[i] + right + biasR) >> 4)
	}
}
