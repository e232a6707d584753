package clip

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const (
	startToken = "<|startoftext|>"
	endToken   = "<|endoftext|>"
	endOfWord  = "</w>"

	// numMerges is how many merge lines CLIP uses (lines 1..48894 of the merges file), as
	// openai/CLIP and Hugging Face's CLIPTokenizer both slice them.
	numMerges = 49152 - 256 - 2

	// maxCacheEntries bounds the per-word BPE cache; it is cleared when full.
	maxCacheEntries = 1 << 16
)

// Errors reported while loading a vocabulary.
var (
	// ErrBadVocab means the merges or vocabulary files are malformed or inconsistent.
	ErrBadVocab = errors.New("clip: malformed vocabulary")
)

type pair struct{ a, b string }

// Tokenizer is a CLIP byte-level BPE tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	encoder map[string]int
	decoder []string // id -> token; "" for ids the vocabulary lacks
	ranks   map[pair]int
	byteEnc [256]string
	byteDec map[rune]byte
	sot     int
	eot     int
	padID   int
	maxLen  int

	mu    sync.Mutex
	cache map[string][]int
}

// LoadBPEFile reads openai/CLIP's gzipped merges file (bpe_simple_vocab_16e6.txt.gz) and
// builds the vocabulary the way openai/CLIP does. The padding id is <|endoftext|>'s.
func LoadBPEFile(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("clip: open merges: %w", err)
	}
	defer f.Close()
	return NewFromBPE(f)
}

// NewFromBPE reads a gzipped bpe_simple_vocab file from r: a header line, then merges
// "a b" in rank order. The vocabulary is the 256 byte symbols, the same with "</w>", the
// merged pairs, then <|startoftext|> and <|endoftext|>.
func NewFromBPE(r io.Reader) (*Tokenizer, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("clip: gunzip merges: %w", err)
	}
	defer zr.Close()
	merges, err := readMerges(zr)
	if err != nil {
		return nil, err
	}
	t := newTokenizer()
	vocab := make([]string, 0, 512+len(merges)+2)
	for _, b := range byteOrder() {
		vocab = append(vocab, t.byteEnc[b])
	}
	for i := 0; i < 256; i++ {
		vocab = append(vocab, vocab[i]+endOfWord)
	}
	for _, m := range merges {
		vocab = append(vocab, m.a+m.b)
	}
	vocab = append(vocab, startToken, endToken)
	enc := make(map[string]int, len(vocab))
	for i, v := range vocab {
		enc[v] = i
	}
	if err := t.init(enc, merges); err != nil {
		return nil, err
	}
	t.padID = t.eot
	return t, nil
}

// LoadHFDir reads a Hugging Face CLIPTokenizer directory (tokenizer/ or tokenizer_2/ of an
// SDXL model): vocab.json and merges.txt, and, when present, tokenizer_config.json or
// special_tokens_map.json for the pad token (SDXL's tokenizer_2 pads with "!", id 0) and
// model_max_length.
func LoadHFDir(dir string) (*Tokenizer, error) {
	vb, err := os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, fmt.Errorf("clip: read vocab: %w", err)
	}
	var enc map[string]int
	if err := json.Unmarshal(vb, &enc); err != nil {
		return nil, fmt.Errorf("clip: parse vocab.json: %w: %w", ErrBadVocab, err)
	}
	mf, err := os.Open(filepath.Join(dir, "merges.txt"))
	if err != nil {
		return nil, fmt.Errorf("clip: open merges: %w", err)
	}
	defer mf.Close()
	merges, err := readMerges(mf)
	if err != nil {
		return nil, err
	}
	t := newTokenizer()
	if err := t.init(enc, merges); err != nil {
		return nil, err
	}
	t.padID = t.eot
	for _, name := range []string{"tokenizer_config.json", "special_tokens_map.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("clip: read %s: %w", name, err)
		}
		if err := t.applyConfig(b); err != nil {
			return nil, fmt.Errorf("clip: %s: %w", name, err)
		}
		break
	}
	return t, nil
}

