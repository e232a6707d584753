package t5

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
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

// JSON shapes of tokenizer.json.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Padding       *struct {
		PadID *int `json:"pad_id"`
	} `json:"padding"`
	Model struct {
		Type         string          `json:"type"`
		UnkID        *int            `json:"unk_id"`
		Vocab        json.RawMessage `json:"vocab"`
		ByteFallback bool            `json:"byte_fallback"`
	} `json:"model"`
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	Normalized bool   `json:"normalized"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	SingleWord bool   `json:"single_word"`
}

type hfVocabEntry struct {
	piece string
	score float64
}

func (e *hfVocabEntry) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil || len(pair) != 2 {
		return fmt.Errorf("%w: vocab entry %s is not [piece, score]", ErrInvalidModel, truncate(b))
	}
	if err := json.Unmarshal(pair[0], &e.piece); err != nil {
		return fmt.Errorf("%w: vocab piece %s: %v", ErrInvalidModel, truncate(pair[0]), err)
	}
	if err := json.Unmarshal(pair[1], &e.score); err != nil {
		return fmt.Errorf("%w: vocab score %s: %v", ErrInvalidModel, truncate(pair[1]), err)
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// hfComponent is the common {"type": ...} envelope of normalizers, pre-tokenizers and decoders.
type hfComponent struct {
	Type string `json:"type"`
	// Sequence members.
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	// Precompiled.
	PrecompiledCharsmap *string `json:"precompiled_charsmap"`
	// Strip (normalizer).
	StripLeft  *bool `json:"strip_left"`
	StripRight *bool `json:"strip_right"`
	// Strip (decoder).
	Content string `json:"content"`
	Start   int    `json:"start"`
	Stop    int    `json:"stop"`
	// Replace.
	Pattern struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	// Prepend.
	Prepend string `json:"prepend"`
	// Metaspace.
	Replacement    string `json:"replacement"`
	AddPrefixSpace *bool  `json:"add_prefix_space"`
	PrependScheme  string `json:"prepend_scheme"`
	Split          *bool  `json:"split"`
	// TemplateProcessing.
	Single        []map[string]json.RawMessage `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// parseHFJSON builds a Tokenizer from a Hugging Face tokenizer.json with a Unigram model.
