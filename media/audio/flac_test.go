package audio

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
	"github.com/stretchr/testify/require"
)

// makeFLAC encodes interleaved samples in [-1, 1] with mewkiz/flac's encoder (verbatim,
// constant or fixed-predictor subframes, whichever is smallest). nsamples is written to
// STREAMINFO as given (0 = unknown; a lie is allowed).
func makeFLAC(t testing.TB, ch, rate, bps int, samples []float64, nsamples uint64) []byte {
	t.Helper()
	frames := len(samples) / ch
	info := &meta.StreamInfo{
		BlockSizeMin: 4096, BlockSizeMax: 4096,
		SampleRate: uint32(rate), NChannels: uint8(ch), BitsPerSample: uint8(bps), NSamples: nsamples,
	}
	var buf bytes.Buffer
	enc, err := flac.NewEncoder(&buf, info)
	require.NoError(t, err)
	full := float64(int64(1)<<(bps-1)) - 1
	for start := 0; start < frames; start += 4096 {
		n := min(4096, frames-start)
		f := &frame.Frame{Header: frame.Header{
			HasFixedBlockSize: true, BlockSize: uint16(n), SampleRate: uint32(rate),
			Channels: frame.Channels(ch - 1), BitsPerSample: uint8(bps),
		}}
		for c := 0; c < ch; c++ {
			s := make([]int32, n)
			for i := range s {
				s[i] = int32(math.Round(samples[(start+i)*ch+c] * full))
			}
			f.Subframes = append(f.Subframes, &frame.Subframe{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: s, NSamples: n})
		}
		require.NoError(t, enc.WriteFrame(f))
	}
	require.NoError(t, enc.Close())
	return buf.Bytes()
}

func TestDecodeFLAC(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ch, rate, bps int
		tol           float64
	}{
		{"mono 16-bit 16 kHz", 1, 16000, 16, 1e-4},
		{"stereo 24-bit 44.1 kHz", 2, 44100, 24, 1e-6},
		{"3 channels 8-bit 8 kHz", 3, 8000, 8, 1.0 / 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const frames = 10000
			src := sweep(frames, tc.ch)
			data := makeFLAC(t, tc.ch, tc.rate, tc.bps, src, frames)
			format, err := Sniff(data)
			require.NoError(t, err)
			require.Equal(t, FormatFLAC, format)
			d, err := Decode(context.Background(), data, tc.rate, Limits{})
			require.NoError(t, err)
			require.Equal(t, FormatFLAC, d.Format)
			require.Equal(t, tc.ch, d.SourceChannels)
			require.Equal(t, tc.rate, d.SourceRate)
			require.Len(t, d.Samples, frames)
			for i := 0; i < frames; i++ {
				var want float64
				for c := 0; c < tc.ch; c++ {
					want += src[i*tc.ch+c]
				}
				require.InDelta(t, want/float64(tc.ch), float64(d.Samples[i]), tc.tol, "frame %d", i)
			}
		})
	}
}

func TestDecodeFLACLimitsAndDamage(t *testing.T) {
	ctx := context.Background()
	tenSec := make([]float64, 160000)
	good := makeFLAC(t, 1, 16000, 16, tenSec, 160000)

	t.Run("with id3v2 tag", func(t *testing.T) {
		d, err := Decode(ctx, cat(id3(30, false), good), 16000, Limits{})
		require.NoError(t, err)
		require.Equal(t, FormatFLAC, d.Format)
		require.Len(t, d.Samples, 160000)
	})
	t.Run("duration from STREAMINFO, before decoding", func(t *testing.T) {
		_, err := Decode(ctx, good, 16000, Limits{MaxDuration: 5})
		require.ErrorIs(t, err, ErrTooLong)
		require.Contains(t, err.Error(), "10.000 s")
	})
	t.Run("STREAMINFO lies: unknown length, too long while decoding", func(t *testing.T) {
		_, err := Decode(ctx, makeFLAC(t, 1, 16000, 16, tenSec, 0), 16000, Limits{MaxDuration: 5})
		require.ErrorIs(t, err, ErrTooLong)
	})
	t.Run("STREAMINFO claims 2^36 samples in a tiny file", func(t *testing.T) {
		d, err := Decode(ctx, makeFLAC(t, 1, 16000, 16, tenSec[:5000], 1<<36-1), 16000, Limits{})
		require.NoError(t, err, "allocation is capped by the input size, the real frames decode")
		require.Len(t, d.Samples, 5000)
	})
	t.Run("truncated and corrupted never panic", func(t *testing.T) {
		src := makeFLAC(t, 2, 44100, 16, sweep(20000, 2), 20000)
		for _, n := range []int{4, 20, 41, 42, 50, 100, 1000, len(src) / 2, len(src) - 1} {
			_, err := Decode(ctx, src[:n], 16000, Limits{})
			if err != nil {
				require.True(t, errors.Is(err, ErrInvalidAudio), "%d: %v", n, err)
			}
		}
		bad := append([]byte(nil), src...)
		for i := 100; i < len(bad); i += 61 {
			bad[i] ^= 0xA5
		}
		_, err := Decode(ctx, bad, 16000, Limits{})
		require.ErrorIs(t, err, ErrInvalidAudio)
	})
	t.Run("bad rate", func(t *testing.T) {
		_, err := Decode(ctx, makeFLAC(t, 1, 800, 16, tenSec[:100], 100), 16000, Limits{})
		require.ErrorIs(t, err, ErrInvalidAudio)
		require.Contains(t, err.Error(), "800 Hz")
	})
}

func FuzzFLAC(f *testing.F) {
	for _, s := range flacSeeds(f) {
		f.Add(s)
	}
	lim := Limits{MaxBytes: 1 << 20, MaxDuration: 30}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(context.Background(), data, 16000, lim)
		checkDecodeResult(t, d, err, lim)
	})
}

func flacSeeds(t testing.TB) [][]byte {
	return [][]byte{
		makeFLAC(t, 1, 16000, 16, sweep(300, 1), 300),
		makeFLAC(t, 2, 44100, 24, sweep(200, 2), 0),
		makeFLAC(t, 1, 8000, 8, make([]float64, 500), 500),
	}
}
