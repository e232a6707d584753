package textnorm

import "strings"

// DefaultChunkSize is HEAD's DEFAULT_CHUNK_SIZE: the most characters per chunk.
const DefaultChunkSize = 256

// MaxEncoderTokens is HEAD's MAX_ENCODER_TOKENS: a sentence with more tokens is split at
// clause ends (the device encoder's largest bucket is 256).
const MaxEncoderTokens = 250

// splitAfter is re.split(r"(?<=[<marks>])\s+", s): s cut at each run of whitespace that
// follows one of marks, the whitespace dropped.
func splitAfter(s, marks string) []string {
	t := []rune(s)
	var out []string
	start := 0
	for i := 1; i < len(t); i++ {
		if !isSpace(t[i]) || !strings.ContainsRune(marks, t[i-1]) {
			continue
		}
		j := i
		for j < len(t) && isSpace(t[j]) {
			j++
		}
		out = append(out, string(t[start:i]))
		start = j
		i = j - 1
	}
	return append(out, string(t[start:]))
}

// pyStrip is Python's str.strip().
func pyStrip(s string) string { return strings.TrimFunc(s, isSpace) }

// Chunk is chunk_text(text, max, processor): text of at most max characters is one chunk as
// it is; a longer text is stripped, split into sentences after . ! or ? and whitespace, each
// sentence of more than MaxEncoderTokens tokens (count, the tokenizer's length with </s>; nil
// skips this) cut at the last clause end (, or ;) within the budget, and the pieces packed
// greedily, joined by one space, into chunks of at most max characters. A single piece longer
// than max stays whole.
func Chunk(text string, max int, count func(string) int) []string {
	if runeLen(text) <= max {
		return []string{text}
	}
	sentences := splitAfter(pyStrip(text), ".!?")
	var flat []string
	for _, s := range sentences {
		if s = pyStrip(s); s != "" {
			flat = append(flat, splitOversized(s, count)...)
		}
	}
	var chunks []string
	cur := ""
	for _, s := range flat {
		switch {
		case cur == "":
			cur = s
		case runeLen(cur)+1+runeLen(s) <= max:
			cur += " " + s
		default:
			chunks = append(chunks, cur)
			cur = s
		}
	}
	if cur != "" {
		chunks = append(chunks, cur)
	}
	return chunks
}

// splitOversized is chunk_text's split_oversized.
func splitOversized(sentence string, count func(string) int) []string {
	if count == nil || count(sentence) <= MaxEncoderTokens {
		return []string{sentence}
	}
	var parts []string
	cur := ""
	for _, clause := range splitAfter(sentence, ",;") {
		cand := clause
		if cur != "" {
			cand = pyStrip(cur + " " + clause)
		}
		if count(cand) <= MaxEncoderTokens {
			cur = cand
		} else {
			if cur != "" {
				parts = append(parts, cur)
			}
			cur = clause
		}
	}
	if cur != "" {
		parts = append(parts, cur)
	}
	if len(parts) == 0 {
		return []string{sentence}
	}
	return parts
}

// Fit cuts a chunk that still has more than limit tokens (a clause past the budget, which
// HEAD hands to the device as it is, beyond its largest encoder bucket) at the last space
// within the budget, or at the budget when it has no space, so that every piece fits the
// encoder. Chunks within the budget are returned as they are.
func Fit(chunk string, limit int, count func(string) int) []string {
	var out []string
	for count(chunk) > limit {
		t := []rune(chunk)
		lo, hi := 1, len(t) // largest prefix length that fits
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if count(string(t[:mid])) <= limit {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		cut := lo
		for i := lo; i > 0; i-- {
			if isSpace(t[i-1]) {
				cut = i
				break
			}
		}
		head := pyStrip(string(t[:cut]))
		if head == "" {
			head, cut = string(t[:lo]), lo
		}
		out = append(out, head)
		chunk = pyStrip(string(t[cut:]))
		if chunk == "" {
			return out
		}
	}
	return append(out, chunk)
}

// Lead cuts a streamed text's first chunk to at most limit characters so that its audio comes
// early: at the last clause or sentence end (, ; : . ! ? followed by a space) within the limit,
// else at the last space within it; a chunk within the limit, or one without such a place, is
// returned whole. The rest follows as the next chunk.
func Lead(chunk string, limit int) []string {
	t := []rune(chunk)
	if len(t) <= limit {
		return []string{chunk}
	}
	cut := -1
	for i := limit; i > 0; i-- {
		if i < len(t) && isSpace(t[i]) && strings.ContainsRune(",;:.!?", t[i-1]) {
			cut = i
			break
		}
	}
	if cut < limit/2 { // no clause end in the second half of the budget: the last space
		for i := limit; i > 0; i-- {
			if i < len(t) && isSpace(t[i]) {
				cut = max(cut, i)
				break
			}
		}
	}
	if cut <= 0 {
		return []string{chunk}
	}
	head, rest := pyStrip(string(t[:cut])), pyStrip(string(t[cut:]))
	if head == "" || rest == "" {
		return []string{chunk}
	}
	return []string{head, rest}
}
