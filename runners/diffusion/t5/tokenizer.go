package t5

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Sentinel errors of Load.
var (
	// ErrInvalidModel reports a model file that is not a well-formed spiece.model or
	// tokenizer.json, or whose vocabulary is inconsistent (no unknown piece, duplicate pieces,
	// byte_fallback without the 256 byte pieces, ...).
	ErrInvalidModel = errors.New("t5: invalid tokenizer model")
	// ErrUnsupported reports a well-formed model this package does not implement: a model type
	// other than Unigram, or a tokenizer.json component outside the ones T5 uses.
	ErrUnsupported = errors.New("t5: unsupported tokenizer model")
	// ErrNotFound reports a directory holding neither tokenizer.json nor spiece.model.
	ErrNotFound = errors.New("t5: no tokenizer.json or spiece.model")
)

// MaxLength is the T5 sequence length of Stable Diffusion 3.5 (diffusers'
// max_sequence_length default for tokenizer_3).
const MaxLength = 256

// Tokenizer is a loaded Unigram tokenizer. It is immutable and safe for concurrent use.
type Tokenizer struct {
	pieces []piece
	model  unigram
	// byteID maps a byte to its <0xXX> piece id, -1 when the model has none.
	byteID [256]int32
	// byteOf maps a piece id to its byte value for BYTE pieces, -1 otherwise.
	byteOf []int16
	// byteFallback decomposes unknown characters into byte pieces.
	byteFallback bool

	unkID, eosID, padID int
	// prefix and suffix are the ids Encode puts around the text's ids ([] and [eos] for T5).
	prefix, suffix []int

	// sentencepiece (spiece.model) pipeline.
	norm         *spmNormalizer
	denorm       *spmNormalizer
	unkSurface   string
	decodeStrip  bool // strip the leading "▁" of the first piece (add_dummy_prefix || remove_extra)
	decodeStripR bool // keep stripping while nothing was written (remove_extra_whitespaces)

	// char is the CHAR model's segmentation (model_type 4, e.g. SpeechT5's spm_char.model);
	// nil for Unigram.
	char *charModel

	// Hugging Face tokenizers (tokenizer.json) pipeline; nil for spiece.model.
	hf *hfPipeline

	scratch sync.Pool // *encodeScratch
}

type encodeScratch struct {
	best []bestNode
	segs []segment
}

