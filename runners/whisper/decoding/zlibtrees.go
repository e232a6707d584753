package decoding

// The block-size accounting of zlib's trees.c: the static tables, the dynamic Huffman trees
// (build_tree, gen_bitlen, the bit-length tree) and _tr_flush_block's choice of block type.

var (
	extraLBits  = [29]int{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	extraDBits  = [dCodes]int{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	extraBLBits = [blCodes]int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7}
	blOrder     = [blCodes]int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

	lengthCode [256]uint8 // match length - 3 -> length code (0..28)
	distCode   [512]uint8 // see dCode
	staticLLen [lCodes + 2]int
	staticDLen [dCodes]int
)

func init() {
	length := 0
	code := 0
	for ; code < 28; code++ {
		for n := 0; n < 1<<extraLBits[code]; n++ {
			lengthCode[length] = uint8(code)
			length++
		}
	}
	lengthCode[length-1] = uint8(code) // length 258 has its own code
	dist := 0
	for code = 0; code < 16; code++ {
		for n := 0; n < 1<<extraDBits[code]; n++ {
			distCode[dist] = uint8(code)
			dist++
		}
	}
	dist >>= 7
	for ; code < dCodes; code++ {
		for n := 0; n < 1<<(extraDBits[code]-7); n++ {
			distCode[256+dist] = uint8(code)
			dist++
		}
	}
	for n := range staticLLen {
		switch {
		case n <= 143:
			staticLLen[n] = 8
		case n <= 255:
			staticLLen[n] = 9
		case n <= 279:
			staticLLen[n] = 7
		default:
			staticLLen[n] = 8
		}
	}
	for n := range staticDLen {
		staticDLen[n] = 5
	}
}

func dCode(dist int) int {
	if dist < 256 {
		return int(distCode[dist])
	}
	return int(distCode[256+(dist>>7)])
}

// tree is one of zlib's dyn_ltree, dyn_dtree, bl_tree with its static description.
type tree struct {
	freq    []int
	length  []int
	dad     []int
	maxCode int
	static  []int // static code lengths, nil for the bit-length tree
	extra   []int
	base    int
	elems   int
	maxLen  int
}

func newTree(size, elems int, static, extra []int, base, maxLen int) *tree {
	return &tree{
		freq: make([]int, size), length: make([]int, size), dad: make([]int, size),
		static: static, extra: extra, base: base, elems: elems, maxLen: maxLen,
	}
}

// trFlushBlock is _tr_flush_block's choice between a stored, a fixed-code and a
// dynamic-code block, adding the chosen block's size to d.bits.
func (d *deflater) trFlushBlock(haveBuf bool, storedLen int) {
	d.buildTree(d.ltree)
	d.buildTree(d.dtree)
	maxBLIndex := d.buildBLTree()
	optLenb := (d.optLen + 3 + 7) >> 3
	staticLenb := (d.staticLen + 3 + 7) >> 3
	if staticLenb <= optLenb {
		optLenb = staticLenb
	}
	switch {
	case storedLen+4 <= optLenb && haveBuf:
		d.bits = (d.bits+3+7)&^7 + 32 + 8*storedLen
	case staticLenb == optLenb:
		d.bits += 3 + d.staticLen
	default:
		_ = maxBLIndex // the tree header is already counted in optLen by buildBLTree
		d.bits += 3 + d.optLen
	}
	d.initBlock()
}

func (d *deflater) smaller(t *tree, n, m int) bool {
	return t.freq[n] < t.freq[m] || (t.freq[n] == t.freq[m] && d.depth[n] <= d.depth[m])
}

func (d *deflater) pqDownHeap(t *tree, k int) {
	v := d.heap[k]
	j := k << 1
	for j <= d.heapLen {
		if j < d.heapLen && d.smaller(t, d.heap[j+1], d.heap[j]) {
			j++
		}
		if d.smaller(t, v, d.heap[j]) {
			break
		}
		d.heap[k] = d.heap[j]
		k = j
		j <<= 1
	}
	d.heap[k] = v
}

func (d *deflater) buildTree(t *tree) {
	maxCode := -1
	d.heapLen, d.heapMax = 0, heapSize
	for n := 0; n < t.elems; n++ {
		if t.freq[n] != 0 {
			d.heapLen++
			d.heap[d.heapLen] = n
			maxCode = n
			d.depth[n] = 0
		} else {
			t.length[n] = 0
		}
	}
	for d.heapLen < 2 {
		node := 0
		if maxCode < 2 {
			maxCode++
			node = maxCode
		}
		d.heapLen++
		d.heap[d.heapLen] = node
		t.freq[node] = 1
		d.depth[node] = 0
		d.optLen--
		if t.static != nil {
			d.staticLen -= t.static[node]
		}
	}
	t.maxCode = maxCode
	for n := d.heapLen / 2; n >= 1; n-- {
		d.pqDownHeap(t, n)
	}
	node := t.elems
	for {
		n := d.heap[1]
		d.heap[1] = d.heap[d.heapLen]
		d.heapLen--
		d.pqDownHeap(t, 1)
		m := d.heap[1]
		d.heapMax--
		d.heap[d.heapMax] = n
		d.heapMax--
		d.heap[d.heapMax] = m
		t.freq[node] = t.freq[n] + t.freq[m]
		d.depth[node] = max(d.depth[n], d.depth[m]) + 1
		t.dad[n], t.dad[m] = node, node
		d.heap[1] = node
		node++
		d.pqDownHeap(t, 1)
		if d.heapLen < 2 {
			break
		}
	}
	d.heapMax--
	d.heap[d.heapMax] = d.heap[1]
	d.genBitlen(t)
}

func (d *deflater) genBitlen(t *tree) {
	clear(d.blCount[:])
	t.length[d.heap[d.heapMax]] = 0
	overflow := 0
	h := d.heapMax + 1
	for ; h < heapSize; h++ {
		n := d.heap[h]
		bits := t.length[t.dad[n]] + 1
		if bits > t.maxLen {
			bits = t.maxLen
			overflow++
		}
		t.length[n] = bits
		if n > t.maxCode {
			continue
		}
		d.blCount[bits]++
		xbits := 0
		if n >= t.base {
			xbits = t.extra[n-t.base]
		}
		f := t.freq[n]
		d.optLen += f * (bits + xbits)
		if t.static != nil {
			d.staticLen += f * (t.static[n] + xbits)
		}
	}
	if overflow == 0 {
		return
	}
	for overflow > 0 {
		bits := t.maxLen - 1
		for d.blCount[bits] == 0 {
			bits--
		}
		d.blCount[bits]--
		d.blCount[bits+1] += 2
		d.blCount[t.maxLen]--
		overflow -= 2
	}
	for bits := t.maxLen; bits != 0; bits-- {
		n := d.blCount[bits]
		for n != 0 {
			h--
			m := d.heap[h]
			if m > t.maxCode {
				continue
			}
			if t.length[m] != bits {
				d.optLen += (bits - t.length[m]) * t.freq[m]
				t.length[m] = bits
			}
			n--
		}
	}
}

const (
	rep3to6     = 16
	repz3to10   = 17
	repz11to138 = 18
)

func (d *deflater) scanTree(t *tree) {
	prevLen := -1
	nextLen := t.length[0]
	count := 0
	maxCount, minCount := 7, 4
	if nextLen == 0 {
		maxCount, minCount = 138, 3
	}
	t.length[t.maxCode+1] = 0xffff // guard
	bl := d.bltree.freq
	for n := 0; n <= t.maxCode; n++ {
		curLen := nextLen
		nextLen = t.length[n+1]
		count++
		if count < maxCount && curLen == nextLen {
			continue
		} else if count < minCount {
			bl[curLen] += count
		} else if curLen != 0 {
			if curLen != prevLen {
				bl[curLen]++
			}
			bl[rep3to6]++
		} else if count <= 10 {
			bl[repz3to10]++
		} else {
			bl[repz11to138]++
		}
		count = 0
		prevLen = curLen
		switch {
		case nextLen == 0:
			maxCount, minCount = 138, 3
		case curLen == nextLen:
			maxCount, minCount = 6, 3
		default:
			maxCount, minCount = 7, 4
		}
	}
}

func (d *deflater) buildBLTree() int {
	d.scanTree(d.ltree)
	d.scanTree(d.dtree)
	d.buildTree(d.bltree)
	maxBLIndex := blCodes - 1
	for ; maxBLIndex >= 3; maxBLIndex-- {
		if d.bltree.length[blOrder[maxBLIndex]] != 0 {
			break
		}
	}
	d.optLen += 3*(maxBLIndex+1) + 5 + 5 + 4
	return maxBLIndex
}