func parseHFJSON(data []byte) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %w", ErrInvalidModel, err)
	}
	if f.Model.Type != "Unigram" {
		return nil, fmt.Errorf("%w: tokenizer.json model type %q (only Unigram)", ErrUnsupported, f.Model.Type)
	}
	var vocab []hfVocabEntry
	if err := json.Unmarshal(f.Model.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json vocab: %w", ErrInvalidModel, err)
	}
	if len(vocab) == 0 {
		return nil, fmt.Errorf("%w: tokenizer.json has an empty vocab", ErrInvalidModel)
	}
	t := &Tokenizer{byteFallback: f.Model.ByteFallback, unkID: -1}
	h := &hfPipeline{special: map[int]bool{}, addedText: map[int]string{}}
	t.hf = h

	t.pieces = make([]piece, len(vocab))
	keys := make([]trieKey, 0, len(vocab))
	seen := make(map[string]struct{}, len(vocab))
	minScore := math.Inf(1)
	for i, e := range vocab {
		if e.piece == "" {
			return nil, fmt.Errorf("%w: vocab entry %d is empty", ErrInvalidModel, i)
		}
		if _, dup := seen[e.piece]; dup {
			return nil, fmt.Errorf("%w: vocab piece %q is defined twice", ErrInvalidModel, e.piece)
		}
		seen[e.piece] = struct{}{}
		typ := int32(typeNormal)
		if _, ok := pieceToByte(e.piece); ok {
			typ = typeByte
		}
		t.pieces[i] = piece{text: e.piece, score: float32(e.score), typ: typ}
		keys = append(keys, trieKey{e.piece, int32(i)})
		minScore = math.Min(minScore, e.score)
	}
	if err := t.indexPieces(); err != nil {
		return nil, err
	}
	if f.Model.UnkID == nil || *f.Model.UnkID < 0 || *f.Model.UnkID >= len(t.pieces) {
		return nil, fmt.Errorf("%w: tokenizer.json Unigram without a valid unk_id", ErrUnsupported)
	}
	t.unkID = *f.Model.UnkID
	// Scores are kept as float64 for tokenizers' arithmetic.
	u := unigram{pieces: t.pieces, trie: newTrie(keys), unkID: int32(t.unkID),
		float64Scores: true, minScore: minScore}
	scores := make([]float64, len(t.pieces))
	for i, e := range vocab {
		scores[i] = e.score
	}
	u.scores64 = scores
	t.model = u

	h.vocabSize = len(t.pieces)
	var rawKeys, normKeys []trieKey
	for _, a := range f.AddedTokens {
		if a.Content == "" || a.ID < 0 {
			return nil, fmt.Errorf("%w: added token %d %q", ErrInvalidModel, a.ID, a.Content)
		}
		if a.LStrip || a.RStrip || a.SingleWord {
			return nil, fmt.Errorf("%w: added token %q with lstrip/rstrip/single_word", ErrUnsupported, a.Content)
		}
		if a.ID < len(t.pieces) {
			if t.pieces[a.ID].text != a.Content {
				return nil, fmt.Errorf("%w: added token %d %q is %q in the vocab", ErrInvalidModel, a.ID, a.Content, t.pieces[a.ID].text)
			}
		}
		h.vocabSize = max(h.vocabSize, a.ID+1)
		h.special[a.ID] = a.Special
		h.addedText[a.ID] = a.Content
		if a.Normalized && !a.Special {
			normKeys = append(normKeys, trieKey{a.Content, int32(a.ID)})
		} else {
			rawKeys = append(rawKeys, trieKey{a.Content, int32(a.ID)})
		}
	}
	if len(rawKeys) > 0 {
		h.rawAdded = newTrie(rawKeys)
	}
	if len(normKeys) > 0 {
		h.normAdded = newTrie(normKeys)
	}

	var err error
	if !isNull(f.Normalizer) {
		if h.normalizers, err = parseHFNormalizer(f.Normalizer); err != nil {
			return nil, err
		}
	}
	if !isNull(f.PreTokenizer) {
		if err := h.parsePreTokenizer(f.PreTokenizer, true); err != nil {
			return nil, err
		}
	}
	if !isNull(f.Decoder) {
		if h.decoders, err = parseHFDecoder(f.Decoder); err != nil {
			return nil, err
		}
	}
	if err := t.parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	t.eosID = -1
	if len(t.suffix) > 0 {
		t.eosID = t.suffix[len(t.suffix)-1]
	}
	t.padID = 0
	if f.Padding != nil && f.Padding.PadID != nil {
		t.padID = *f.Padding.PadID
	} else if id := t.model.trie.lookup("<pad>"); id >= 0 {
		t.padID = int(id)
	}
	t.initScratch()
	return t, nil
}

// parsePostProcessor reads the ids TemplateProcessing puts around $A. Without a post-processor
// the vocabulary's "</s>" follows the text, as T5 does.
func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		if id := t.model.trie.lookup("</s>"); id >= 0 {
			t.suffix = []int{int(id)}
		}
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%w: post_processor: %w", ErrInvalidModel, err)
	}
	if c.Type != "TemplateProcessing" {
		return fmt.Errorf("%w: post_processor %q (only TemplateProcessing)", ErrUnsupported, c.Type)
	}
	seenA := false
	for _, item := range c.Single {
		if _, ok := item["Sequence"]; ok {
			seenA = true
			continue
		}
		rawTok, ok := item["SpecialToken"]
		if !ok {
			return fmt.Errorf("%w: post_processor template item %v", ErrUnsupported, item)
		}
		var st struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(rawTok, &st); err != nil {
			return fmt.Errorf("%w: post_processor special token: %w", ErrInvalidModel, err)
		}
		spec, ok := c.SpecialTokens[st.ID]
		if !ok {
			return fmt.Errorf("%w: post_processor special token %q undefined", ErrInvalidModel, st.ID)
		}
		for _, id := range spec.IDs {
			if id < 0 || id >= t.hf.vocabSize {
				return fmt.Errorf("%w: post_processor id %d out of range", ErrInvalidModel, id)
			}
		}
		if seenA {
			t.suffix = append(t.suffix, spec.IDs...)
		} else {
			t.prefix = append(t.prefix, spec.IDs...)
		}
	}
	return nil
}

