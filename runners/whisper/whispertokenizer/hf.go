package whispertokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// ErrBadHFTokenizer reports a tokenizer.json this package cannot take its ranks from.
var ErrBadHFTokenizer = errors.New("unusable Hugging Face tokenizer.json")

// hfTokenizerFile is the part of a Hugging Face tokenizer.json the ranks come from.
type hfTokenizerFile struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Model struct {
		Type  string         `json:"type"`
		Vocab map[string]int `json:"vocab"`
	} `json:"model"`
}

// LoadHFTokenizerFile reads the ranks of a Hugging Face Whisper tokenizer.json: the
// byte-level BPE vocabulary (model.vocab, tokens spelt in GPT-2's byte-to-unicode alphabet)
// with each token's id as its rank, which is how the Hugging Face Whisper tokenizers were
// converted from openai/whisper's tiktoken files. Special tokens (added_tokens marked special,
// and "<|...|>" vocabulary entries such as <|endoftext|>) are left out: the special tokens
// are this package's own. The remaining ids must be 0..n-1. The merges list is not read:
// merging by rank is what tiktoken does, and for a converted vocabulary the merge order is
// the rank order.
func LoadHFTokenizerFile(path string) (*Ranks, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("open tokenizer.json: %w", err)
	}
	var f hfTokenizerFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadHFTokenizer, path, err)
	}
	if f.Model.Type != "BPE" || len(f.Model.Vocab) == 0 {
		return nil, fmt.Errorf("%w: %s: model type %q with %d tokens, want a byte-level BPE vocabulary", ErrBadHFTokenizer, path, f.Model.Type, len(f.Model.Vocab))
	}
	special := make(map[string]bool, len(f.AddedTokens))
	for _, t := range f.AddedTokens {
		if t.Special {
			special[t.Content] = true
		}
	}
	unicodeToByte := byteLevelDecoder()
	type entry struct {
		tok  []byte
		rank int
	}
	entries := make([]entry, 0, len(f.Model.Vocab))
	for s, id := range f.Model.Vocab {
		if special[s] || (strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") && len(s) > 4) {
			continue
		}
		b := make([]byte, 0, len(s))
		for _, r := range s {
			v, ok := unicodeToByte[r]
			if !ok {
				return nil, fmt.Errorf("%w: %s: token %q (id %d) is not in the byte-level alphabet", ErrBadHFTokenizer, path, s, id)
			}
			b = append(b, v)
		}
		entries = append(entries, entry{b, id})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rank < entries[j].rank })
	// The tiktoken form, so that LoadRanks checks density, duplicates and the 256 bytes.
	var buf bytes.Buffer
	for _, e := range entries {
		if len(e.tok) == 0 {
			buf.WriteByte('=') // multilingual.tiktoken's empty token (rank 50256), as tiktoken spells it
		} else {
			buf.WriteString(base64.StdEncoding.EncodeToString(e.tok))
		}
		buf.WriteByte(' ')
		buf.WriteString(strconv.Itoa(e.rank))
		buf.WriteByte('\n')
	}
	r, err := LoadRanks(&buf)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadHFTokenizer, path, err)
	}
	return r, nil
}

// byteLevelDecoder inverts GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for
// themselves, the other 68 bytes for U+0100 onwards in byte order.
func byteLevelDecoder() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}
