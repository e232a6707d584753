package decoding

import "sync"

// zlibCompressedLen returns len(zlib.compress(data)) as Python computes it with zlib 1.2.x at
// the default level (6: lazy matching with good 8, lazy 16, nice 128, chain 128; 32 KiB
// window; memLevel 8). Go's compress/zlib makes a different (often a few bytes longer) stream,
// which would move whisper's compression-ratio threshold, so this is a port of zlib's
// deflate_slow, longest_match and trees.c block-size accounting. It produces no bits: it
// counts them, choosing stored, fixed or dynamic blocks by the sizes zlib computes for them.
func zlibCompressedLen(data []byte) int {
	d, _ := deflaterPool.Get().(*deflater)
	if d == nil {
		d = newDeflater()
	}
	d.reset(data)
	d.run()
	n := 2 + (d.bits+7)/8 + 4 // zlib header, deflate stream, adler32
	d.in = nil
	deflaterPool.Put(d)
	return n
}

// deflaterPool keeps the 192 KiB of window and hash tables between calls.
var deflaterPool sync.Pool

const (
	wBits        = 15
	wSize        = 1 << wBits
	wMask        = wSize - 1
	windowSize   = 2 * wSize
	hashBits     = 8 + 7 // memLevel + 7
	hashSize     = 1 << hashBits
	hashMask     = hashSize - 1
	hashShift    = (hashBits + minMatch - 1) / minMatch
	minMatch     = 3
	maxMatch     = 258
	minLookahead = maxMatch + minMatch + 1
	maxDist      = wSize - minLookahead
	litBufsize   = 1 << (8 + 6)
	tooFar       = 4096
	winInit      = maxMatch

	goodLength = 8
	maxLazy    = 16
	niceLength = 128
	maxChain   = 128

	literals  = 256
	endBlock  = 256
	lCodes    = literals + 1 + 29
	dCodes    = 30
	blCodes   = 19
	heapSize  = 2*lCodes + 1
	maxBits   = 15
	maxBLBits = 7
)

type deflater struct {
	in  []byte
	pos int // next input byte

	window     []byte
	prev       []uint16
	head       []uint16
	insH       int
	strstart   int
	lookahead  int
	insert     int
	blockStart int
	matchStart int
	matchLen   int
	prevLen    int
	prevMatch  int
	matchAvail bool
	highWater  int

	ltree, dtree, bltree *tree
	heap                 [2*lCodes + 1]int
	heapLen, heapMax     int
	depth                [2*lCodes + 1]int
	blCount              [maxBits + 1]int
	optLen, staticLen    int
	nsym                 int

	bits int // total bits of the deflate stream so far
}

func newDeflater() *deflater {
	return &deflater{
		window: make([]byte, windowSize),
		prev:   make([]uint16, wSize),
		head:   make([]uint16, hashSize),
		ltree:  newTree(heapSize, lCodes, staticLLen[:], extraLBits[:], literals+1, maxBits),
		dtree:  newTree(2*dCodes+1, dCodes, staticDLen[:], extraDBits[:], 0, maxBits),
		bltree: newTree(2*blCodes+1, blCodes, nil, extraBLBits[:], 0, maxBLBits),
	}
}

// reset is deflateInit + lm_init for new input. The window needs no clearing: only bytes
// below highWater are ever read, and those are input or zeroed in this run.
func (d *deflater) reset(data []byte) {
	d.in, d.pos = data, 0
	clear(d.head)
	clear(d.prev)
	d.insH, d.strstart, d.lookahead, d.insert, d.blockStart = 0, 0, 0, 0, 0
	d.matchStart, d.prevMatch, d.matchAvail, d.highWater = 0, 0, false, 0
	d.matchLen, d.prevLen = minMatch-1, minMatch-1
	d.bits = 0
	d.initBlock()
}

func (d *deflater) initBlock() {
	clear(d.ltree.freq[:lCodes])
	clear(d.dtree.freq[:dCodes])
	clear(d.bltree.freq[:blCodes])
	d.ltree.freq[endBlock] = 1
	d.optLen, d.staticLen, d.nsym = 0, 0, 0
}

func (d *deflater) updateHash(c byte) { d.insH = ((d.insH << hashShift) ^ int(c)) & hashMask }

// insertString is INSERT_STRING: it returns the previous head of the hash chain.
func (d *deflater) insertString(str int) int {
	d.updateHash(d.window[str+minMatch-1])
	h := d.head[d.insH]
	d.prev[str&wMask] = h
	d.head[d.insH] = uint16(str)
	return int(h)
}

