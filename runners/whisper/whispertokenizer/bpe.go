package whispertokenizer

import (
	"math"
	"unicode"
	"unicode/utf8"
)

// splitPieces calls fn for each piece of text in the order whisper's pre-tokenizer pattern
// (tiktoken's pat_str for gpt2 and multilingual)
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// finds them. The alternatives are tried in order at each position, as a backtracking regex
// engine does; \s is the Unicode White_Space property (as in tiktoken's Rust regex and
// Python's regex module). Bytes that are not valid UTF-8 count as "other" characters.
func splitPieces(text string, fn func(piece string)) {
	for i := 0; i < len(text); {
		n := matchAt(text, i)
		fn(text[i : i+n])
		i += n
	}
}

type class uint8

const (
	classOther class = iota
	classLetter
	classNumber
	classSpace
)

func classify(r rune, size int) class {
	switch {
	case r == utf8.RuneError && size <= 1:
		return classOther
	case r < utf8.RuneSelf:
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			return classLetter
		case '0' <= r && r <= '9':
			return classNumber
		case r == ' ', '\t' <= r && r <= '\r':
			return classSpace
		}
		return classOther
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.Is(unicode.White_Space, r):
		return classSpace
	}
	return classOther
}

func classAt(text string, i int) (class, int) {
	r, size := utf8.DecodeRuneInString(text[i:])
	return classify(r, size), size
}

// runOf returns the end of the run of characters of class c starting at i.
func runOf(text string, i int, c class) int {
	for i < len(text) {
		k, size := classAt(text, i)
		if k != c {
			break
		}
		i += size
	}
	return i
}

// matchAt returns the length (> 0) of the piece starting at byte i.
func matchAt(text string, i int) int {
	if text[i] == '\'' && i+1 < len(text) {
		switch text[i+1] {
		case 's', 't', 'm', 'd':
			return 2
		case 'r', 'v', 'l':
			if i+2 < len(text) {
				switch text[i+1 : i+3] {
				case "re", "ve", "ll":
					return 3
				}
			}
		}
	}
	c, size := classAt(text, i)
	start := i
	if text[i] == ' ' && i+1 < len(text) {
		// " ?X+" for X in letter, number, other: the optional space binds to what follows.
		if next, _ := classAt(text, i+1); next != classSpace {
			return runOf(text, i+1, next) - start
		}
	}
	if c != classSpace {
		return runOf(text, i+size, c) - start
	}
	// \s+(?!\S): the whole whitespace run at the end of text, or all of it but its last
	// character when a non-space follows; a single whitespace before a non-space falls
	// through to \s+ and is taken alone.
	end := runOf(text, i, classSpace)
	if end == len(text) {
		return end - start
	}
	_, lastSize := utf8.DecodeLastRuneInString(text[start:end])
	if end-lastSize > start {
		return end - lastSize - start
	}
	return end - start
}

// part is one boundary of a piece being merged: the byte offset where a token starts and the
// rank of the pair that begins there (math.MaxInt when the pair is not mergeable).
type part struct {
	start int
	rank  int
}

// bytePairMerge merges the bytes of piece as tiktoken's _byte_pair_merge does: repeatedly join
// the adjacent pair whose concatenation has the lowest rank, the leftmost one on ties. It
// appends the resulting token ids to out.
func (r *Ranks) bytePairMerge(piece string, parts []part, out []int) ([]int, []part) {
	parts = parts[:0]
	minRank, minIdx := math.MaxInt, -1
	for i := 0; i < len(piece)-1; i++ {
		rank := r.rank(piece[i : i+2])
		if rank < minRank {
			minRank, minIdx = rank, i
		}
		parts = append(parts, part{i, rank})
	}
	parts = append(parts, part{len(piece) - 1, math.MaxInt}, part{len(piece), math.MaxInt})
	pairRank := func(i int) int {
		if i+3 < len(parts) {
			return r.rank(piece[parts[i].start:parts[i+3].start])
		}
		return math.MaxInt
	}
	for minRank != math.MaxInt {
		i := minIdx
		if i > 0 {
			parts[i-1].rank = pairRank(i - 1)
		}
		parts[i].rank = pairRank(i)
		parts = append(parts[:i+1], parts[i+2:]...)
		minRank, minIdx = math.MaxInt, -1
		for j, p := range parts[:len(parts)-1] {
			if p.rank < minRank {
				minRank, minIdx = p.rank, j
			}
		}
	}
	for i := 0; i+1 < len(parts); i++ {
		out = append(out, r.enc[piece[parts[i].start:parts[i+1].start]])
	}
	return out, parts
}

func (r *Ranks) rank(b string) int {
	if id, ok := r.enc[b]; ok {
		return id
	}
	return math.MaxInt
}

// encodeOrdinary encodes text with no special-token handling: split, then BPE each piece.
func (r *Ranks) encodeOrdinary(text string, out []int) []int {
	var parts []part
	splitPieces(text, func(piece string) {
		if id, ok := r.enc[piece]; ok {
			out = append(out, id)
			return
		}
		out, parts = r.bytePairMerge(piece, parts, out)
	})
	return out
}
