package t5

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// hfPipeline is the tokenizer.json (Hugging Face tokenizers) encode/decode pipeline.
type hfPipeline struct {
	// rawAdded and normAdded match added tokens in the raw text (normalized=false) and in the
	// normalized text (normalized=true); nil when there are none.
	rawAdded, normAdded *trie
	special             map[int]bool   // added tokens with special=true: skipped by Decode
	addedText           map[int]string // added token contents by id
	normalizers         []hfNormalizer
	whitespaceSplit     bool
	metaspace           *hfMetaspace
	decoders            []hfDecoder
	vocabSize           int
}

type hfMetaspace struct {
	replacement string
	prepend     string // "always", "first" or "never"
	split       bool
}

type hfNormalizer func(string) string

type hfDecoder func([]string) []string

// splitAdded cuts s at the added tokens of tr (leftmost, longest first) and calls text for the
// pieces between them and token for each match, in order.
func splitAdded(tr *trie, s string, text func(string), token func(int)) {
	if tr == nil {
		if s != "" {
			text(s)
		}
		return
	}
	last := 0
	for i := 0; i < len(s); {
		if id, n := tr.longestPrefix(s[i:]); n > 0 {
			if i > last {
				text(s[last:i])
			}
			token(int(id))
			i += n
			last = i
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if last < len(s) {
		text(s[last:])
	}
}

// appendIDs runs tokenizers' encode pipeline on text: added tokens, normalizers,
// pre-tokenizers, then the Unigram model per word.
func (h *hfPipeline) appendIDs(t *Tokenizer, sc *encodeScratch, dst []int, text string) []int {
	text = toValidUTF8(text)
	first := true
	splitAdded(h.rawAdded, text, func(seg string) {
		isFirst := first
		first = false
		for _, n := range h.normalizers {
			seg = n(seg)
		}
		splitAdded(h.normAdded, seg, func(part string) {
			dst = h.appendWords(t, sc, dst, part, isFirst)
			isFirst = false
		}, func(id int) { dst = append(dst, id) })
	}, func(id int) {
		first = false
		dst = append(dst, id)
	})
	return dst
}

// appendWords pre-tokenizes one normalized piece of text and appends the ids of its words.
func (h *hfPipeline) appendWords(t *Tokenizer, sc *encodeScratch, dst []int, s string, atStart bool) []int {
	words := []string{s}
	if h.whitespaceSplit {
		words = strings.FieldsFunc(s, unicode.IsSpace)
	}
	m := h.metaspace
	for wi, w := range words {
		if w == "" {
			continue // tokenizers' prepend is a no-op on an empty string, which then vanishes
		}
		if m == nil {
			dst = t.appendWordIDs(sc, dst, w)
			continue
		}
		w = strings.ReplaceAll(w, " ", m.replacement)
		if !strings.HasPrefix(w, m.replacement) &&
			(m.prepend == "always" || (m.prepend == "first" && atStart && wi == 0)) {
			w = m.replacement + w
		}
		if !m.split {
			dst = t.appendWordIDs(sc, dst, w)
			continue
		}
		// Split with MergedWithNext: each delimiter starts a new word; text before the first
		// delimiter is a word of its own.
		for w != "" {
			from := 0
			if strings.HasPrefix(w, m.replacement) {
				from = len(m.replacement)
			}
			word := w
			if next := strings.Index(w[from:], m.replacement); next >= 0 {
				word = w[:from+next]
			}
			dst = t.appendWordIDs(sc, dst, word)
			w = w[len(word):]
		}
	}
	return dst
}

// toValidUTF8 replaces each malformed byte with U+FFFD.
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			b.WriteString("\uFFFD")
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// decode is tokenizers' decode with skip_special_tokens=true: special added tokens are
// dropped, the rest go through the decoder chain and are joined.
func (h *hfPipeline) decode(t *Tokenizer, ids []int) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= h.vocabSize || h.special[id] {
			continue
		}
		if id < len(t.pieces) {
			toks = append(toks, t.pieces[id].text)
		} else if s, ok := h.addedText[id]; ok {
			toks = append(toks, s)
		}
	}
	if len(h.decoders) == 0 {
		return strings.Join(toks, " ")
	}
	for _, d := range h.decoders {
		toks = d(toks)
	}
	return strings.Join(toks, "")
}
