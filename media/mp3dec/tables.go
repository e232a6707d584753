package mp3dec

import "math"

//go:generate go run gen_tables.go

// The normative tables of ISO/IEC 11172-3 and 13818-3 (Huffman codes, scale-factor bands, the
// scale-factor bit allocations and the synthesis window) are data, in tables_iso.go, generated
// from iso_tables.txt. Everything the standards define by a formula (requantisation powers,
// alias butterflies, IMDCT windows and cosines, intensity-stereo ratios, the DCT's cosines) is
// computed below at start-up from that formula.

// huffCode is one code word: val (x<<4|y, or v<<3|w<<2|x<<1|y for the count1 tables), its
// length and its bits (right-aligned).
type huffCode struct {
	val  uint8
	len  uint8
	code uint32
}

// huffTable is one Huffman table of Table B.7.
type huffTable struct {
	codes   []huffCode
	linbits int
}

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
	synthWin = isoSynthWindow
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
	for t := range isoHuffman {
		huff[t] = buildHuffLookup(isoHuffman[t])
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

// buildHuffLookup lays out a table's codes as a two-level lookup table.
func buildHuffLookup(h huffTable) huffLookup {
	if len(h.codes) == 0 {
		return huffLookup{}
	}
	type code struct {
		bits uint32 // left-aligned in 32 bits
		n    int
		val  uint32
	}
	codes := make([]code, len(h.codes))
	for i, c := range h.codes {
		codes[i] = code{bits: c.code << (32 - c.len), n: int(c.len), val: uint32(c.val)}
	}
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
