package mp3dec

import (
	"math"
	_ "unsafe" // go:linkname

	// The normative tables of ISO/IEC 11172-3 and 13818-3 (Huffman codes, scale-factor bands,
	// the synthesis window) are taken from the go-mp3 module the server already depends on,
	// instead of a second hand-typed copy: see the linkname declarations below.
	_ "github.com/hajimehoshi/go-mp3"
)

// go-mp3 v0.3.4 (archived upstream, pinned in go.mod) keeps these in internal packages. The
// linker resolves the names below to its variables; if a go-mp3 upgrade renamed one, the build
// would fail at link time, and TestTables checks shapes and known values of each.

// huffTables mirrors go-mp3's internal/huffman.huffTables.
type huffTables struct {
	tree    []uint16 // PDMP3-style binary tree
	treelen int
	linbits int
}

//go:linkname goHuffmanMain github.com/hajimehoshi/go-mp3/internal/huffman.huffmanMain
var goHuffmanMain [34]huffTables

// [lsf][sampling-frequency index][long, short] scale-factor band boundaries.
//
//go:linkname goSfBandIndices github.com/hajimehoshi/go-mp3/internal/consts.SfBandIndices
var goSfBandIndices [2][3][2][]int

//go:linkname goSynthDtbl github.com/hajimehoshi/go-mp3/internal/frame.synthDtbl
var goSynthDtbl [512]float32

//go:linkname goScalefacSizesMpeg1 github.com/hajimehoshi/go-mp3/internal/maindata.scalefacSizesMpeg1
var goScalefacSizesMpeg1 [16][2]int

// [block type: long, short, mixed][partition table][4] numbers of scale factors (13818-3).
//
//go:linkname goScalefacSizesMpeg2 github.com/hajimehoshi/go-mp3/internal/maindata.scalefacSizesMpeg2
var goScalefacSizesMpeg2 [3][6][4]int

// pretab is the pre-emphasis added to long-block scale factors when preflag is set.
var pretab = [22]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 2, 0}

// Derived tables, built once.
var (
	huff [34]huffLookup // fast two-level Huffman lookup per table

	pow43 [8207]float32 // |x|^(4/3) for every value a Huffman code and 13 linbits can make

	csAlias, caAlias [8]float32 // anti-alias butterflies

	imdctWin   [4][36]float32  // long-block windows per block type (2 unused)
	imdctCos   [18][18]float32 // the 18 distinct outputs of the 36-point IMDCT (see imdct36)
	imdctShort [12][6]float32  // window × cosine of the 12-point IMDCT

	synthWin [512]float32 // ISO synthesis window D

	isRatio [7][2]float32 // MPEG-1 intensity stereo: (tan/(1+tan), 1/(1+tan)) per position

	dct32Cos [5][16]float32 // 1/(2·cos((2i+1)π/(2N))) for N = 32, 16, 8, 4, 2
)

func init() {
	for i := range pow43 {
		pow43[i] = float32(math.Pow(float64(i), 4.0/3.0))
	}
	ci := [8]float64{-0.6, -0.535, -0.33, -0.185, -0.095, -0.041, -0.0142, -0.0037}
	for i, c := range ci {
		sq := math.Sqrt(1 + c*c)
		csAlias[i] = float32(1 / sq)
		caAlias[i] = float32(c / sq)
	}
	initIMDCT()
	synthWin = goSynthDtbl
	for p := 0; p < 7; p++ {
		t := math.Tan(float64(p) * math.Pi / 12)
		if p == 6 { // tan(π/2): everything goes left
			isRatio[p] = [2]float32{1, 0}
			continue
		}
		isRatio[p] = [2]float32{float32(t / (1 + t)), float32(1 / (1 + t))}
	}
	for s, n := 0, 32; n >= 2; s, n = s+1, n/2 {
		for i := 0; i < n/2; i++ {
			dct32Cos[s][i] = float32(0.5 / math.Cos(float64(2*i+1)*math.Pi/float64(2*n)))
		}
	}
	for t := range goHuffmanMain {
		huff[t] = buildHuffLookup(goHuffmanMain[t])
	}
}

