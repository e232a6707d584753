package t5

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// goldenDir returns the T5 goldens of scripts/gen-t5-goldens.sh (see internal/shareddata), or skips.
func goldenDir(t testing.TB) string {
	t.Helper()
	return shareddata.Dir(t, "t5", "run scripts/gen-t5-goldens.sh to make it")
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// goldenTokenizer loads a model file from the golden directory once per test binary.
func goldenTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	path := filepath.Join(goldenDir(t), name)
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tok, ok := loaded[path]; ok {
		return tok
	}
	tok, err := Load(path)
	require.NoError(t, err)
	loaded[path] = tok
	return tok
}

type spmGolden struct {
	Model       string `json:"model"`
	VocabSize   int    `json:"vocab_size"`
	UnkID       int    `json:"unk_id"`
	EOSID       int    `json:"eos_id"`
	PadID       int    `json:"pad_id"`
	ByteFallbck bool   `json:"byte_fallback"`
	Cases       []struct {
		Text    string   `json:"text"`
		IDs     []int    `json:"ids"`
		Pieces  []string `json:"pieces"`
		Decoded string   `json:"decoded"`
	} `json:"cases"`
	Decodes []struct {
		IDs     []int  `json:"ids"`
		Decoded string `json:"decoded"`
	} `json:"decodes"`
}

type hfGolden struct {
	Tokenizer string `json:"tokenizer"`
	Cases     []struct {
		Text    string   `json:"text"`
		IDs     []int    `json:"ids"`
		Tokens  []string `json:"tokens"`
		Decoded string   `json:"decoded"`
	} `json:"cases"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

var spmModels = []string{"test_model", "test_ja_model", "bf_model"}

// TestSentencePieceGoldens checks Encode and Decode of spiece.model files against Debian's
// python3-sentencepiece on every golden text.
func TestSentencePieceGoldens(t *testing.T) {
	dir := goldenDir(t)
	for _, model := range spmModels {
		t.Run(model, func(t *testing.T) {
			var g spmGolden
			readJSON(t, filepath.Join(dir, "spm_"+model+".json"), &g)
			tok := goldenTokenizer(t, g.Model)
			require.Equal(t, g.VocabSize, tok.VocabSize())
			require.Equal(t, g.UnkID, tok.UnkID())
			require.Equal(t, g.EOSID, tok.EOSID())
			require.Equal(t, max(g.PadID, 0), tok.PadID())
			require.NotEmpty(t, g.Cases)
			for _, c := range g.Cases {
				want := append(append([]int{}, c.IDs...), g.EOSID)
				require.Equal(t, want, tok.Encode(c.Text), "Encode(%q): want pieces %q", c.Text, c.Pieces)
				require.Equal(t, c.Decoded, tok.Decode(c.IDs), "Decode of Encode(%q)", c.Text)
				require.Equal(t, c.Decoded, tok.Decode(want), "Decode with </s> of Encode(%q)", c.Text)
			}
			for _, d := range g.Decodes {
				require.Equal(t, d.Decoded, tok.Decode(d.IDs), "Decode(%v)", d.IDs)
			}
		})
	}
}

// TestTokenizerJSONGoldens checks Encode and Decode of tokenizer.json files against Hugging
// Face tokenizers (add_special_tokens=true, skip_special_tokens=true).
func TestTokenizerJSONGoldens(t *testing.T) {
	dir := goldenDir(t)
	matches, err := filepath.Glob(filepath.Join(dir, "hf_*.json"))
	require.NoError(t, err)
	if len(matches) == 0 {
		t.Skipf("no hf_*.json goldens in %s (made only when gen-t5-goldens.sh is given tokenizers)", dir)
	}
	for _, path := range matches {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var g hfGolden
			readJSON(t, path, &g)
			tok := goldenTokenizer(t, g.Tokenizer)
			require.NotEmpty(t, g.Cases)
			for _, c := range g.Cases {
				require.Equal(t, c.IDs, tok.Encode(c.Text), "Encode(%q): want tokens %q", c.Text, c.Tokens)
				require.Equal(t, c.Decoded, tok.Decode(c.IDs), "Decode of Encode(%q)", c.Text)
			}
		})
	}
}

// TestGoldenEncodePadded checks the SD3.5 input shape on a real model: 256 ids, </s> kept on a
// cut, the mask counting the real ids.
func TestGoldenEncodePadded(t *testing.T) {
	tok := goldenTokenizer(t, "bf_model.model")
	long := ""
	for range 300 {
		long += "word "
	}
	tests := []struct {
		name    string
		text    string
		wantLen int // real ids before padding
	}{
		{"empty", "", 1},
		{"short", "Hello world", len(tok.Encode("Hello world"))},
		{"cut", long, MaxLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids, mask := tok.EncodePadded(tc.text, MaxLength)
			require.Len(t, ids, MaxLength)
			require.Len(t, mask, MaxLength)
			real := 0
			for _, m := range mask {
				real += m
			}
			require.Equal(t, tc.wantLen, real)
			require.Equal(t, tok.EOSID(), ids[real-1], "last real id is </s>")
			for _, id := range ids[real:] {
				require.Equal(t, 0, id, "T5 pads with id 0")
			}
			full := tok.Encode(tc.text)
			require.Equal(t, full[:real-1], ids[:real-1])
		})
	}
}

// TestLoadDirectoryPrefersTokenizerJSON loads a directory laid out like SD3.5's tokenizer_3.
func TestLoadDirectoryPrefersTokenizerJSON(t *testing.T) {
	dir := goldenDir(t)
	tmp := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(dir, "test_model.model"), filepath.Join(tmp, "spiece.model")))
	spm, err := Load(tmp)
	require.NoError(t, err)
	require.Nil(t, spm.hf)
	require.NoError(t, os.Symlink(filepath.Join(dir, "test_model.tokenizer.json"), filepath.Join(tmp, "tokenizer.json")))
	hf, err := Load(tmp)
	require.NoError(t, err)
	require.NotNil(t, hf.hf)
	require.Equal(t, spm.Encode("I saw a girl with a telescope."), hf.Encode("I saw a girl with a telescope."))
}
