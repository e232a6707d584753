package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"testing"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// Why uploads are not parsed by go-audio/wav v1.1.0 (the design card's WAV package, which the
// server uses to write WAV: cmd/tt-media-server audio-decode). These tests measure it; if one
// starts failing, go-audio/wav changed and the decision in README "Packages" should be revisited.

// TestGoAudioWAVMisdecodesFloat: a 32-bit float WAV comes back from go-audio/wav as the float
// bits read as integers, with no error; our parser decodes it exactly.
func TestGoAudioWAVMisdecodesFloat(t *testing.T) {
	n := 16000
	sig := make([]float64, n)
	ref := make([]float32, n)
	for i := range sig {
		sig[i] = 0.5 * math.Sin(2*math.Pi*440*float64(i)/16000)
		ref[i] = float32(sig[i])
	}
	data := makeWAV(t, wavSpec{tag: 3, ch: 1, rate: 16000, bits: 32}, sig)

	d := wav.NewDecoder(bytes.NewReader(data))
	buf, err := d.FullPCMBuffer()
	require.NoError(t, err, "go-audio/wav reports no error")
	// Whatever scale a caller applies to its IntBuffer, the waveform is wrong: the SNR with the
	// least-squares gain is the best any scaling can reach.
	var xr, xx float64
	for i, v := range buf.Data {
		xr += float64(v) * float64(ref[i])
		xx += float64(v) * float64(v)
	}
	theirs := make([]float32, len(buf.Data))
	for i, v := range buf.Data {
		theirs[i] = float32(float64(v) * xr / xx)
	}
	theirSNR := snrDB(theirs, ref)

	ours, err := Decode(context.Background(), data, 0, Limits{})
	require.NoError(t, err)
	ourSNR := snrDB(ours.Samples, ref)
	t.Logf("float32 WAV: go-audio/wav SNR %.1f dB at the best gain, ours %.1f dB", theirSNR, ourSNR)
	require.Less(t, theirSNR, 10.0)
	require.True(t, math.IsInf(ourSNR, 1), "ours is exact")
}

// TestGoAudioWAVTrustsHeader: a 1 KiB file whose fmt chunk claims 64 MiB makes go-audio/wav
// allocate that much while checking the header (IsValidFile); a claim of ~4 GiB is a fatal
// out-of-memory that recover cannot catch. Our parser refuses it with a 400 and allocates
// nothing of the sort.
func TestGoAudioWAVTrustsHeader(t *testing.T) {
	data := make([]byte, 1024)
	copy(data, "RIFF")
	binary.LittleEndian.PutUint32(data[4:], 1016)
	copy(data[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(data[16:], 64<<20)

	allocated := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	var valid bool
	theirs := allocated(func() { valid = wav.NewDecoder(bytes.NewReader(data)).IsValidFile() })
	var err error
	ours := allocated(func() { _, err = Decode(context.Background(), data, 16000, Limits{}) })
	t.Logf("1 KiB WAV whose fmt chunk claims 64 MiB: go-audio/wav allocates %.1f MiB (valid=%v); ours %.1f KiB and %v",
		float64(theirs)/(1<<20), valid, float64(ours)/1024, err)
	require.GreaterOrEqual(t, theirs, uint64(64<<20))
	require.ErrorIs(t, err, ErrInvalidAudio)
	require.Less(t, ours, uint64(64<<10))
}

// BenchmarkWAVDecoders: our parser against go-audio/wav's buffered PCMBuffer (64 Ki samples at
// a time, converted to mono float as ours does) on the same 6.55 s 44.1 kHz stereo file.
func BenchmarkWAVDecoders(b *testing.B) {
	data, err := os.ReadFile(shareddata.File(b, "audio", "speech_a_44k1_s16_stereo.wav"))
	require.NoError(b, err)
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := decodeWAV(context.Background(), data, Limits{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-audio-wav", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			d := wav.NewDecoder(bytes.NewReader(data))
			d.ReadInfo()
			f := d.Format()
			buf := &goaudio.IntBuffer{Format: f, Data: make([]int, 1<<16)}
			mono := make([]float32, 0, int(d.PCMLen())/4)
			for {
				n, err := d.PCMBuffer(buf)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					break
				}
				for i := 0; i+1 < n; i += 2 {
					mono = append(mono, float32(buf.Data[i]+buf.Data[i+1])/65536)
				}
			}
			if len(mono) == 0 {
				b.Fatal("no samples")
			}
		}
	})
}
