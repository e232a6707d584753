package mp3dec

import "encoding/binary"

// bitReader reads big-endian bit fields from b. Reads past the end of b see zero bits; callers
// check the position against the lengths the side information declares.
type bitReader struct {
	b   []byte
	pos int // in bits
}

// peek returns the next 32 bits, left-aligned; at least 25 of them are valid.
func (r *bitReader) peek() uint32 {
	i := r.pos >> 3
	if i+4 <= len(r.b) {
		return binary.BigEndian.Uint32(r.b[i:]) << (r.pos & 7)
	}
	var v uint32
	for k := 0; k < 4; k++ {
		v <<= 8
		if i+k < len(r.b) && i+k >= 0 {
			v |= uint32(r.b[i+k])
		}
	}
	return v << (r.pos & 7)
}

// read returns the next n bits, 0 ≤ n ≤ 24.
func (r *bitReader) read(n int) int {
	if n == 0 {
		return 0
	}
	v := r.peek() >> (32 - n)
	r.pos += n
	return int(v)
}

func (r *bitReader) bit() bool {
	v := r.peek() >> 31
	r.pos++
	return v != 0
}
