//go:build !cgo || nonative

package webp

import (
	"errors"
	"image"
)

// Without cgo (or with the nonative build tag) libwebp is never opened.

func nativeLoad(string) error { return errNotBuilt }

func nativeEncode(*image.NRGBA, int) ([]byte, error) { return nil, errors.New("unreachable") }
