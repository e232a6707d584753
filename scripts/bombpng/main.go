// Command bombpng writes a decompression bomb for scripts/bomb-rss.sh: a W x H 16-bit RGBA PNG of
// zeros (6300x6300: ~300 KB that decode to 318 MB of pixels), made by internal/bombpng.
//
//	go run ./scripts/bombpng OUT.png [W H]
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/tenstorrent/tt-media-server-go/internal/bombpng"
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
	data, err := bombpng.ZeroRGBA16(w, h)
	if err == nil {
		err = os.WriteFile(os.Args[1], data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bombpng:", err)
		os.Exit(1)
	}
}
