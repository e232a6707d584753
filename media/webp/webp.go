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
	"sync"
	"sync/atomic"

	"github.com/HugoSmits86/nativewebp"
)

var libNames = []string{"libwebp.so.7", "libwebp.so", "libwebp.dylib"}

var (
	loadOnce sync.Once
	loadErr  error
	loadName string
	disabled atomic.Bool
)

// errNotBuilt is Load's answer in a build without the native path (no cgo, or the nonative
// tag).
var errNotBuilt = errors.New("built without cgo or with the nonative tag")

// Load opens libwebp once and reports why it could not be used (nil when it is).
func Load() error {
	loadOnce.Do(func() {
		var errs []error
		for _, n := range libNames {
			if err := nativeLoad(n); err != nil {
				if errors.Is(err, errNotBuilt) {
					loadErr = err
					return
				}
				errs = append(errs, err)
				continue
			}
			loadName = n
			return
		}
		loadErr = fmt.Errorf("libwebp not loaded: %w", errors.Join(errs...))
	})
	return loadErr
}

// SetEnabled chooses between libwebp (true, the default, when it loads) and the pure-Go twin.
func SetEnabled(on bool) { disabled.Store(!on) }

// Native reports whether Encode goes to libwebp (lossy).
func Native() bool { return !disabled.Load() && Load() == nil }

// Describe says which encoder serves WebP, for the start-up log and /tt-liveness.
func Describe() string {
	switch {
	case disabled.Load():
		return "pure Go (lossless nativewebp; native codecs switched off)"
	case Load() != nil:
		return "pure Go (lossless nativewebp; " + Load().Error() + ")"
	}
	return "libwebp (" + loadName + ")"
}

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
