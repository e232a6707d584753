package main

import (
	"os"
	"testing"

	"github.com/tenstorrent/tt-media-server-go/runners/resnet"
)

func BenchmarkTmp(b *testing.B) {
	data, _ := os.ReadFile(os.Getenv("F"))
	dst := make([]float32, resnet.ImageElems)
	for b.Loop() {
		if err := tensor(data, os.Getenv("FAST") != "", dst); err != nil {
			b.Fatal(err)
		}
	}
}
