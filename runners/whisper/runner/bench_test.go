//go:build cgo

package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
)

// BenchmarkDecodeStep is the host and bridge cost of one traced decoder step (input writes
// on CQ 1, event, replay on CQ 0, logits read and conversion) at TTB_SIM_LATENCY_SCALE=0.001
// (9.5 µs of modelled device time).
func BenchmarkDecodeStep(b *testing.B) {
	tok := largeV3(b)
	m := loadModel(b, openDevice(b))
	ctx := context.Background()
	st, err := m.Encode(ctx, make([]float32, m.NMels()*3000), m.NMels())
	require.NoError(b, err)
	_, err = m.DecodeStep(ctx, st, []int{tok.SOT(), 50259, 50360}, 0)
	require.NoError(b, err)
	b.ResetTimer()
	for i := range b.N {
		if _, err := m.DecodeStep(ctx, st, []int{50365}, 3+i%400); err != nil {
			b.Fatal(err)
		}
		if i%400 == 399 {
			if _, err := m.DecodeStep(ctx, st, []int{tok.SOT(), 50259, 50360}, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkTranscribeWindow is one unscripted 30 s window end to end on the simulator:
// whole-file log-mel, encoder, language given, ~13 decoder steps.
func BenchmarkTranscribeWindow(b *testing.B) {
	tok := largeV3(b)
	m := loadModel(b, openDevice(b))
	opts := transcribe.DefaultOptions()
	opts.NMels, opts.Language = m.NMels(), "en"
	x := audio(30)
	b.ResetTimer()
	for range b.N {
		if _, err := transcribe.Transcribe(context.Background(), m, tok, x, opts, nil); err != nil {
			b.Fatal(err)
		}
	}
}
