// Command bombwebm writes the WebM decoding bomb for scripts/membudget-rss.sh: N 2.5 ms Opus
// blocks of one byte each (100,000: 700 KB that decode to 250 s at 48 kHz), made by
// internal/bombwebm.
//
//	go run ./scripts/bombwebm OUT.webm [N]
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/tenstorrent/tt-media-server-go/internal/bombwebm"
)

func main() {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: bombwebm OUT.webm [N]")
		os.Exit(2)
	}
	n := 100000
	if len(os.Args) == 3 {
		var err error
		if n, err = strconv.Atoi(os.Args[2]); err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "bombwebm: N must be a positive integer")
			os.Exit(2)
		}
	}
	if err := os.WriteFile(os.Args[1], bombwebm.OpusBlocks(n), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bombwebm:", err)
		os.Exit(1)
	}
}
