package imaging

import (
	"bytes"
	"fmt"
	"image"
	"image/color"

	"github.com/tenstorrent/tt-media-server-go/media/turbojpeg"
)

// DecodeCost is the memory, in bytes, that decoding data to RGB (DecodeRGB, DecodeRGBWith)
// holds at its peak, read from the header alone: the decoder's own pixel buffer (width x
// height x the bytes per pixel of its colour model: 8 for 16-bit RGBA PNGs, 1 for paletted
// images, ...) plus the RGB copy (4 bytes per pixel). A small file can promise gigabytes (a
// 300 KB PNG of zeros decodes to 6300x6300 16-bit pixels): callers check this against a
// memory budget before any pixel is decoded. Data without a readable header is ErrInvalidImage.
func DecodeCost(data []byte) (int64, error) {
	if len(data) == 0 {
		return 0, fmt.Errorf("%w: empty data", ErrInvalidImage)
	}
	if bytes.HasPrefix(data, jpegMagic) {
		h, err := turbojpeg.DecodeHeader(data)
		if err != nil {
			return 0, fmt.Errorf("%w: jpeg: %w", ErrInvalidImage, err)
		}
		// libjpeg-turbo decodes to RGB directly (4 bytes a pixel); the pure-Go twin decodes to
		// grey (1), YCbCr (at most 3) or CMYK (4) and then converts to RGB (4); CMYK always
		// takes the pure-Go path. An EXIF rotation makes one more RGB copy (4).
		bpp := int64(4)
		if !turbojpeg.Native() || h.CMYK {
			switch {
			case h.Gray:
				bpp = 1 + 4
			case h.CMYK:
				bpp = 4 + 4
			default:
				bpp = 3 + 4
			}
		}
		if JPEGOrientation(data) > 1 {
			bpp += 4
		}
		return int64(h.Width) * int64(h.Height) * bpp, nil
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidImage, err)
	}
	return int64(cfg.Width) * int64(cfg.Height) * int64(bytesPerPixel(cfg.ColorModel)+4), nil
}

// bytesPerPixel is the size of one pixel in the image type Go's decoders return for a colour
// model (8, the largest, when unknown).
func bytesPerPixel(m color.Model) int {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3 // 4:4:4 at most
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}
