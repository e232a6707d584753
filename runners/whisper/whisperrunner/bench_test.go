//go:build cgo

package whisperrunner

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
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

// BenchmarkFourWindows is four unscripted 10 s requests at the modelled device speed
// (SimLatencyScale 1): one after the other on the batch-1 Model, or as four lanes of
// batch-4 decoder steps. The encoder still runs once per window.
func BenchmarkFourWindows(b *testing.B) {
	tok := largeV3(b)
	b.Setenv("TTB_SIM_LATENCY_SCALE", "1") // TestMain's 0.001 would win over the option
	opts := DeviceOptions(ttnn.MeshShape{Rows: 1, Cols: 1}, 0)
	opts.SimLatencyScale = 1
	x := [][]float32{audio(10), audio(10), audio(10), audio(10)}
	b.Run("batch1-sequential", func(b *testing.B) {
		dev, err := ttnn.Open(context.Background(), opts)
		require.NoError(b, err)
		defer func() { require.NoError(b, dev.Close()) }()
		m := loadModel(b, dev)
		o := transcribe.DefaultOptions()
		o.NMels, o.Language = m.NMels(), "en"
		b.ResetTimer()
		for range b.N {
			for _, a := range x {
				if _, err := transcribe.Transcribe(context.Background(), m, tok, a, o, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batch4-lanes", func(b *testing.B) {
		dev, err := ttnn.Open(context.Background(), opts)
		require.NoError(b, err)
		defer func() { require.NoError(b, dev.Close()) }()
		m, err := LoadBatchModel(context.Background(), dev, ttnn.SimPrograms(), 4)
		require.NoError(b, err)
		defer func() { require.NoError(b, m.Close()) }()
		o := transcribe.DefaultOptions()
		o.NMels, o.Language = m.NMels(), "en"
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			for i, a := range x {
				m.Begin(i)
				wg.Go(func() {
					defer m.Finish(i)
					if _, err := transcribe.Transcribe(context.Background(), m.Lane(i), tok, a, o, nil); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
	})
}
