package mp3dec

import (
	"testing"
)

// FuzzDecode feeds arbitrary bytes after valid MPEG-1, 2 and 2.5 Layer III headers (any mode,
// CRC or not) through a full-rate and a half-rate decoder, twice, so the second frame meets
// the first one's reservoir: no panic, and a whole frame always yields exactly its samples.
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 5m ./media/mp3dec
func FuzzDecode(f *testing.F) {
	for _, s := range [][]byte{
		{0xFF, 0xFB, 0x90, 0x64},          // MPEG-1 128 kbit/s 44.1 kHz joint stereo, no CRC
		{0xFF, 0xFA, 0x50, 0x74},          // MPEG-1 64 kbit/s, CRC, joint stereo, MS + IS
		{0xFF, 0xF3, 0x90, 0xC0},          // MPEG-2 mono
		{0xFF, 0xF3, 0x50, 0x74},          // MPEG-2 joint stereo, MS + IS
		{0xFF, 0xFB, 0x10, 0x00, 0x00, 0}, // MPEG-1 32 kbit/s stereo
		{0xFF, 0xE3, 0x88, 0xC0},          // MPEG-2.5 8 kHz mono
		{0xFF, 0xE3, 0x94, 0x64},          // MPEG-2.5 12 kHz joint stereo
	} {
		f.Add(append(s, make([]byte, 200)...))
		b := append([]byte(nil), s...)
		x := uint32(len(s)*2654435761 + 1)
		for range 1400 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b = append(b, byte(x))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ok := ParseHeader(data)
		if !ok || h.Layer != 3 || len(data) < h.Size {
			return
		}
		frame := data[:h.Size]
		second := append(append([]byte(nil), frame[:4]...), data[h.Size:]...)
		if len(second) < h.Size {
			second = append(second, make([]byte, h.Size-len(second))...)
		}
		second = second[:h.Size]
		for _, d := range []*Decoder{New(), NewHalfRate(0), NewHalfRate(1)} {
			var out []float32
			for _, fr := range [][]byte{frame, second} {
				var err error
				n := len(out)
				out, err = d.Decode(fr, out)
				if err != nil {
					t.Fatalf("a whole frame with a valid header failed: %v", err)
				}
				if len(out)-n != d.OutputSamples(h) {
					t.Fatalf("frame gave %d samples, want %d", len(out)-n, d.OutputSamples(h))
				}
			}
		}
	})
}
