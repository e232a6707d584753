package decoding

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

var (
	tokMu    sync.Mutex
	tokCache = map[whispertokenizer.Config]*whispertokenizer.Tokenizer{}
)

// testTokenizer loads a vocabulary from ../shared/testdata/whisper next to the repository
// root, or skips the test when it is absent.
func testTokenizer(tb testing.TB, cfg whispertokenizer.Config) *whispertokenizer.Tokenizer {
	tb.Helper()
	dir, err := os.Getwd()
	require.NoError(tb, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "testdata", "whisper")
	if _, err := os.Stat(filepath.Join(d, cfg.RanksFile())); err != nil {
		tb.Skipf("whisper vocabulary not found in %s (see shared/testdata/README.md): %v", d, err)
	}
	tokMu.Lock()
	defer tokMu.Unlock()
	if t, ok := tokCache[cfg]; ok {
		return t
	}
	t, err := whispertokenizer.Load(d, cfg)
	require.NoError(tb, err)
	tokCache[cfg] = t
	return t
}

var multi99 = whispertokenizer.Config{Multilingual: true, NumLanguages: 99}

var inf = math.Inf(-1)

// logitsOf makes float32 logits from float64 literals.
func logitsOf(v ...float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// suppressedIn lists the indices whose logit is -Inf.
func suppressedIn(logits []float32) []int {
	var out []int
	for i, v := range logits {
		if math.IsInf(float64(v), -1) {
			out = append(out, i)
		}
	}
	return out
}