// Load reads a T5 tokenizer from path: an spiece.model (sentencepiece ModelProto) or a Hugging
// Face tokenizer.json file, or a directory holding one of them. A directory with both loads
// tokenizer.json, which is what diffusers' T5TokenizerFast reads. A file is taken as JSON when
// its first non-space byte is '{'.
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("t5: load %s: %w", path, err)
	}
	if st.IsDir() {
		found := ""
		for _, name := range []string{"tokenizer.json", "spiece.model"} {
			if _, err := os.Stat(filepath.Join(path, name)); err == nil {
				found = filepath.Join(path, name)
				break
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("t5: load %s: %w", path, err)
			}
		}
		if found == "" {
			return nil, fmt.Errorf("%w in %s", ErrNotFound, path)
		}
		path = found
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("t5: load %s: %w", path, err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("t5: load %s: %w", path, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from the bytes of an spiece.model or a tokenizer.json.
func Parse(data []byte) (*Tokenizer, error) {
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		return parseHFJSON(data)
	}
	return parseSentencePiece(data)
}

// parseSentencePiece builds a Tokenizer from a serialized sentencepiece ModelProto.
func parseSentencePiece(data []byte) (*Tokenizer, error) {
	m, err := parseModelProto(data)
	if err != nil {
		return nil, err
	}
	if m.modelType != modelUnigram && m.modelType != modelChar {
		return nil, fmt.Errorf("%w: sentencepiece model_type %d (only UNIGRAM=1 and CHAR=4)", ErrUnsupported, m.modelType)
	}
	if len(m.pieces) == 0 {
		return nil, fmt.Errorf("%w: no pieces", ErrInvalidModel)
	}
	t := &Tokenizer{pieces: m.pieces, byteFallback: m.byteFallback, unkSurface: m.unkSurface}
	if err := t.indexPieces(); err != nil {
		return nil, err
	}
	unk := -1
	var keys, userKeys []trieKey
	seen := make(map[string]struct{}, len(m.pieces))
	for i, p := range m.pieces {
		if p.text == "" {
			return nil, fmt.Errorf("%w: piece %d is empty", ErrInvalidModel, i)
		}
		if _, dup := seen[p.text]; dup {
			return nil, fmt.Errorf("%w: piece %q is defined twice", ErrInvalidModel, p.text)
		}
		seen[p.text] = struct{}{}
		switch p.typ {
		case typeNormal, typeUserDefined, typeUnused:
			keys = append(keys, trieKey{p.text, int32(i)})
			if p.typ == typeUserDefined {
				userKeys = append(userKeys, trieKey{p.text, int32(i)})
			}
		case typeUnknown:
			if unk >= 0 {
				return nil, fmt.Errorf("%w: two unknown pieces (%d and %d)", ErrInvalidModel, unk, i)
			}
			unk = i
		case typeByte:
			if !m.byteFallback {
				return nil, fmt.Errorf("%w: byte piece %q without byte_fallback", ErrInvalidModel, p.text)
			}
		case typeControl:
		default:
			return nil, fmt.Errorf("%w: piece %q has type %d", ErrInvalidModel, p.text, p.typ)
		}
	}
	if unk < 0 {
		return nil, fmt.Errorf("%w: no unknown piece", ErrInvalidModel)
	}
	if m.byteFallback {
		for b, id := range t.byteID {
			if id < 0 {
				return nil, fmt.Errorf("%w: byte_fallback without the piece <0x%02X>", ErrInvalidModel, b)
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no normal pieces", ErrInvalidModel)
	}
	t.unkID = unk
	minScore, maxScore := float32(math32Max), float32(math32MinNormal)
	for _, p := range m.pieces {
		if p.typ == typeNormal {
			minScore, maxScore = min(minScore, p.score), max(maxScore, p.score)
		}
	}
	t.model = unigram{pieces: m.pieces, trie: newTrie(keys), unkID: int32(unk),
		minScore: float64(minScore), maxScore: maxScore}
	if m.modelType == modelChar {
		t.char = newCharModel(m.pieces, userKeys, int32(unk))
	}

	t.norm = &spmNormalizer{
		addDummyPrefix: m.normalizer.addDummyPrefix, removeExtra: m.normalizer.removeExtraSpaces,
		escape: m.normalizer.escapeWhitespaces, wsSuffix: m.wsAsSuffix,
	}
	if len(userKeys) > 0 {
		t.norm.user = newTrie(userKeys)
	}
	if len(m.normalizer.charsmap) > 0 {
		if t.norm.cm, err = parseCharsmap(m.normalizer.charsmap); err != nil {
			return nil, err
		}
	}
	if m.denormalizer.present && len(m.denormalizer.charsmap) > 0 {
		t.denorm = &spmNormalizer{addDummyPrefix: m.denormalizer.addDummyPrefix,
			removeExtra: m.denormalizer.removeExtraSpaces, escape: m.denormalizer.escapeWhitespaces}
		if t.denorm.cm, err = parseCharsmap(m.denormalizer.charsmap); err != nil {
			return nil, err
		}
	}
	t.decodeStrip = m.normalizer.addDummyPrefix || m.normalizer.removeExtraSpaces
	t.decodeStripR = m.normalizer.removeExtraSpaces

	t.eosID, t.padID = -1, 0
	if id := int(m.eosID); id >= 0 && id < len(m.pieces) {
		t.eosID = id
		t.suffix = []int{id}
	}
	if id := int(m.padID); id >= 0 && id < len(m.pieces) {
		t.padID = id
	}
	t.initScratch()
	return t, nil
}

// Largest finite float32 and smallest normal float32 (C's FLT_MAX and FLT_MIN).
const (
	math32Max       = 3.40282346638528859811704183484516925440e+38
	math32MinNormal = 1.17549435082228750796873653722224568e-38
)

// indexPieces fills byteID and byteOf from the BYTE pieces.
func (t *Tokenizer) indexPieces() error {
	for i := range t.byteID {
		t.byteID[i] = -1
	}
	t.byteOf = make([]int16, len(t.pieces))
	for i, p := range t.pieces {
		t.byteOf[i] = -1
		if p.typ != typeByte {
			continue
		}
		b, ok := pieceToByte(p.text)
		if !ok {
			return fmt.Errorf("%w: byte piece %q is not <0xXX>", ErrInvalidModel, p.text)
		}
		t.byteOf[i] = int16(b)
		if t.byteID[b] < 0 {
			t.byteID[b] = int32(i)
		}
	}
	return nil
}

func (t *Tokenizer) initScratch() {
	t.scratch.New = func() any { return &encodeScratch{} }
}

// pieceToByte parses sentencepiece's byte piece spelling "<0xXX>" (upper-case hex).
func pieceToByte(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	hex := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	hi, ok1 := hex(s[3])
	lo, ok2 := hex(s[4])
	return hi<<4 | lo, ok1 && ok2
}

// VocabSize is the number of ids: the model's pieces (plus, for tokenizer.json, added tokens
// whose ids lie beyond them).
func (t *Tokenizer) VocabSize() int {
	if t.hf != nil {
		return t.hf.vocabSize
	}
	return len(t.pieces)
}

// EOSID is the id of </s> that Encode appends, or -1 when the model has none.
func (t *Tokenizer) EOSID() int { return t.eosID }

// PadID is the id EncodePadded pads with: the model's pad id (<pad>, 0 for T5), or 0 when the
// model defines none.
func (t *Tokenizer) PadID() int { return t.padID }

// UnkID is the id of the unknown piece.
func (t *Tokenizer) UnkID() int { return t.unkID }

// Encode tokenizes text into ids and appends </s> (the model's eos), as T5's tokenizer does with
// add_special_tokens. Invalid UTF-8 bytes are read as U+FFFD.
func (t *Tokenizer) Encode(text string) []int {
	ids := make([]int, 0, len(text)/2+len(t.prefix)+len(t.suffix)+1)
	ids = append(ids, t.prefix...)
	ids = t.appendIDs(ids, text)
	return append(ids, t.suffix...)
}

// EncodePadded returns Encode(text) cut or padded to exactly maxLen ids, and the attention mask
// (1 for real ids, 0 for padding). As with Hugging Face's truncation=True, a cut keeps the
// trailing </s>: the text's ids are cut to maxLen-1 and </s> follows. Padding uses PadID().
// maxLen <= 0 means no cut and no padding.
func (t *Tokenizer) EncodePadded(text string, maxLen int) (ids []int, mask []int) {
	ids = t.Encode(text)
	if maxLen <= 0 {
		mask = make([]int, len(ids))
		for i := range mask {
			mask[i] = 1
		}
		return ids, mask
	}
	if len(ids) > maxLen {
		keepSuffix := min(len(t.suffix), maxLen)
		cut := ids[:maxLen-keepSuffix]
		cut = append(cut, t.suffix[len(t.suffix)-keepSuffix:]...)
		ids = cut
	}
	n := len(ids)
	out := make([]int, maxLen)
	mask = make([]int, maxLen)
	copy(out, ids)
	for i := range maxLen {
		if i < n {
			mask[i] = 1
		} else {
			out[i] = t.padID
		}
	}
	return out, mask
}

// appendIDs appends the ids of text, without special tokens, to dst.
func (t *Tokenizer) appendIDs(dst []int, text string) []int {
	sc := t.scratch.Get().(*encodeScratch)
	defer t.scratch.Put(sc)
	if t.hf != nil {
		return t.hf.appendIDs(t, sc, dst, text)
	}
	return t.appendWordIDs(sc, dst, t.norm.normalize(text))
}

// appendWordIDs segments normalized text and appends its ids: runs of unknown characters
// become one unknown id, or their bytes' <0xXX> ids under byte fallback.
func (t *Tokenizer) appendWordIDs(sc *encodeScratch, dst []int, normalized string) []int {
	if t.char != nil {
		return t.char.appendIDs(dst, normalized)
	}
	sc.segs, sc.best = t.model.viterbi(normalized, sc.best, sc.segs[:0])
	prevUnk := false
	for _, sg := range sc.segs {
		isUnk := int(sg.id) == t.unkID
		switch {
		case isUnk && t.byteFallback && t.hasAllBytes(normalized[sg.start:sg.end]):
			for i := sg.start; i < sg.end; i++ {
				dst = append(dst, int(t.byteID[normalized[i]]))
			}
		case isUnk && prevUnk:
			// Merged into the previous unknown id.
		default:
			dst = append(dst, int(sg.id))
		}
		prevUnk = isUnk
	}
	return dst
}

func (t *Tokenizer) hasAllBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if t.byteID[s[i]] < 0 {
			return false
		}
	}
	return true
}

// Decode turns ids back into text. Ids outside [0, VocabSize()) are skipped (sentencepiece
// refuses the whole call instead).
func (t *Tokenizer) Decode(ids []int) string {
	if t.hf != nil {
		return t.hf.decode(t, ids)
	}
	var text strings.Builder
	var run []byte
	flush := func() {
		for len(run) > 0 {
			if n := validUTF8Prefix(run); n > 0 {
				text.Write(run[:n])
				run = run[n:]
			} else {
				text.WriteString("\uFFFD")
				run = run[1:]
			}
		}
	}
	isBosWS, bosWSSeen := true, false
	for _, id := range ids {
		if id < 0 || id >= len(t.pieces) {
			continue
		}
		if b := t.byteOf[id]; b >= 0 {
			run = append(run, byte(b))
			continue
		}
		flush()
		if bosWSSeen || text.Len() > 0 {
			isBosWS = false
		}
		p := t.pieces[id]
		switch p.typ {
		case typeControl:
			bosWSSeen = false
		case typeUnknown:
			text.WriteString(t.unkSurface)
			bosWSSeen = false
		default:
			s := p.text
			bosWSSeen = false
			if isBosWS && t.decodeStrip {
				var ok bool
				s, ok = strings.CutPrefix(s, spaceSymbol)
				bosWSSeen = ok && !t.decodeStripR
			}
			text.WriteString(strings.ReplaceAll(s, spaceSymbol, " "))
		}
	}
	flush()
	if t.denorm != nil {
		return t.denorm.normalize(text.String())
	}
	return text.String()
}
