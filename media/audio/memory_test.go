package audio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/bombwebm"
)

// memoryInputs are one input of each container the decoders handle (ffmpeg's when installed).
func memoryInputs(t *testing.T) map[string][]byte {
	in := map[string][]byte{
		"wav":        makeWAV(t, wavSpec{tag: 1, ch: 2, rate: 44100, bits: 16}, sweep(44100, 2)),
		"webm bomb":  bombwebm.OpusBlocks(4000),
		"flac":       flacSeeds(t)[0],
		"ogg opus":   readOggFixture(t, "opus_48k_stereo_opusenc_32k.opus"),
		"ogg vorbis": readOggFixture(t, "vorbis_44k1_stereo_oggenc_q0.ogg"),
		"webm opus":  readBrowserFixture(t, "webm_opus_48k_mono_32k.webm"),
	}
	if FFmpegPath() != "" {
		in["m4a (ffmpeg)"] = readBrowserFixture(t, "m4a_aac_44k1_stereo_96k.m4a")
	}
	return in
}

// TestDecodeReservesItsMemory: every container's decode reserves at least the samples it
// decodes (at the source rate and the target rate) through Limits.Reserve.
func TestDecodeReservesItsMemory(t *testing.T) {
	for name, data := range memoryInputs(t) {
		t.Run(name, func(t *testing.T) {
			var reserved int64
			calls := 0
			dec, err := Decode(context.Background(), data, 16000, Limits{MaxDuration: 300, Reserve: func(n int64) error {
				require.Positive(t, n)
				reserved += n
				calls++
				return nil
			}})
			require.NoError(t, err)
			frames := int64(math.Round(dec.Duration * float64(dec.SourceRate)))
			require.GreaterOrEqual(t, reserved, 4*frames+4*int64(len(dec.Samples)), "samples at %d Hz and 16 kHz", dec.SourceRate)
			require.LessOrEqual(t, calls, 8, "a decode asks a few times, not per packet")
			plain, err := Decode(context.Background(), data, 16000, Limits{MaxDuration: 300})
			require.NoError(t, err)
			require.Equal(t, plain.Samples, dec.Samples, "reserving changes nothing decoded")
		})
	}
}

// TestDecodeStopsWhenRefused: a refused reservation stops every decode with the refusal, wrapped
// in *ReserveError, before or while decoding.
func TestDecodeStopsWhenRefused(t *testing.T) {
	full := errors.New("budget full")
	for name, data := range memoryInputs(t) {
		t.Run(name, func(t *testing.T) {
			for _, allow := range []int{0, 1} { // refuse the first ask, or the second (a grown decode)
				asked := 0
				_, err := Decode(context.Background(), data, 16000, Limits{MaxDuration: 300, Reserve: func(int64) error {
					asked++
					if asked > allow {
						return full
					}
					return nil
				}})
				if allow == 1 && err == nil {
					continue // decoded within its first reservation
				}
				require.ErrorIs(t, err, full)
				var re *ReserveError
				require.ErrorAs(t, err, &re)
			}
		})
	}
}

// TestWebMBombReservedFromHeaders: the 100k-block WebM's 250 s are reserved from its packets'
// TOC bytes in one ask, before decoding: about 107 MiB, which the budget then bounds.
func TestWebMBombReservedFromHeaders(t *testing.T) {
	data := bombwebm.OpusBlocks(100000)
	require.Less(t, len(data), 710_000)
	var asks []int64
	_, err := Decode(context.Background(), data, 16000, Limits{MaxDuration: 300, Reserve: func(n int64) error {
		asks = append(asks, n)
		return errors.New("stop")
	}})
	require.Error(t, err)
	require.Equal(t, []int64{DecodeCost(100000*120, 48000, 16000)}, asks)
	require.Greater(t, asks[0], int64(100<<20))
}

// TestMeter: need reserves the difference once, grow asks for half as much again, hold adds
// bytes, and a nil meter (no Reserve) does nothing.
func TestMeter(t *testing.T) {
	var got []int64
	m := &meter{target: 16000, reserve: func(n int64) error { got = append(got, n); return nil }}
	require.NoError(t, m.need(48000, 48000))
	require.NoError(t, m.need(48000, 48000))
	require.NoError(t, m.need(1000, 48000))
	require.Equal(t, []int64{DecodeCost(48000, 48000, 16000)}, got)
	require.NoError(t, m.grow(48001, 48000))
	require.Equal(t, DecodeCost(72001, 48000, 16000), m.held)
	require.NoError(t, m.hold(100))
	require.Equal(t, DecodeCost(72001, 48000, 16000)+100, m.held)
	var nilMeter *meter
	require.NoError(t, nilMeter.need(1<<40, 48000))
	require.NoError(t, nilMeter.grow(1<<40, 48000))

	// meteredReader reserves ahead of what it reads, and stops when refused.
	m = &meter{reserve: func(n int64) error {
		if n > 8<<20 {
			return errors.New("full")
		}
		return nil
	}}
	b, err := io.ReadAll(&meteredReader{r: bytes.NewReader(make([]byte, 3<<20)), m: m})
	require.NoError(t, err)
	require.Len(t, b, 3<<20)
	require.GreaterOrEqual(t, m.held, int64(2*len(b)))
	_, err = io.ReadAll(&meteredReader{r: bytes.NewReader(make([]byte, 64<<20)), m: m})
	require.ErrorContains(t, err, "full")
}
