package decoding

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// One decoder step of the loop: filters, then greedy selection with its log probability,
// over n_vocab random logits.
func BenchmarkStep(b *testing.B) {
	tok := testTokenizer(b, multi99)
	f, err := NewFilters(tok, DefaultOptions())
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 1))
	base := make([]float32, tok.NVocab())
	for i := range base {
		base[i] = float32(rng.NormFloat64())
	}
	logits := make([]float32, len(base))
	sampled := []int{tok.TimestampBegin(), 440, 1702}
	b.ReportAllocs()
	for b.Loop() {
		copy(logits, base)
		if err := f.Apply(logits, sampled); err != nil {
			b.Fatal(err)
		}
		if _, _, err := Select(logits, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The compression ratio of a 1 KB window text (about 224 tokens).
func BenchmarkCompressionRatio1KB(b *testing.B) {
	text := strings.Repeat(" The quick brown fox jumps over the lazy dog, said the teacher.", 16)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		CompressionRatio(text)
	}
}
