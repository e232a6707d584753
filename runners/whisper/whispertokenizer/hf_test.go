package whispertokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// byteLevelEncoder is GPT-2's bytes_to_unicode, written out as the Python does it.
func byteLevelEncoder() map[byte]rune {
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := 0xa1; b <= 0xac; b++ {
		bs = append(bs, b)
	}
	for b := 0xae; b <= 0xff; b++ {
		bs = append(bs, b)
	}
	cs := append([]int(nil), bs...)
	in := map[int]bool{}
	for _, b := range bs {
		in[b] = true
	}
	n := 0
	for b := range 256 {
		if !in[b] {
			bs = append(bs, b)
			cs = append(cs, 256+n)
			n++
		}
	}
	m := map[byte]rune{}
	for i, b := range bs {
		m[byte(b)] = rune(cs[i])
	}
	return m
}

// writeHFTokenizer writes ranks as a Hugging Face tokenizer.json (vocab with <|endoftext|>,
// special added tokens) and returns its path.
func writeHFTokenizer(t *testing.T, r *Ranks, edit func(map[string]any)) string {
	t.Helper()
	enc := byteLevelEncoder()
	vocab := make(map[string]int, r.Len()+1)
	for id, tok := range r.dec {
		s := make([]rune, len(tok))
		for i, b := range tok {
			s[i] = enc[b]
		}
		vocab[string(s)] = id
	}
	vocab["<|endoftext|>"] = r.Len()
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": r.Len(), "content": "<|endoftext|>", "special": true},
			{"id": r.Len() + 1, "content": "<|startoftranscript|>", "special": true},
		},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
	}
	if edit != nil {
		edit(doc)
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// TestHFTokenizerMatchesTiktoken: the ranks read back from a tokenizer.json spelling of
// multilingual.tiktoken encode the golden sentences to the golden ids.
func TestHFTokenizerMatchesTiktoken(t *testing.T) {
	ranks := loadRanks(t, "multilingual.tiktoken")
	hf, err := LoadHFTokenizerFile(writeHFTokenizer(t, ranks, nil))
	require.NoError(t, err)
	require.Equal(t, ranks.Len(), hf.Len())
	require.Equal(t, ranks.dec, hf.dec)
	tok, err := New(hf, Config{Multilingual: true, NumLanguages: 100})
	require.NoError(t, err)
	g := loadGolden(t)
	for _, s := range g.Cases {
		require.Equal(t, s.MultilingualIDs, tok.Encode(s.Text), "%q", s.Text)
	}
}

func TestHFTokenizerErrors(t *testing.T) {
	ranks := loadRanks(t, "multilingual.tiktoken")
	tests := []struct {
		name string
		edit func(map[string]any)
	}{
		{"not BPE", func(d map[string]any) { d["model"].(map[string]any)["type"] = "WordPiece" }},
		{"a gap in the ids", func(d map[string]any) {
			v := d["model"].(map[string]any)["vocab"].(map[string]int)
			for s, id := range v {
				if id == 1000 {
					delete(v, s)
				}
			}
		}},
		{"outside the byte alphabet", func(d map[string]any) {
			d["model"].(map[string]any)["vocab"].(map[string]int)["a b"] = ranks.Len() + 5
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadHFTokenizerFile(writeHFTokenizer(t, ranks, tc.edit))
			require.ErrorIs(t, err, ErrBadHFTokenizer)
		})
	}
	_, err := LoadHFTokenizerFile(filepath.Join(t.TempDir(), "absent.json"))
	require.Error(t, err)
}
