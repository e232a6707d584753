//go:build !cgo || nonative

package turbojpeg

import (
	"errors"
	"image"

	"github.com/tenstorrent/tt-media-server-go/media/nativelib"
)

// Without cgo (or with the nonative build tag) the library is never opened: every call takes
// the pure-Go path.

func nativeLoad(string) error { return nativelib.ErrNotBuilt }

func nativeHeader([]byte) (Header, error) { return Header{}, errors.New("unreachable") }

func nativeDecode([]byte, Header, int, bool, []byte) (image.Image, error) {
	return nil, errors.New("unreachable")
}

func nativeEncode(image.Image, int) ([]byte, error) { return nil, errors.New("unreachable") }
