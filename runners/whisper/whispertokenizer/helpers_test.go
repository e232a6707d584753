package whispertokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// whisperTestdata is ../shared/testdata/whisper next to the repository root; the test is
// skipped when it is absent.
func whisperTestdata(tb testing.TB) string {
	tb.Helper()
	return filepath.Dir(shareddata.File(tb, "whisper", "tokens.json"))
}

var (
	ranksMu    sync.Mutex
	ranksCache = map[string]*Ranks{} // ranks file name -> table, loaded once per test binary
)

func loadRanks(tb testing.TB, name string) *Ranks {
	tb.Helper()
	d := whisperTestdata(tb)
	ranksMu.Lock()
	defer ranksMu.Unlock()
	if r, ok := ranksCache[name]; ok {
		return r
	}
	r, err := LoadRanksFile(filepath.Join(d, name))
	require.NoError(tb, err)
	ranksCache[name] = r
	return r
}

func newTokenizer(tb testing.TB, cfg Config) *Tokenizer {
	tb.Helper()
	tok, err := New(loadRanks(tb, cfg.RanksFile()), cfg)
	require.NoError(tb, err)
	return tok
}

type goldenFile struct {
	SpecialTokens map[string]struct {
		EOT            int            `json:"eot"`
		SOT            int            `json:"sot"`
		SOTPrev        int            `json:"sot_prev"`
		SOTLM          int            `json:"sot_lm"`
		NoSpeech       int            `json:"no_speech"`
		NoTimestamps   int            `json:"no_timestamps"`
		TimestampBegin int            `json:"timestamp_begin"`
		Transcribe     int            `json:"transcribe"`
		Translate      int            `json:"translate"`
		NVocab         int            `json:"vocab_size_n_vocab"`
		LanguageTokens map[string]int `json:"language_tokens"`
		SOTSequenceEn  []int          `json:"sot_sequence_en_transcribe"`
	} `json:"special_tokens"`
	Cases []struct {
		Text            string   `json:"text"`
		MultilingualIDs []int    `json:"multilingual_ids"`
		GPT2IDs         []int    `json:"gpt2_ids"`
		TokenBytesHex   []string `json:"multilingual_token_bytes_hex"`
	} `json:"cases"`
	DecoderExamples []struct {
		What                 string  `json:"what"`
		IDs                  []int   `json:"ids"`
		Decode               string  `json:"decode"`
		DecodeWithTimestamps *string `json:"decode_with_timestamps"`
		DecodeTextOnly       *string `json:"decode_text_tokens_only"`
	} `json:"decoder_examples"`
}

func loadGolden(tb testing.TB) *goldenFile {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(whisperTestdata(tb), "tokens.json"))
	require.NoError(tb, err)
	var g goldenFile
	require.NoError(tb, json.Unmarshal(b, &g))
	require.Len(tb, g.Cases, 10)
	return &g
}
