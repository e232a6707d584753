// Package imaging decodes untrusted uploaded images (JPEG, PNG, GIF, WebP, BMP) under a pixel
// cap and encodes generated images as JPEG, PNG or WebP for responses. It is the one entry
// point of image decoding and encoding: JPEG goes to media/turbojpeg (libjpeg-turbo when the
// library loads, Go's image/jpeg otherwise), WebP encoding to media/webp (libwebp or a pure-Go
// lossless twin), the rest to Go's decoders and image/png.
package imaging

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"

	// Formats Decode accepts besides JPEG, registered with the image package.
	_ "image/gif"
	_ "image/jpeg" // the pure-Go twin's format registration (DecodeConfig of odd JPEGs)

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/webp"

	"github.com/tenstorrent/tt-media-server-go/media/turbojpeg"
	"github.com/tenstorrent/tt-media-server-go/media/webp"
)

// ErrTooLarge is returned by Decode when the image has more pixels than allowed.
var ErrTooLarge = errors.New("image too large")

// ErrInvalidImage is returned by Decode for data that is not a decodable image.
var ErrInvalidImage = errors.New("invalid image")

// Format is an output image format.
type Format string

// Output formats Encode writes.
const (
	JPEG Format = "jpeg"
	PNG  Format = "png"
	WebP Format = "webp"
)

// ParseFormat maps a format name, in any case ("JPEG", "jpg", "png", "webp"), to a Format.
func ParseFormat(name string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "jpeg", "jpg":
		return JPEG, nil
	case "png":
		return PNG, nil
	case "webp":
		return WebP, nil
	}
	return "", fmt.Errorf("unknown image format %q (jpeg, png or webp)", name)
}

// Encode encodes img in format f. quality is Pillow's: 1-100 for JPEG, 0-100 for WebP
// (lossy with libwebp; the pure-Go twin is lossless and ignores it); PNG ignores it.
func Encode(img image.Image, f Format, quality int) ([]byte, error) {
	switch f {
	case JPEG:
		return EncodeJPEG(img, quality)
	case PNG:
		return EncodePNG(img)
	case WebP:
		return webp.Encode(img, quality)
	}
	return nil, fmt.Errorf("encode: unknown image format %q", f)
}

// EncodeJPEG encodes img as a baseline (non-progressive) JPEG at quality q, 1-100, with the
// quantisation, chroma subsampling (4:2:0) and DCT of Pillow's save; the Python server uses
// PIL quality 85.
func EncodeJPEG(img image.Image, q int) ([]byte, error) {
	if img == nil {
		return nil, errors.New("encode jpeg: nil image")
	}
	return turbojpeg.Encode(img, q)
}

// UseNativeCodecs chooses, for the whole process, between the native libraries (true, the
// default: libjpeg-turbo and libwebp when they load) and the pure-Go codecs (false), and
// returns Codecs() after the choice. NATIVE_CODECS=off sets false at start-up.
func UseNativeCodecs(on bool) string {
	turbojpeg.SetEnabled(on)
	webp.SetEnabled(on)
	return Codecs()
}

// Codecs says which codec serves JPEG and WebP, e.g. "jpeg: libjpeg-turbo
// (libturbojpeg.so.0); webp: libwebp (libwebp.so.7)", for the start-up log and /tt-liveness.
func Codecs() string {
	return "jpeg: " + turbojpeg.Describe() + "; webp: " + webp.Describe()
}

// CodecStatus is Codecs as fields: which path each codec takes ("native" or "go") and why.
type CodecStatus struct {
	JPEG       string `json:"jpeg"`
	JPEGDetail string `json:"jpeg_detail"`
	WebP       string `json:"webp"`
	WebPDetail string `json:"webp_detail"`
}

// Status returns the codec paths in use.
func Status() CodecStatus {
	s := CodecStatus{JPEG: "go", JPEGDetail: turbojpeg.Describe(), WebP: "go", WebPDetail: webp.Describe()}
	if turbojpeg.Native() {
		s.JPEG = "native"
	}
	if webp.Native() {
		s.WebP = "native"
	}
	return s
}

// pngEncoder trades ~16 % larger files for twice the speed of the default level
// (measured in go-ecosystem.md §3).
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

