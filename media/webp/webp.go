// Package webp encodes WebP images through libwebp (Debian libwebp7), loaded at run time, with
// a pure-Go twin (github.com/HugoSmits86/nativewebp) for machines without the library and
// CGO_ENABLED=0 builds.
//
// The native encoder is libwebp's simple API (WebPEncodeRGBA): lossy VP8 at a quality of
// 0-100, the preset and method 4 that Pillow's WebP save uses by default. The pure-Go twin has
// no lossy encoder: it writes lossless WebP (VP8L), larger, and the quality does not apply.
// Decoding WebP inputs is media/imaging's job (golang.org/x/image/webp).
package webp

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"

	"github.com/HugoSmits86/nativewebp"

	"github.com/tenstorrent/tt-media-server-go/media/nativelib"
)

// lib is libwebp.
var lib = &nativelib.Lib{What: "libwebp", Names: []string{"libwebp.so.7", "libwebp.so", "libwebp.dylib"}, Open: nativeLoad}

// Load opens libwebp once and reports why it could not be used (nil when it is).
func Load() error { return lib.Load() }

// SetEnabled chooses between libwebp (true, the default, when it loads) and the pure-Go twin.
func SetEnabled(on bool) { lib.SetEnabled(on) }

// Native reports whether Encode goes to libwebp (lossy).
func Native() bool { return lib.Native() }

// Describe says which encoder serves WebP, for the start-up log and /tt-liveness.
func Describe() string { return lib.Describe("lossless nativewebp") }

// Encode encodes img as WebP: lossy at quality 0-100 with libwebp, lossless without it.
// Transparency is kept.
func Encode(img image.Image, quality int) ([]byte, error) {
	if img == nil || img.Bounds().Empty() {
		return nil, errors.New("encode webp: empty image")
	}
	if quality < 0 || quality > 100 {
		return nil, fmt.Errorf("encode webp: quality %d outside 0-100", quality)
	}
	b := img.Bounds()
	// WebP's limit (VP8 and VP8L both store 14-bit dimensions).
	if b.Dx() > 16383 || b.Dy() > 16383 {
		return nil, fmt.Errorf("encode webp: %dx%d is over WebP's 16383 pixels a side", b.Dx(), b.Dy())
	}
	if Native() {
		m, ok := img.(*image.NRGBA)
		if !ok {
			m = image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
			draw.Draw(m, m.Rect, img, b.Min, draw.Src)
		}
		return nativeEncode(m, quality)
	}
	var buf bytes.Buffer
	if err := nativewebp.Encode(&buf, img, nil); err != nil {
		return nil, fmt.Errorf("encode webp: %w", err)
	}
	return buf.Bytes(), nil
}