// applyConfig takes pad_token and model_max_length from a tokenizer_config.json or
// special_tokens_map.json body.
func (t *Tokenizer) applyConfig(b []byte) error {
	var cfg struct {
		PadToken       json.RawMessage `json:"pad_token"`
		ModelMaxLength *float64        `json:"model_max_length"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%w: %w", ErrBadVocab, err)
	}
	if len(cfg.PadToken) > 0 && string(cfg.PadToken) != "null" {
		var pad string
		if err := json.Unmarshal(cfg.PadToken, &pad); err != nil {
			var obj struct {
				Content string `json:"content"`
			}
			if err := json.Unmarshal(cfg.PadToken, &obj); err != nil {
				return fmt.Errorf("%w: pad_token: %w", ErrBadVocab, err)
			}
			pad = obj.Content
		}
		id, ok := t.encoder[pad]
		if !ok {
			return fmt.Errorf("%w: pad_token %q not in vocabulary", ErrBadVocab, pad)
		}
		t.padID = id
	}
	if cfg.ModelMaxLength != nil && *cfg.ModelMaxLength >= 3 && *cfg.ModelMaxLength <= 1<<16 {
		t.maxLen = int(*cfg.ModelMaxLength)
	}
	return nil
}

func readMerges(r io.Reader) ([]pair, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	merges := make([]pair, 0, numMerges)
	line := 0
	for sc.Scan() && len(merges) < numMerges {
		line++
		if line == 1 {
			continue // header, e.g. "#version: 0.2"
		}
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: merges line %d: %q", ErrBadVocab, line, sc.Text())
		}
		merges = append(merges, pair{fields[0], fields[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("clip: read merges: %w", err)
	}
	if len(merges) == 0 {
		return nil, fmt.Errorf("%w: no merges", ErrBadVocab)
	}
	return merges, nil
}

// byteOrder is the order of GPT-2's bytes_to_unicode table: printable Latin-1 bytes first,
// then the rest.
func byteOrder() []int {
	order := make([]int, 0, 256)
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
	}
	for b := 0; b < 256; b++ {
		if printable(b) {
			order = append(order, b)
		}
	}
	for b := 0; b < 256; b++ {
		if !printable(b) {
			order = append(order, b)
		}
	}
	return order
}

func newTokenizer() *Tokenizer {
	t := &Tokenizer{byteDec: make(map[rune]byte, 256), maxLen: ContextLength, cache: make(map[string][]int)}
	n := 0
	for _, b := range byteOrder() {
		r := rune(b)
		if !((b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)) {
			r = rune(256 + n)
			n++
		}
		t.byteEnc[b] = string(r)
		t.byteDec[r] = byte(b)
	}
	return t
}

func (t *Tokenizer) init(enc map[string]int, merges []pair) error {
	t.encoder = enc
	maxID := -1
	for k, v := range enc {
		if v < 0 || v >= 1<<24 {
			return fmt.Errorf("%w: id %d of %q", ErrBadVocab, v, k)
		}
		maxID = max(maxID, v)
	}
	t.decoder = make([]string, maxID+1)
	for k, v := range enc {
		t.decoder[v] = k
	}
	t.ranks = make(map[pair]int, len(merges))
	for i, m := range merges {
		if _, dup := t.ranks[m]; !dup {
			t.ranks[m] = i
		}
	}
	var ok bool
	if t.sot, ok = enc[startToken]; !ok {
		return fmt.Errorf("%w: %s missing", ErrBadVocab, startToken)
	}
	if t.eot, ok = enc[endToken]; !ok {
		return fmt.Errorf("%w: %s missing", ErrBadVocab, endToken)
	}
	for _, m := range merges {
		if _, ok := enc[m.a+m.b]; !ok {
			return fmt.Errorf("%w: merge result %q missing", ErrBadVocab, m.a+m.b)
		}
	}
	for b := 0; b < 256; b++ {
		if _, ok := enc[t.byteEnc[b]]; !ok {
			return fmt.Errorf("%w: byte symbol %q missing", ErrBadVocab, t.byteEnc[b])
		}
		if _, ok := enc[t.byteEnc[b]+endOfWord]; !ok {
			return fmt.Errorf("%w: byte symbol %q missing", ErrBadVocab, t.byteEnc[b]+endOfWord)
		}
	}
	return nil
}

// StartID is the id of <|startoftext|> (49406 in CLIP's vocabulary).
func (t *Tokenizer) StartID() int { return t.sot }

// EndID is the id of <|endoftext|> (49407 in CLIP's vocabulary).
func (t *Tokenizer) EndID() int { return t.eot }

// PadID is the padding id from the tokenizer's configuration: <|endoftext|> unless a Hugging
// Face config names another pad token.
func (t *Tokenizer) PadID() int { return t.padID }

// MaxLength is the encoder's sequence length (model_max_length, 77 by default).
func (t *Tokenizer) MaxLength() int { return t.maxLen }

// VocabSize is the number of entries in the vocabulary.
func (t *Tokenizer) VocabSize() int { return len(t.encoder) }

// Encode tokenizes text into raw BPE ids, without start and end tokens, exactly as
// openai/CLIP's SimpleTokenizer.encode.
func (t *Tokenizer) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+4)
	var buf strings.Builder
	splitWords(cleanText(text), func(word string) {
		ids = append(ids, t.wordIDs(word, &buf)...)
	})
	return ids
}

// Tokens returns the vocabulary strings of ids (byte-level symbols, "</w>" marking a word end).
// Unknown ids give "".
func (t *Tokenizer) Tokens(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.token(id)
	}
	return out
}

// Decode turns ids back into text as openai/CLIP does: symbols joined, bytes restored
// (invalid UTF-8 replaced), "</w>" becoming a space.
func (t *Tokenizer) Decode(ids []int) string {
	var bytes []byte
	for _, id := range ids {
		for _, r := range t.token(id) {
			if b, ok := t.byteDec[r]; ok {
				bytes = append(bytes, b)
			} else {
				bytes = append(bytes, string(r)...)
			}
		}
	}
	s := strings.ToValidUTF8(string(bytes), "\ufffd")
	return strings.ReplaceAll(s, endOfWord, " ")
}

func (t *Tokenizer) token(id int) string {
	if id < 0 || id >= len(t.decoder) {
		return ""
	}
	return t.decoder[id]
}

// wordIDs maps one pre-tokenized word to ids, through the cache.
func (t *Tokenizer) wordIDs(word string, buf *strings.Builder) []int {
	if word == startToken {
		return []int{t.sot}
	}
	if word == endToken {
		return []int{t.eot}
	}
	t.mu.Lock()
	ids, ok := t.cache[word]
	t.mu.Unlock()
	if ok {
		return ids
	}
	buf.Reset()
	for i := 0; i < len(word); i++ {
		buf.WriteString(t.byteEnc[word[i]])
	}
	syms := t.bpe(buf.String())
	ids = make([]int, len(syms))
	for i, s := range syms {
		ids[i] = t.encoder[s] // every symbol is a byte symbol or a merge result: present
	}
	t.mu.Lock()
	if len(t.cache) >= maxCacheEntries {
		clear(t.cache)
	}
	t.cache[word] = ids
	t.mu.Unlock()
	return ids
}

// bpe merges the symbols of a byte-encoded word, lowest merge rank first, every
// non-overlapping occurrence left to right, until no ranked pair remains.
func (t *Tokenizer) bpe(token string) []string {
	syms := make([]string, 0, len(token))
	for _, r := range token {
		syms = append(syms, string(r))
	}
	syms[len(syms)-1] += endOfWord
	for len(syms) > 1 {
		best, bestRank := pair{}, -1
		for i := 0; i+1 < len(syms); i++ {
			p := pair{syms[i], syms[i+1]}
			if r, ok := t.ranks[p]; ok && (bestRank < 0 || r < bestRank) {
				best, bestRank = p, r
			}
		}
		if bestRank < 0 {
			break
		}
		out := make([]string, 0, len(syms))
		for i := 0; i < len(syms); {
			if i+1 < len(syms) && syms[i] == best.a && syms[i+1] == best.b {
				out = append(out, best.a+best.b)
				i += 2
			} else {
				out = append(out, syms[i])
				i++
			}
		}
		syms = out
	}
	return syms
}