// EncodePNG encodes img as PNG.
func EncodePNG(img image.Image) ([]byte, error) {
	if img == nil {
		return nil, errors.New("encode png: nil image")
	}
	var buf bytes.Buffer
	if err := pngEncoder.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode decodes a JPEG, PNG, GIF (first frame), WebP or BMP image, recognised by its content,
// and returns it with the format name ("jpeg", "png", "gif", "webp", "bmp"). The header is read
// first: an image of more than maxPixels pixels (maxPixels > 0) is refused with ErrTooLarge
// before any pixel memory is allocated. Data that is not a decodable image, or whose decoder
// fails or panics, gives ErrInvalidImage.
func Decode(data []byte, maxPixels int) (img image.Image, format string, err error) {
	return decode(data, DecodeOptions{MaxPixels: maxPixels})
}

// DecodeOptions modify DecodeRGBWith.
type DecodeOptions struct {
	// MaxPixels > 0 refuses, from the header, an image of more pixels (ErrTooLarge).
	MaxPixels int
	// MaxBytes > 0 refuses, from the header, an image whose decode to RGB would hold more
	// memory than this (DecodeCost; ErrTooLarge).
	MaxBytes int64
	// DraftShortSide > 0 decodes a JPEG at the smallest DCT scale (1/2, 1/4, 1/8) whose shorter
	// side stays at least this many pixels, as Pillow's Image.draft: much faster for large
	// photos, not the same pixels as a full decode. Only the native JPEG decoder scales.
	DraftShortSide int
	// rgb asks the JPEG decoder for RGB even for greyscale.
	rgb bool
}

// jpegMagic starts every JPEG (SOI then a marker).
var jpegMagic = []byte{0xFF, 0xD8, 0xFF}

// decode is the single decode entry point: header, limits, then the format's decoder.
func decode(data []byte, o DecodeOptions) (img image.Image, format string, err error) {
	if len(data) == 0 {
		return nil, "", fmt.Errorf("%w: empty data", ErrInvalidImage)
	}
	defer func() {
		// Decoders of untrusted input are not guaranteed panic-free.
		if r := recover(); r != nil {
			img, format, err = nil, "", fmt.Errorf("%w: decoder panic: %v", ErrInvalidImage, r)
		}
	}()
	maxPixels := o.MaxPixels
	if o.MaxBytes > 0 {
		cost, err := DecodeCost(data)
		if err != nil {
			return nil, "", err
		}
		if cost > o.MaxBytes {
			return nil, "", fmt.Errorf("%w: decoding it would take %d MiB of memory, over the %d MiB allowed", ErrTooLarge, cost>>20, o.MaxBytes>>20)
		}
	}
	if bytes.HasPrefix(data, jpegMagic) {
		h, err := turbojpeg.DecodeHeader(data)
		if err != nil {
			return nil, "", fmt.Errorf("%w: jpeg: %w", ErrInvalidImage, err)
		}
		if maxPixels > 0 && int64(h.Width)*int64(h.Height) > int64(maxPixels) {
			return nil, "", fmt.Errorf("%w: %dx%d jpeg is over %d pixels", ErrTooLarge, h.Width, h.Height, maxPixels)
		}
		var pix []byte
		if o.rgb {
			pix = pooledPix()
		}
		img, _, err := turbojpeg.Decode(data, turbojpeg.DecodeOptions{MinShortSide: o.DraftShortSide, RGB: o.rgb, Pix: pix})
		if err != nil {
			return nil, "", fmt.Errorf("%w: jpeg: %w", ErrInvalidImage, err)
		}
		return img, "jpeg", nil
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalidImage, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, "", fmt.Errorf("%w: %s of %dx%d pixels", ErrInvalidImage, format, cfg.Width, cfg.Height)
	}
	if maxPixels > 0 && int64(cfg.Width)*int64(cfg.Height) > int64(maxPixels) {
		return nil, "", fmt.Errorf("%w: %dx%d %s is over %d pixels", ErrTooLarge, cfg.Width, cfg.Height, format, maxPixels)
	}
	img, format, err = image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrInvalidImage, format, err)
	}
	// A GIF's first frame may be smaller than its logical screen (and not at the origin), so
	// only check that the decoder produced no more pixels than the header promised.
	if b := img.Bounds(); b.Empty() || int64(b.Dx())*int64(b.Dy()) > int64(cfg.Width)*int64(cfg.Height) {
		return nil, "", fmt.Errorf("%w: %s header says %dx%d, pixels are %dx%d", ErrInvalidImage, format, cfg.Width, cfg.Height, b.Dx(), b.Dy())
	}
	return img, format, nil
}
