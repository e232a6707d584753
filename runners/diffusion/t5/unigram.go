package t5

import "unicode/utf8"

// unkPenalty is kUnkPenalty of sentencepiece and K_UNK_PENALTY of tokenizers: an unknown
// character scores this much below the lowest piece score.
const unkPenalty = 10.0

// unigram is the Viterbi segmenter over a vocabulary trie.
type unigram struct {
	pieces []piece
	trie   *trie
	unkID  int32
	// float64Scores selects tokenizers' arithmetic (every score and sum in float64). Otherwise
	// sentencepiece's: float32 path scores, piece candidates summed in double and stored in
	// float, the unknown candidate summed in float.
	float64Scores bool
	scores64      []float64 // tokenizers' float64 scores by id
	minScore      float64   // sentencepiece: float32 value; tokenizers: float64
	maxScore      float32   // sentencepiece's max over NORMAL pieces (FLT_MIN when all are negative)
}

// segment is one piece of the best segmentation: bytes [start, end) of the normalized text.
type segment struct {
	start, end int32
	id         int32
}

type bestNode struct {
	score    float64
	startsAt int32
	id       int32
}

// oneCharLen is sentencepiece's string_util::OneCharLen: the UTF-8 length claimed by the lead
// byte (1 for continuation and invalid bytes).
func oneCharLen(b byte) int {
	return int("\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x02\x02\x03\x04"[b>>4])
}

// viterbi appends the best segmentation of s to dst (sentencepiece's EncodeOptimized and
// tokenizers' encode_optimized, which are the same algorithm). Unknown characters come out as
// single-character segments with unkID.
func (u *unigram) viterbi(s string, best []bestNode, dst []segment) ([]segment, []bestNode) {
	size := len(s)
	if size == 0 {
		return dst, best
	}
	if cap(best) < size+1 {
		best = make([]bestNode, size+1)
	}
	best = best[:size+1]
	for i := range best {
		best[i] = bestNode{startsAt: -1, id: -1}
	}
	unk32 := float32(u.minScore) - float32(unkPenalty)
	unk64 := u.minScore - unkPenalty
	for startsAt := 0; startsAt < size; {
		tillHere := best[startsAt].score
		mblen := min(oneCharLen(s[startsAt]), size-startsAt)
		hasSingle := false
		node := int32(0)
		for keyPos := startsAt; keyPos < size; {
			if node = u.trie.step(node, s[keyPos]); node < 0 {
				break
			}
			keyPos++
			id := u.trie.nodes[node].value
			if id < 0 {
				continue
			}
			p := &u.pieces[id]
			length := keyPos - startsAt
			var cand float64
			if u.float64Scores {
				cand = u.scores64[id] + tillHere
			} else {
				if p.typ == typeUnused {
					continue
				}
				score := float64(p.score)
				if p.typ == typeUserDefined {
					score = float64(float32(length)*u.maxScore) - 0.1
				}
				cand = score + tillHere
			}
			target := &best[keyPos]
			if target.startsAt == -1 || cand > target.score {
				if !u.float64Scores {
					cand = float64(float32(cand))
				}
				target.score, target.startsAt, target.id = cand, int32(startsAt), id
			}
			if length == mblen {
				hasSingle = true
			}
		}
		if !hasSingle {
			var cand float64
			if u.float64Scores {
				cand = unk64 + tillHere
			} else {
				cand = float64(unk32 + float32(tillHere))
			}
			target := &best[startsAt+mblen]
			if target.startsAt == -1 || cand > target.score {
				target.score, target.startsAt, target.id = cand, int32(startsAt), u.unkID
			}
		}
		startsAt += mblen
	}
	n := len(dst)
	for end := size; end > 0; {
		nd := best[end]
		dst = append(dst, segment{start: nd.startsAt, end: int32(end), id: nd.id})
		end = int(nd.startsAt)
	}
	for i, j := n, len(dst)-1; i < j; i, j = i+1, j-1 {
		dst[i], dst[j] = dst[j], dst[i]
	}
	return dst, best
}

// validUTF8Prefix reports the length of the valid UTF-8 character at the start of b, or 0 if b
// starts with a malformed sequence (sentencepiece's IsValidDecodeUTF8; U+FFFD itself is valid).
func validUTF8Prefix(b []byte) int {
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size <= 1 {
		return 0
	}
	return size
}
