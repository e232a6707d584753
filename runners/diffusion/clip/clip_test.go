package clip

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// testdataDir returns ../shared/testdata/<sub> relative to the repository root, or skips.
func testdataDir(t testing.TB, sub string) string {
	t.Helper()
	return shareddata.Dir(t, sub)
}

var (
	sharedOnce sync.Once
	sharedTok  *Tokenizer
	sharedErr  error
)

// loadGoldenTokenizer loads the golden vocabulary once per test binary.
func loadGoldenTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	dir := testdataDir(t, "clip")
	sharedOnce.Do(func() {
		sharedTok, sharedErr = LoadBPEFile(filepath.Join(dir, "bpe_simple_vocab_16e6.txt.gz"))
	})
	require.NoError(t, sharedErr)
	return sharedTok
}

type goldenCase struct {
	Prompt        string   `json:"prompt"`
	PromptHex     string   `json:"prompt_utf8_hex"`
	Truncated     bool     `json:"truncated"`
	BPEIDs        []int    `json:"bpe_ids"`
	BPETokens     []string `json:"bpe_tokens"`
	Decoded       string   `json:"decoded"`
	SDXL1         []int    `json:"sdxl_tokenizer_1_clip_l_input_ids"`
	SDXL2         []int    `json:"sdxl_tokenizer_2_clip_g_input_ids"`
	EOTPosition   int      `json:"eot_position"`
	FirstEOTIndex int      `json:"first_eot_index"`
}

func loadGoldenCases(t *testing.T) []goldenCase {
	b, err := os.ReadFile(filepath.Join(testdataDir(t, "clip"), "tokenize_golden.json"))
	require.NoError(t, err)
	var g struct {
		Cases []goldenCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	require.Len(t, g.Cases, 26)
	return g.Cases
}

func TestGoldenTokenizations(t *testing.T) {
	tok := loadGoldenTokenizer(t)
	require.Equal(t, 49408, tok.VocabSize())
	require.Equal(t, 49406, tok.StartID())
	require.Equal(t, 49407, tok.EndID())
	require.Equal(t, 49407, tok.PadID())
	for _, c := range loadGoldenCases(t) {
		t.Run(c.Prompt, func(t *testing.T) {
			raw, err := hex.DecodeString(c.PromptHex)
			require.NoError(t, err)
			require.Equal(t, string(raw), c.Prompt)
			ids := tok.Encode(c.Prompt)
			if len(c.BPEIDs) == 0 {
				require.Empty(t, ids)
			} else {
				require.Equal(t, c.BPEIDs, ids)
			}
			require.Equal(t, len(c.BPETokens), len(ids))
			if len(ids) > 0 {
				require.Equal(t, c.BPETokens, tok.Tokens(ids))
			}
			require.Equal(t, c.Decoded, tok.Decode(ids))

			in := tok.SDXL(c.Prompt, c.Prompt)
			require.Equal(t, c.SDXL1, in.Encoder1.IDs)
			require.Equal(t, c.SDXL2, in.Encoder2.IDs)
			for _, e := range []Inputs{in.Encoder1, in.Encoder2} {
				require.Equal(t, c.EOTPosition, e.EOTPosition)
				require.Equal(t, c.FirstEOTIndex, e.FirstEOTIndex)
				require.Equal(t, c.Truncated, e.Truncated)
			}
			require.Equal(t, in.Encoder1, tok.EncoderInputs(c.Prompt))
		})
	}
}

// TestHFLayout writes the vocabulary in Hugging Face's layout (vocab.json + merges.txt) for
// SDXL's tokenizer/ and tokenizer_2/ and checks that both encode every golden prompt alike
// and take the pad id from their config.
func TestHFLayout(t *testing.T) {
	ref := loadGoldenTokenizer(t)
	root := t.TempDir()
	vocab, err := json.Marshal(ref.encoder)
	require.NoError(t, err)
	gz, err := os.ReadFile(filepath.Join(testdataDir(t, "clip"), "bpe_simple_vocab_16e6.txt.gz"))
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	var plain bytes.Buffer
	_, err = plain.ReadFrom(zr)
	require.NoError(t, err)
	lines := strings.Split(plain.String(), "\n")
	merges := "#version: 0.2\n" + strings.Join(lines[1:numMerges+1], "\n") + "\n"

	configs := map[string]string{
		"tokenizer":   `{"pad_token": "<|endoftext|>", "model_max_length": 77}`,
		"tokenizer_2": `{"pad_token": {"content": "!", "lstrip": false}, "model_max_length": 77}`,
	}
	want := map[string]int{"tokenizer": 49407, "tokenizer_2": 0}
	cases := loadGoldenCases(t)
	for sub, cfg := range configs {
		dir := filepath.Join(root, sub)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "vocab.json"), vocab, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "merges.txt"), []byte(merges), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644))
		tok, err := LoadHFDir(dir)
		require.NoError(t, err)
		require.Equal(t, want[sub], tok.PadID(), sub)
		require.Equal(t, 77, tok.MaxLength())
		for _, c := range cases {
			in := tok.EncoderInputs(c.Prompt)
			if sub == "tokenizer" {
				require.Equal(t, c.SDXL1, in.IDs, c.Prompt)
			} else {
				require.Equal(t, c.SDXL2, in.IDs, c.Prompt)
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	var gzBuf bytes.Buffer
	zw := gzip.NewWriter(&gzBuf)
	_, _ = zw.Write([]byte("header\na b c\n"))
	require.NoError(t, zw.Close())
	tests := []struct {
		name string
		load func() error
		is   error
	}{
		{"missing gz", func() error { _, err := LoadBPEFile(filepath.Join(dir, "nope.gz")); return err }, os.ErrNotExist},
		{"not gzip", func() error { _, err := NewFromBPE(strings.NewReader("plain text")); return err }, gzip.ErrHeader},
		{"bad merge line", func() error { _, err := NewFromBPE(&gzBuf); return err }, ErrBadVocab},
		{"missing hf dir", func() error { _, err := LoadHFDir(filepath.Join(dir, "none")); return err }, os.ErrNotExist},
		{"bad vocab json", func() error {
			d := filepath.Join(dir, "badjson")
			require.NoError(t, os.MkdirAll(d, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(d, "vocab.json"), []byte("{"), 0o644))
			_, err := LoadHFDir(d)
			return err
		}, ErrBadVocab},
		{"vocab without specials", func() error {
			d := filepath.Join(dir, "nospecial")
			require.NoError(t, os.MkdirAll(d, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(d, "vocab.json"), []byte(`{"a":0,"b":1,"ab</w>":2}`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(d, "merges.txt"), []byte("#v\na b</w>\n"), 0o644))
			_, err := LoadHFDir(d)
			return err
		}, ErrBadVocab},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.load(), tc.is)
		})
	}
}