func parseHFNormalizer(raw json.RawMessage) ([]hfNormalizer, error) {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: normalizer: %w", ErrInvalidModel, err)
	}
	switch c.Type {
	case "Sequence":
		var out []hfNormalizer
		for _, r := range c.Normalizers {
			n, err := parseHFNormalizer(r)
			if err != nil {
				return nil, err
			}
			out = append(out, n...)
		}
		return out, nil
	case "Precompiled":
		if c.PrecompiledCharsmap == nil || *c.PrecompiledCharsmap == "" {
			return nil, nil // tokenizers treats an empty charsmap as the identity
		}
		blob, err := base64.StdEncoding.DecodeString(*c.PrecompiledCharsmap)
		if err != nil {
			return nil, fmt.Errorf("%w: precompiled_charsmap: %w", ErrInvalidModel, err)
		}
		cm, err := parseCharsmap(blob)
		if err != nil {
			return nil, err
		}
		return []hfNormalizer{cm.apply}, nil
	case "Strip":
		left, right := c.StripLeft == nil || *c.StripLeft, c.StripRight == nil || *c.StripRight
		return []hfNormalizer{func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}}, nil
	case "Replace":
		content := c.Content
		switch {
		case c.Pattern.String != nil:
			pat := *c.Pattern.String
			if pat == "" {
				return nil, fmt.Errorf("%w: Replace with an empty pattern", ErrInvalidModel)
			}
			return []hfNormalizer{func(s string) string { return strings.ReplaceAll(s, pat, content) }}, nil
		case c.Pattern.Regex != nil:
			re, err := regexp.Compile(*c.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("%w: Replace regex %q: %w", ErrUnsupported, *c.Pattern.Regex, err)
			}
			return []hfNormalizer{func(s string) string { return re.ReplaceAllLiteralString(s, content) }}, nil
		}
		return nil, fmt.Errorf("%w: Replace without a pattern", ErrInvalidModel)
	case "Prepend":
		pre := c.Prepend
		return []hfNormalizer{func(s string) string {
			if s == "" {
				return s
			}
			return pre + s
		}}, nil
	}
	return nil, fmt.Errorf("%w: normalizer %q", ErrUnsupported, c.Type)
}

// apply is tokenizers' Precompiled normalizer (spm_precompiled), which differs from
// sentencepiece's: it walks extended grapheme clusters; a cluster under 6 bytes with a rule
// matching a prefix of it is replaced whole by the shortest such rule's output; otherwise each
// character is replaced by its own rule, if any. So compositions across clusters or inside
// clusters of 6 bytes or more (half-width katakana with a voiced mark, Hangul jamo) are not
// applied, where sentencepiece applies them.
func (c *charsmap) apply(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		g := s[:nextGrapheme(s)]
		s = s[len(g):]
		if len(g) < 6 {
			if repl, ok := c.shortest(g); ok {
				b.WriteString(repl)
				continue
			}
		}
		for g != "" {
			_, size := utf8.DecodeRuneInString(g)
			if repl, ok := c.shortest(g[:size]); ok {
				b.WriteString(repl)
			} else {
				b.WriteString(g[:size])
			}
			g = g[size:]
		}
	}
	return b.String()
}

func (h *hfPipeline) parsePreTokenizer(raw json.RawMessage, top bool) error {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%w: pre_tokenizer: %w", ErrInvalidModel, err)
	}
	switch c.Type {
	case "Sequence":
		if !top {
			return fmt.Errorf("%w: nested pre_tokenizer Sequence", ErrUnsupported)
		}
		for _, r := range c.Pretokenizers {
			if err := h.parsePreTokenizer(r, false); err != nil {
				return err
			}
		}
		return nil
	case "WhitespaceSplit":
		if h.metaspace != nil {
			return fmt.Errorf("%w: WhitespaceSplit after Metaspace", ErrUnsupported)
		}
		h.whitespaceSplit = true
		return nil
	case "Metaspace":
		m, err := parseMetaspace(c)
		if err != nil {
			return err
		}
		h.metaspace = m
		return nil
	}
	return fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, c.Type)
}

