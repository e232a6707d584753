package transcribe

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkWindow measures the host side of one 30 s window with the real vocabulary: log-mel,
// then 100 decoder steps of filters and greedy selection over 51865 logits (the fake model's
// own cost is allocating the logits). ns/op over 100 is the host cost per decoder step.
func BenchmarkWindow(b *testing.B) {
	tok := realTokenizer(b)
	script := []int{tok.TimestampBegin()}
	for range 98 {
		script = append(script, tok.Encode(" word")...)
	}
	script = append(script, tok.TimestampBegin()+500)
	require.Len(b, script, 100)
	opts := DefaultOptions()
	opts.Language = "en"
	opts.Thresholds.CompressionRatio = 1e9 // " word word ..." must not fall back
	samples := silence(30)
	b.ReportAllocs()
	for b.Loop() {
		m := &fakeModel{tok: tok, windows: []fakeWindow{{attempts: [][]int{script}}}}
		res, err := Transcribe(context.Background(), m, tok, samples, opts, nil)
		require.NoError(b, err)
		require.Len(b, res.Segments, 1)
	}
}
