// Package bombpng makes decompression bombs for the reliability tests and scripts/bomb-rss.sh:
// 16-bit RGBA PNGs of zeros that are tiny on the wire and huge once decoded.
package bombpng

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// ZeroRGBA16 is a w x h 16-bit RGBA PNG of zeros: 6300x6300 is ~300 KB that decodes to
// w*h*8 bytes (318 MB).
func ZeroRGBA16(w, h int) ([]byte, error) {
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("bombpng: size %dx%d must be positive", w, h)
	}
	var out bytes.Buffer
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := append([]byte(typ), data...)
		out.Write(c)
		_ = binary.Write(&out, binary.BigEndian, crc32.ChecksumIEEE(c))
	}
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 16, 6 // 16-bit, RGBA
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	zw, err := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("bombpng: %w", err)
	}
	row := make([]byte, 1+w*8) // filter byte 0, then zeros
	for range h {
		if _, err := zw.Write(row); err != nil {
			return nil, fmt.Errorf("bombpng: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("bombpng: %w", err)
	}
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes(), nil
}
