package t5

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

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
