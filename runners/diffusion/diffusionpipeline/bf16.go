package diffusionpipeline

import (
	"encoding/binary"
	"math"
)

// putBF16 writes src as little-endian bfloat16 (round to nearest even; NaN stays NaN) into dst.
func putBF16(dst []byte, src []float32) {
	for i, f := range src {
		b := math.Float32bits(f)
		var h uint16
		if f != f {
			h = uint16(b>>16) | 0x40
		} else {
			h = uint16((b + 0x7fff + (b>>16)&1) >> 16)
		}
		binary.LittleEndian.PutUint16(dst[2*i:], h)
	}
}

// getBF16 reads little-endian bfloat16 values from src into dst.
func getBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

// putF32 writes src as little-endian float32 into dst.
func putF32(dst []byte, src []float32) {
	for i, f := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
}