func (d *deflater) fillWindow() {
	for {
		more := windowSize - d.lookahead - d.strstart
		if d.strstart >= wSize+maxDist {
			copy(d.window, d.window[wSize:wSize+wSize-more])
			d.matchStart -= wSize
			d.strstart -= wSize
			d.blockStart -= wSize
			if d.insert > d.strstart {
				d.insert = d.strstart
			}
			for i, m := range d.head {
				d.head[i] = slide(m)
			}
			for i, m := range d.prev {
				d.prev[i] = slide(m)
			}
			more += wSize
		}
		if d.pos == len(d.in) {
			break
		}
		n := copy(d.window[d.strstart+d.lookahead:d.strstart+d.lookahead+more], d.in[d.pos:])
		d.pos += n
		d.lookahead += n
		if d.lookahead+d.insert >= minMatch {
			str := d.strstart - d.insert
			d.insH = int(d.window[str])
			d.updateHash(d.window[str+1])
			for d.insert > 0 {
				d.updateHash(d.window[str+minMatch-1])
				d.prev[str&wMask] = d.head[d.insH]
				d.head[d.insH] = uint16(str)
				str++
				d.insert--
				if d.lookahead+d.insert < minMatch {
					break
				}
			}
		}
		if d.lookahead >= minLookahead || d.pos == len(d.in) {
			break
		}
	}
	// Zero the bytes after the data that longest_match may read (zlib's high_water).
	if d.highWater < windowSize {
		curr := d.strstart + d.lookahead
		if d.highWater < curr {
			init := min(windowSize-curr, winInit)
			clear(d.window[curr : curr+init])
			d.highWater = curr + init
		} else if d.highWater < curr+winInit {
			init := min(curr+winInit-d.highWater, windowSize-d.highWater)
			clear(d.window[d.highWater : d.highWater+init])
			d.highWater += init
		}
	}
}

func slide(m uint16) uint16 {
	if int(m) >= wSize {
		return m - wSize
	}
	return 0
}

func (d *deflater) longestMatch(curMatch int) int {
	chain := maxChain
	scan := d.strstart
	bestLen := d.prevLen
	nice := niceLength
	limit := 0
	if d.strstart > maxDist {
		limit = d.strstart - maxDist
	}
	w := d.window
	scanEnd1, scanEnd := w[scan+bestLen-1], w[scan+bestLen]
	if d.prevLen >= goodLength {
		chain >>= 2
	}
	if nice > d.lookahead {
		nice = d.lookahead
	}
	for {
		m := curMatch
		if w[m+bestLen] == scanEnd && w[m+bestLen-1] == scanEnd1 && w[m] == w[scan] && w[m+1] == w[scan+1] {
			// Byte 2 is not compared: equal hashes imply it is equal (zlib's reasoning).
			k := 3
			for k < maxMatch && w[scan+k] == w[m+k] {
				k++
			}
			if k > bestLen {
				d.matchStart = curMatch
				bestLen = k
				if k >= nice {
					break
				}
				scanEnd1, scanEnd = w[scan+bestLen-1], w[scan+bestLen]
			}
		}
		curMatch = int(d.prev[curMatch&wMask])
		if curMatch <= limit {
			break
		}
		chain--
		if chain == 0 {
			break
		}
	}
	if bestLen <= d.lookahead {
		return bestLen
	}
	return d.lookahead
}

func (d *deflater) tallyLit(c byte) bool {
	d.ltree.freq[c]++
	d.nsym++
	return d.nsym == litBufsize-1
}

func (d *deflater) tallyDist(dist, lc int) bool {
	dist--
	d.ltree.freq[int(lengthCode[lc])+literals+1]++
	d.dtree.freq[dCode(dist)]++
	d.nsym++
	return d.nsym == litBufsize-1
}

func (d *deflater) flushBlock(last bool) {
	d.trFlushBlock(d.blockStart >= 0, d.strstart-d.blockStart)
	d.blockStart = d.strstart
	if last {
		d.bits = (d.bits + 7) &^ 7 // bi_windup
	}
}

// run is deflate_slow with flush = Z_FINISH.
func (d *deflater) run() {
	for {
		if d.lookahead < minLookahead {
			d.fillWindow()
			if d.lookahead == 0 {
				break
			}
		}
		hashHead := 0
		if d.lookahead >= minMatch {
			hashHead = d.insertString(d.strstart)
		}
		d.prevLen, d.prevMatch = d.matchLen, d.matchStart
		d.matchLen = minMatch - 1
		if hashHead != 0 && d.prevLen < maxLazy && d.strstart-hashHead <= maxDist {
			d.matchLen = d.longestMatch(hashHead)
			if d.matchLen <= 5 && d.matchLen == minMatch && d.strstart-d.matchStart > tooFar {
				d.matchLen = minMatch - 1
			}
		}
		switch {
		case d.prevLen >= minMatch && d.matchLen <= d.prevLen:
			maxInsert := d.strstart + d.lookahead - minMatch
			flush := d.tallyDist(d.strstart-1-d.prevMatch, d.prevLen-minMatch)
			d.lookahead -= d.prevLen - 1
			d.prevLen -= 2
			for {
				d.strstart++
				if d.strstart <= maxInsert {
					d.insertString(d.strstart)
				}
				d.prevLen--
				if d.prevLen == 0 {
					break
				}
			}
			d.matchAvail = false
			d.matchLen = minMatch - 1
			d.strstart++
			if flush {
				d.flushBlock(false)
			}
		case d.matchAvail:
			if d.tallyLit(d.window[d.strstart-1]) {
				d.flushBlock(false)
			}
			d.strstart++
			d.lookahead--
		default:
			d.matchAvail = true
			d.strstart++
			d.lookahead--
		}
	}
	if d.matchAvail {
		d.tallyLit(d.window[d.strstart-1])
		d.matchAvail = false
	}
	d.flushBlock(true)
}
