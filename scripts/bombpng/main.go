// Command bombpng writes a decompression bomb for scripts/bomb-rss.sh: a W x H 16-bit RGBA PNG of
// zeros (6300x6300: ~300 KB that decode to 318 MB of pixels).
//
//	go run ./scripts/bombpng OUT.png [W H]
package main

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 2 && len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: bombpng OUT.png [W H]")
		os.Exit(2)
	}
	w, h := 6300, 6300
	if len(os.Args) == 4 {
		var err1, err2 error
		w, err1 = strconv.Atoi(os.Args[2])
		h, err2 = strconv.Atoi(os.Args[3])
		if err1 != nil || err2 != nil || w <= 0 || h <= 0 {
			fmt.Fprintln(os.Stderr, "bombpng: W and H must be positive integers")
			os.Exit(2)
		}
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
	ihdr[8], ihdr[9] = 16, 6
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	zw, err := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	if err != nil {
		panic(err)
	}
	row := make([]byte, 1+w*8) // filter byte 0, then zeros
	for range h {
		if _, err := zw.Write(row); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	if err := os.WriteFile(os.Args[1], out.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bombpng:", err)
		os.Exit(1)
	}
}