func parseMetaspace(c hfComponent) (*hfMetaspace, error) {
	m := &hfMetaspace{replacement: c.Replacement, prepend: "always", split: true}
	if utf8.RuneCountInString(m.replacement) != 1 {
		return nil, fmt.Errorf("%w: Metaspace replacement %q is not one character", ErrInvalidModel, c.Replacement)
	}
	switch {
	case c.PrependScheme != "":
		m.prepend = c.PrependScheme
	case c.AddPrefixSpace != nil && !*c.AddPrefixSpace:
		m.prepend = "never"
	}
	if m.prepend != "always" && m.prepend != "first" && m.prepend != "never" {
		return nil, fmt.Errorf("%w: Metaspace prepend_scheme %q", ErrInvalidModel, m.prepend)
	}
	if c.Split != nil {
		m.split = *c.Split
	}
	return m, nil
}

func parseHFDecoder(raw json.RawMessage) ([]hfDecoder, error) {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: decoder: %w", ErrInvalidModel, err)
	}
	switch c.Type {
	case "Sequence":
		var out []hfDecoder
		for _, r := range c.Decoders {
			d, err := parseHFDecoder(r)
			if err != nil {
				return nil, err
			}
			out = append(out, d...)
		}
		return out, nil
	case "Metaspace":
		m, err := parseMetaspace(c)
		if err != nil {
			return nil, err
		}
		return []hfDecoder{func(toks []string) []string {
			for i, tok := range toks {
				if i == 0 && m.prepend != "never" {
					toks[i] = strings.ReplaceAll(tok, m.replacement, "")
				} else {
					toks[i] = strings.ReplaceAll(tok, m.replacement, " ")
				}
			}
			return toks
		}}, nil
	case "Replace":
		if c.Pattern.String == nil || *c.Pattern.String == "" {
			return nil, fmt.Errorf("%w: Replace decoder without a string pattern", ErrUnsupported)
		}
		pat, content := *c.Pattern.String, c.Content
		return []hfDecoder{func(toks []string) []string {
			for i, tok := range toks {
				toks[i] = strings.ReplaceAll(tok, pat, content)
			}
			return toks
		}}, nil
	case "ByteFallback":
		return []hfDecoder{decodeByteFallback}, nil
	case "Fuse":
		return []hfDecoder{func(toks []string) []string { return []string{strings.Join(toks, "")} }}, nil
	case "Strip":
		content, start, stop := c.Content, c.Start, c.Stop
		if utf8.RuneCountInString(content) != 1 {
			return nil, fmt.Errorf("%w: Strip decoder content %q", ErrInvalidModel, content)
		}
		return []hfDecoder{func(toks []string) []string {
			for i, tok := range toks {
				for range start {
					var ok bool
					if tok, ok = strings.CutPrefix(tok, content); !ok {
						break
					}
				}
				for range stop {
					var ok bool
					if tok, ok = strings.CutSuffix(tok, content); !ok {
						break
					}
				}
				toks[i] = tok
			}
			return toks
		}}, nil
	}
	return nil, fmt.Errorf("%w: decoder %q", ErrUnsupported, c.Type)
}

// decodeByteFallback is tokenizers' ByteFallback decoder: a run of <0xXX> tokens becomes its
// bytes when they are valid UTF-8 as a whole, otherwise one U+FFFD per token.
func decodeByteFallback(toks []string) []string {
	out := toks[:0:0]
	var run []byte
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range n {
				out = append(out, "\uFFFD")
			}
		}
		run, n = run[:0], 0
	}
	for _, tok := range toks {
		if b, ok := pieceToByte(tok); ok {
			run = append(run, b)
			n++
			continue
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

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
