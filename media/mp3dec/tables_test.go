package mp3dec

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTables pins the generated ISO tables (tables_iso.go; a bad regeneration would show here
// before it showed as wrong audio) and the lookup tables built from them.
func TestTables(t *testing.T) {
	for lsf := 0; lsf < 2; lsf++ {
		for sf := 0; sf < 3; sf++ {
			long, short := isoSfBands[lsf][sf][0], isoSfBands[lsf][sf][1]
			require.Len(t, long, 23)
			require.Len(t, short, 14)
			require.Equal(t, 576, long[22])
			require.Equal(t, 192, short[13])
			require.Equal(t, 36, 3*short[3], "short region 1 starts at line 36")
		}
	}
	require.Equal(t, []int{0, 4, 8, 12, 16, 20, 24, 30, 36, 44, 52, 62, 74, 90, 110, 134, 162, 196, 238, 288, 342, 418, 576}, isoSfBands[0][0][0])
	require.InDelta(t, 1.144989014, synthWin[256], 1e-9, "the peak of the synthesis window D")
	require.InDelta(t, -0.000015259, synthWin[1], 1e-9)
	require.Equal(t, [2]int{4, 3}, isoSlenMPEG1[15])
	require.Equal(t, [4]int{6, 5, 5, 5}, isoNrOfSfbMPEG2[0][0])
	require.Equal(t, [4]int{6, 18, 9, 0}, isoNrOfSfbMPEG2[2][5])

	linbits := map[int]int{16: 1, 17: 2, 18: 3, 19: 4, 20: 6, 21: 8, 22: 10, 23: 13, 24: 4, 25: 5, 26: 6, 27: 7, 28: 8, 29: 9, 30: 11, 31: 13}
	for tab := range huff {
		lut := huff[tab]
		if tab == 0 || tab == 4 || tab == 14 {
			require.Nil(t, lut.t, "table %d", tab)
			continue
		}
		require.Equal(t, linbits[tab], lut.linbits, "table %d", tab)
		// Kraft: a complete prefix code has Σ 2^-len = 1, so every bit pattern is a code.
		kraft := 0.0
		seen := map[uint32]bool{}
		walk := func(entries []uint32, depth int) {
			for _, e := range entries {
				require.NotZero(t, e, "table %d has a bit pattern that is no code", tab)
				if e&huffSub != 0 {
					continue
				}
				n := int(e>>8) & 0xff
				if !seen[e] {
					seen[e] = true
					kraft += math.Ldexp(1, -n)
				}
			}
		}
		walk(lut.t[:1<<rootBits], 0)
		for _, e := range lut.t[:1<<rootBits] {
			if e&huffSub != 0 {
				sb := int(e>>24) & 31
				off := int(e & 0xffffff)
				walk(lut.t[off:off+1<<sb], 1)
			}
		}
		want := 256 // 16×16 pairs
		switch {
		case tab == 1:
			want = 4
		case tab == 2 || tab == 3:
			want = 9
		case tab == 5 || tab == 6:
			want = 16
		case tab >= 7 && tab <= 9:
			want = 36
		case tab >= 10 && tab <= 12:
			want = 64
		case tab >= 32:
			want = 16
		}
		require.Len(t, seen, want, "table %d: number of codes", tab)
		require.InDelta(t, 1.0, kraft, 1e-12, "table %d is not a complete prefix code", tab)
	}
}
