// Package turbojpeg decodes and encodes JPEG through libjpeg-turbo's TurboJPEG 2.x library
// (Debian libturbojpeg0), loaded at run time, with Go's image/jpeg as its pure-Go twin: the
// same calls work on a machine without the library and in a CGO_ENABLED=0 build, only slower
// and, for decoding, a few levels different from libjpeg-turbo.
//
// The native decoder uses the accurate integer IDCT (JDCT_ISLOW) and fancy chroma upsampling,
// the defaults of libjpeg that Pillow and torchvision decode with, so its pixels equal
// Pillow's; it can also decode at 1/2, 1/4 or 1/8 scale in the DCT domain (Pillow's
// Image.draft). The native encoder writes what Pillow's JPEG save writes for the same
// quality: baseline, 4:2:0 chroma for colour, the IJG quality scaling with forced baseline
// tables, accurate DCT, standard Huffman tables.
//
// The library is opened with dlopen the first time it is needed (or by Load), so neither
// building nor running needs it; the few TurboJPEG prototypes used are declared in this
// package, not taken from turbojpeg.h.
package turbojpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"

	"github.com/tenstorrent/tt-media-server-go/media/nativelib"
)

// ErrInvalid is returned for data the decoder refuses (not a JPEG, corrupt, unsupported).
var ErrInvalid = errors.New("invalid jpeg")

// lib is libturbojpeg: Debian's runtime package ships only the .so.0.
var lib = &nativelib.Lib{What: "libjpeg-turbo", Names: []string{"libturbojpeg.so.0", "libturbojpeg.so", "libturbojpeg.dylib"}, Open: nativeLoad}

// Load opens libturbojpeg once and reports why it could not be used (nil when it is).
func Load() error { return lib.Load() }

// SetEnabled chooses between the native library (true, the default, when it loads) and the
// pure-Go twin (false) for all later calls.
func SetEnabled(on bool) { lib.SetEnabled(on) }

// Native reports whether calls go to libjpeg-turbo.
func Native() bool { return lib.Native() }

// Describe says which codec serves JPEG, for the start-up log and /tt-liveness.
func Describe() string { return lib.Describe("image/jpeg") }

// Header is what a JPEG's header says.
type Header struct {
	Width, Height int
	Gray          bool // one component
	// CMYK is true for four-component (CMYK or YCCK) images, which Decode leaves to the
	// pure-Go decoder (it applies Adobe's inversion as Pillow does).
	CMYK bool
}

// ScaleDenom returns the denominator (1, 2, 4 or 8) of the smallest DCT scale 1/d at which the
// shorter side of a w×h image stays at least minShort pixels; 1 when minShort <= 0.
func ScaleDenom(w, h, minShort int) int {
	if minShort <= 0 {
		return 1
	}
	short := min(w, h)
	for _, d := range []int{8, 4, 2} {
		if (short+d-1)/d >= minShort {
			return d
		}
	}
	return 1
}

// DecodeOptions modify Decode.
type DecodeOptions struct {
	// MinShortSide > 0 decodes at the smallest DCT scale (1/2, 1/4, 1/8) whose shorter side is
	// at least this many pixels, as Pillow's Image.draft does. The pure-Go twin ignores it.
	MinShortSide int
	// RGB asks for an *image.NRGBA even for a greyscale JPEG (R=G=B, as PIL's
	// convert('RGB')).
	RGB bool
	// Pix, when its capacity holds the decoded pixels, is the storage a native decode to RGB
	// writes into (the image's Pix then aliases it), so that a caller can reuse one buffer
	// instead of allocating (and clearing) a new one per image.
	Pix []byte
}

// Decode decodes a JPEG. Colour images come back as opaque *image.NRGBA (native) or
// *image.YCbCr / *image.CMYK (pure Go), greyscale as *image.Gray unless opts.RGB. It returns
// the DCT scale denominator used (1 unless opts.MinShortSide asked for less and the native
// library served the call).
func Decode(data []byte, opts DecodeOptions) (image.Image, int, error) {
	if Native() {
		h, err := nativeHeader(data)
		if err != nil {
			return nil, 0, err
		}
		if !h.CMYK {
			d := ScaleDenom(h.Width, h.Height, opts.MinShortSide)
			img, err := nativeDecode(data, h, d, opts.RGB, opts.Pix)
			return img, d, err
		}
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return img, 1, nil
}

// DecodeHeader reads the header only.
func DecodeHeader(data []byte) (Header, error) {
	if Native() {
		return nativeHeader(data)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	h := Header{Width: cfg.Width, Height: cfg.Height}
	h.Gray = cfg.ColorModel == color.GrayModel
	h.CMYK = cfg.ColorModel == color.CMYKModel
	return h, nil
}

// Encode encodes img as a baseline JPEG at quality 1-100 (Pillow's quality; 4:2:0 chroma for
// colour, one component for *image.Gray). Transparent pixels are encoded as their
// premultiplied colour, as image/jpeg does.
func Encode(img image.Image, quality int) ([]byte, error) {
	if img == nil || img.Bounds().Empty() {
		return nil, errors.New("encode jpeg: empty image")
	}
	if quality < 1 || quality > 100 {
		return nil, fmt.Errorf("encode jpeg: quality %d outside 1-100", quality)
	}
	if Native() {
		return nativeEncode(img, quality)
	}
	var buf bytes.Buffer
	b := img.Bounds()
	buf.Grow(b.Dx()*b.Dy()/4 + 1024)
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		return nil, fmt.Errorf("encode jpeg: %w", err)
	}
	return buf.Bytes(), nil
}