// initIMDCT folds the block-type windows into the IMDCT cosine matrices.
func initIMDCT() {
	var win [4][36]float64
	for i := 0; i < 36; i++ {
		win[0][i] = math.Sin(math.Pi / 36 * (float64(i) + 0.5))
	}
	for i := 0; i < 18; i++ {
		win[1][i] = math.Sin(math.Pi / 36 * (float64(i) + 0.5))
	}
	for i := 18; i < 24; i++ {
		win[1][i] = 1
	}
	for i := 24; i < 30; i++ {
		win[1][i] = math.Sin(math.Pi / 12 * (float64(i-18) + 0.5))
	}
	for i := 6; i < 12; i++ {
		win[3][i] = math.Sin(math.Pi / 12 * (float64(i-6) + 0.5))
	}
	for i := 12; i < 18; i++ {
		win[3][i] = 1
	}
	for i := 18; i < 36; i++ {
		win[3][i] = math.Sin(math.Pi / 36 * (float64(i) + 0.5))
	}
	for bt := 0; bt < 4; bt++ {
		for i := 0; i < 36; i++ {
			imdctWin[bt][i] = float32(win[bt][i])
		}
	}
	for r := 0; r < 18; r++ {
		i := r // outputs 0–8, then 18–26
		if r >= 9 {
			i = r + 9
		}
		for k := 0; k < 18; k++ {
			imdctCos[r][k] = float32(math.Cos(math.Pi / 72 * float64((2*i+1+18)*(2*k+1))))
		}
	}
	for i := 0; i < 12; i++ {
		w := math.Sin(math.Pi / 12 * (float64(i) + 0.5))
		for k := 0; k < 6; k++ {
			imdctShort[i][k] = float32(w * math.Cos(math.Pi/24*float64((2*i+1+6)*(2*k+1))))
		}
	}
}

// huffLookup decodes one table with a 2^rootBits-entry first level. An entry is either a leaf,
// len<<8 | x<<4 | y (len = total code length, never 0), or a pointer to a second level,
// huffSub | subBits<<24 | offset. Zero marks a bit pattern that is no code.
type huffLookup struct {
	t       []uint32
	linbits int
}

const (
	rootBits = 8
	huffSub  = 1 << 31
)

// buildHuffLookup enumerates go-mp3's tree into (code, length, value) and lays out the
// two-level table.
func buildHuffLookup(h huffTables) huffLookup {
	if h.treelen == 0 {
		return huffLookup{}
	}
	type code struct {
		bits uint32 // left-aligned in 32 bits
		n    int
		val  uint32
	}
	var codes []code
	var walk func(point int, bits uint32, n int)
	walk = func(point int, bits uint32, n int) {
		if point >= h.treelen || n > 24 {
			return
		}
		if h.tree[point]&0xff00 == 0 {
			codes = append(codes, code{bits, n, uint32(h.tree[point] & 0xff)})
			return
		}
		// The two branches, as go-mp3's Decode steps them.
		r := point
		for h.tree[r]&0xff >= 250 {
			r += int(h.tree[r]) & 0xff
		}
		r += int(h.tree[r]) & 0xff
		l := point
		for h.tree[l]>>8 >= 250 {
			l += int(h.tree[l]) >> 8
		}
		l += int(h.tree[l]) >> 8
		walk(l, bits, n+1)
		walk(r, bits|1<<(31-n), n+1)
	}
	walk(0, 0, 0)
	t := make([]uint32, 1<<rootBits)
	// Second levels: the longest code under each root prefix sets its size.
	subBits := make([]int, 1<<rootBits)
	for _, c := range codes {
		if c.n > rootBits {
			p := c.bits >> (32 - rootBits)
			subBits[p] = max(subBits[p], c.n-rootBits)
		}
	}
	for p, sb := range subBits {
		if sb > 0 {
			t[p] = huffSub | uint32(sb)<<24 | uint32(len(t))
			t = append(t, make([]uint32, 1<<sb)...)
		}
	}
	for _, c := range codes {
		leaf := uint32(c.n)<<8 | c.val
		if c.n <= rootBits {
			p := c.bits >> (32 - rootBits)
			for i := uint32(0); i < 1<<(rootBits-c.n); i++ {
				t[p+i] = leaf
			}
			continue
		}
		p := c.bits >> (32 - rootBits)
		sb := int(t[p]>>24) & 31
		off := t[p] & 0xffffff
		s := (c.bits << rootBits) >> (32 - sb)
		for i := uint32(0); i < 1<<(sb-(c.n-rootBits)); i++ {
			t[off+s+i] = leaf
		}
	}
	return huffLookup{t: t, linbits: h.linbits}
}