func TestCleanText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  Hello\t\nWorld  ", "hello world"},
		{"fish &amp;amp; chips", "fish & chips"}, // unescaped twice
		{"&lt;b&gt; &#65;&#x42;&#X43", "<b> abc"},
		{"&#128; &#0; &#1;x &#xD800; &#99999999999;", "€ \ufffd x \ufffd \ufffd"},
		{"&ampfoo &notit; &# &", "&foo ¬it; &# &"},
		{"İstanbul", "i\u0307stanbul"},
		{"ΟΔΥΣΣΕΥΣ Σ ΑΣ. ΑΣΑ", "οδυσσευς σ ας. ασα"},
		{"\x1cA\u3000B\u00a0C", "a b c"},
		{"ÀÉÎ ẞ", "àéî ß"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, cleanText(tc.in))
		})
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"it's we're i'll 'x", []string{"it", "'s", "we", "'re", "i", "'ll", "'", "x"}},
		{"a1234b", []string{"a", "1", "2", "3", "4", "b"}},
		{"photo<|endoftext|>of", []string{"photo", "<|endoftext|>", "of"}},
		{"!!<|endoftext|>", []string{"!!<|", "endoftext", "|>"}},
		{"(masterpiece:1.2),", []string{"(", "masterpiece", ":", "1", ".", "2", "),"}},
		{"東京の夜景 🐱👍🏽", []string{"東京の夜景", "🐱👍🏽"}},
		{"", nil},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var got []string
			splitWords(tc.in, func(w string) { got = append(got, w) })
			require.Equal(t, tc.want, got)
		})
	}
}

func TestInputsFromIDs(t *testing.T) {
	tok := loadGoldenTokenizer(t)
	ids := make([]int, 80)
	for i := range ids {
		ids[i] = 100 + i
	}
	tests := []struct {
		n         int
		pad       int
		eot       int
		truncated bool
	}{
		{0, 0, 1, false},
		{75, 0, 76, false},
		{76, 49407, 76, true},
		{80, 0, 76, true},
	}
	for _, tc := range tests {
		in := tok.InputsFromIDs(ids[:tc.n], tc.pad)
		require.Len(t, in.IDs, ContextLength)
		require.Equal(t, 49406, in.IDs[0])
		require.Equal(t, 49407, in.IDs[tc.eot])
		require.Equal(t, tc.eot, in.EOTPosition)
		require.Equal(t, tc.eot, in.FirstEOTIndex)
		require.Equal(t, tc.truncated, in.Truncated)
		for i := tc.eot + 1; i < ContextLength; i++ {
			require.Equal(t, tc.pad, in.IDs[i])
		}
	}
	in := tok.SDXL("a cat", "a dog")
	require.Equal(t, tok.Encode("a cat"), in.Encoder1.IDs[1:3])
	require.Equal(t, tok.Encode("a dog"), in.Encoder2.IDs[1:3])
}

func TestConcurrentEncode(t *testing.T) {
	tok := loadGoldenTokenizer(t)
	want := tok.Encode(benchPrompt)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if got := tok.Encode(benchPrompt); !equalInts(got, want) {
					t.Errorf("concurrent Encode differs")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// benchPrompt has 60 words.
const benchPrompt = "a breathtaking ultra detailed matte painting of an ancient floating city above the clouds " +
	"at golden hour, towering spires of white marble and brass, waterfalls pouring from the edges into mist, " +
	"flocks of birds circling, warm volumetric light, intricate architecture, cinematic composition, " +
	"trending on artstation, octane render, 8k resolution, sharp focus, vivid colors, dramatic sky, epic scale, no text, watermark"

func TestBenchPromptWords(t *testing.T) {
	require.Len(t, strings.Fields(benchPrompt), 60)
}

// BenchmarkEncode60Words measures a 60-word prompt with a warm per-word cache (the steady
// state of a server) and with the cache cleared every iteration.
func BenchmarkEncode60Words(b *testing.B) {
	tok := loadGoldenTokenizer(b)
	b.Run("warm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = tok.SDXL(benchPrompt, benchPrompt)
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tok.mu.Lock()
			clear(tok.cache)
			tok.mu.Unlock()
			_ = tok.SDXL(benchPrompt, benchPrompt)
		}
	})
}
