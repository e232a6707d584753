//go:build !cgo || nonative

package webp

import (
	"errors"
	"image"

	"github.com/tenstorrent/tt-media-server-go/media/nativelib"
)

// Without cgo (or with the nonative build tag) libwebp is never opened.

func nativeLoad(string) error { return nativelib.ErrNotBuilt }

func nativeEncode(*image.NRGBA, int) ([]byte, error) { return nil, errors.New("unreachable") }
