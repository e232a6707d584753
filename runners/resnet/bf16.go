package resnet

import "math"

// ToBF16 converts float32 values to bfloat16 bits (the device dtype of ResNet-50 on TT
// hardware), rounding to nearest with ties to even as torch's .to(torch.bfloat16) does; NaN
// stays a (quiet) NaN. It writes into dst's storage when it is large enough and returns the
// len(src) converted values.
func ToBF16(dst []uint16, src []float32) []uint16 {
	if cap(dst) < len(src) {
		dst = make([]uint16, len(src))
	}
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = BF16(f)
	}
	return dst
}

// bf16LE writes src as little-endian bfloat16 bytes into dst (2 per value): ToBF16 and the
// byte layout in one pass.
func bf16LE(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, f := range src {
		b := BF16(f)
		dst[2*i], dst[2*i+1] = byte(b), byte(b>>8)
	}
}

// BF16 is one float32 rounded to bfloat16 bits.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep sign and payload top, force quiet
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// FromBF16 widens bfloat16 bits to float32 (exact), writing into dst's storage when it is
// large enough, and returns the len(src) values.
func FromBF16(dst []float32, src []uint16) []float32 {
	if cap(dst) < len(src) {
		dst = make([]float32, len(src))
	}
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
	return dst
}
