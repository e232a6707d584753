package audio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// sharedAudioDir locates /work/shared/testdata/audio relative to the repository root.
func sharedAudioDir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(shareddata.File(t, "audio", "manifest.json"))
}

var sharedCache struct {
	sync.Mutex
	m map[string]sharedResult
}

type sharedResult struct {
	raw []byte
	d   *Decoded
	err error
}

// decodeShared reads and decodes a shared test file at 16 kHz once per test binary (MP3
// decoding is slow under -race). Callers must not modify the result.
func decodeShared(t testing.TB, name string) ([]byte, *Decoded, error) {
	t.Helper()
	dir := sharedAudioDir(t)
	sharedCache.Lock()
	defer sharedCache.Unlock()
	if r, ok := sharedCache.m[name]; ok {
		return r.raw, r.d, r.err
	}
	raw, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	d, err := Decode(context.Background(), raw, 16000, Limits{})
	if sharedCache.m == nil {
		sharedCache.m = map[string]sharedResult{}
	}
	sharedCache.m[name] = sharedResult{raw, d, err}
	return raw, d, err
}

// slowMP3 is the 18.8 s stereo MP3 (with go-mp3 it took ~20 s to decode under -race, and tests
// skipped it there; mp3dec takes ~1 s).
const slowMP3 = "speech_b_44k1_cbr128_stereo_id3.mp3"

type manifestFile struct {
	File       string   `json:"file"`
	Expected   string   `json:"expected"`
	Container  string   `json:"container"`
	SampleRate *int     `json:"sample_rate"`
	Channels   *int     `json:"channels"`
	Frames     *int64   `json:"frames"`
	Duration   *float64 `json:"duration_s"`
	Reason     string   `json:"reject_reason"`
}

func loadManifest(t testing.TB) (string, []manifestFile) {
	dir := sharedAudioDir(t)
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	var m struct {
		Files []manifestFile `json:"files"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	require.NotEmpty(t, m.Files)
	return dir, m.Files
}

// TestDecodeSharedTestdata decodes every file of the shared manifest without limits: "ok"
// files must decode to the documented format, rate, channels and duration; "reject" files
// (other than the over-long one, covered below) must fail with a client-error sentinel.
func TestDecodeSharedTestdata(t *testing.T) {
	_, files := loadManifest(t)
	for _, mf := range files {
		t.Run(mf.File, func(t *testing.T) {
			_, d, err := decodeShared(t, mf.File)
			if mf.Expected == "reject" && mf.Duration == nil {
				require.Error(t, err)
				require.True(t, errors.Is(err, ErrInvalidAudio) || errors.Is(err, ErrUnsupportedFormat), "%v", err)
				require.Nil(t, d)
				return
			}
			require.NoError(t, err)
			require.Equal(t, mf.Container, d.Format)
			require.Equal(t, *mf.SampleRate, d.SourceRate)
			require.Equal(t, *mf.Channels, d.SourceChannels)
			require.Equal(t, 16000, d.SampleRate)
			tol := 1e-3
			if d.Format == FormatMP3 {
				tol = 0.1
			}
			// Exact for WAV, and for MP3 too thanks to gapless trimming (LAME tag).
			require.Equal(t, *mf.Frames, int64(math.Round(d.Duration*float64(d.SourceRate))))
			require.InDelta(t, *mf.Duration, d.Duration, tol)
			require.InDelta(t, d.Duration*16000, float64(len(d.Samples)), 1)
			peak := float32(0)
			for _, v := range d.Samples {
				peak = max(peak, v, -v)
			}
			require.Greater(t, peak, float32(0.2), "decoded speech is (near) silent")
			require.LessOrEqual(t, peak, float32(1.05))
		})
	}
}

// TestDecodeSharedDetails pins exact expectations for particular files.
func TestDecodeSharedDetails(t *testing.T) {
	dir := sharedAudioDir(t)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return b
	}
	decoded := func(name string) *Decoded {
		_, d, err := decodeShared(t, name)
		require.NoError(t, err, name)
		return d
	}
	ctx := context.Background()

	t.Run("long file over 60 s is rejected before decoding", func(t *testing.T) {
		_, err := Decode(ctx, read("long_65s_16k_s16_mono.wav"), 16000, Limits{MaxDuration: 60})
		require.ErrorIs(t, err, ErrTooLong)
		require.Contains(t, err.Error(), "65.000 s")
		d, err := Decode(ctx, read("long_65s_16k_s16_mono.wav"), 16000, Limits{MaxDuration: 65})
		require.NoError(t, err)
		require.Equal(t, 65.0, d.Duration)
	})
	t.Run("mp3 gapless lengths match ffmpeg exactly", func(t *testing.T) {
		for name, frames := range map[string]float64{
			slowMP3:                       831146,
			"speech_a_22k05_vbr_mono.mp3": 144375,
		} {
			d := decoded(name)
			require.Equal(t, frames, d.Duration*float64(d.SourceRate), name)
		}
	})
	t.Run("mp3 duration limit checked from frame count", func(t *testing.T) {
		_, err := Decode(ctx, read(slowMP3), 16000, Limits{MaxDuration: 10})
		require.ErrorIs(t, err, ErrTooLong)
	})
	t.Run("stereo downmix is the mean", func(t *testing.T) {
		// left = speech, right = 0.5 × speech → mean = 0.75 × speech; compare to the 48 kHz mono copy.
		st, mono := decoded("speech_a_44k1_s16_stereo.wav"), decoded("speech_a_48k_s24_mono.wav")
		require.Len(t, st.Samples, len(mono.Samples))
		var num, den float64
		for i := range st.Samples {
			num += float64(st.Samples[i]) * float64(mono.Samples[i])
			den += float64(mono.Samples[i]) * float64(mono.Samples[i])
		}
		require.InDelta(t, 0.75, num/den, 0.01)
	})
	t.Run("formats agree after resampling", func(t *testing.T) {
		a16, a48 := decoded("speech_a_16k_s16_mono.wav"), decoded("speech_a_48k_s24_mono.wav")
		require.Len(t, a48.Samples, len(a16.Samples))
		var sig, diff float64
		for i := range a16.Samples {
			sig += float64(a16.Samples[i]) * float64(a16.Samples[i])
			e := float64(a16.Samples[i] - a48.Samples[i])
			diff += e * e
		}
		// sox's and our resamplers differ only near the band edge: expect > 30 dB agreement.
		require.Greater(t, 10*math.Log10(sig/diff), 30.0)
	})
	t.Run("truncated wav names the sizes", func(t *testing.T) {
		_, err := Decode(ctx, read("bad_truncated.wav"), 16000, Limits{})
		require.ErrorIs(t, err, ErrInvalidAudio)
		require.Contains(t, err.Error(), "claims 126320 bytes but only 63161 follow")
	})
	t.Run("text renamed to mp3", func(t *testing.T) {
		_, err := Decode(ctx, read("bad_text_renamed.mp3"), 16000, Limits{})
		require.ErrorIs(t, err, ErrUnsupportedFormat)
	})
	t.Run("empty", func(t *testing.T) {
		_, err := Decode(ctx, read("bad_empty.wav"), 16000, Limits{})
		require.ErrorIs(t, err, ErrInvalidAudio)
		require.Contains(t, err.Error(), "empty audio file")
	})
	t.Run("max bytes", func(t *testing.T) {
		b := read("speech_a_16k_s16_mono.wav")
		_, err := Decode(ctx, b, 16000, Limits{MaxBytes: int64(len(b)) - 1})
		require.ErrorIs(t, err, ErrTooLarge)
		_, err = Decode(ctx, b, 16000, Limits{MaxBytes: int64(len(b))})
		require.NoError(t, err)
	})
	t.Run("mp3 truncated anywhere never panics", func(t *testing.T) {
		b := read("speech_a_22k05_vbr_mono.mp3")
		for _, n := range []int{1, 3, 4, 100, 417, 418, 1000, 5000, len(b) / 2, len(b) - 1} {
			_, err := Decode(ctx, b[:n], 16000, Limits{})
			if err != nil {
				require.True(t, errors.Is(err, ErrInvalidAudio) || errors.Is(err, ErrUnsupportedFormat), "%d: %v", n, err)
			}
		}
	})
	t.Run("mp3 corrupted main data never panics", func(t *testing.T) {
		b := append([]byte(nil), read(slowMP3)...)
		for i := 2000; i < len(b)-200; i += 97 {
			if b[i] != 0xFF && b[i+1] != 0xFF { // keep frame syncs intact, trash main data
				b[i] ^= 0x5A
			}
		}
		d, err := Decode(ctx, b, 16000, Limits{})
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidAudio)
		} else {
			require.NotEmpty(t, d.Samples)
		}
	})
}

// flipCtx reports cancellation from its (after+1)-th Err call on: a deterministic way to cancel
// in the middle of a decode.
type flipCtx struct {
	context.Context
	calls, after int
}

func (c *flipCtx) Err() error {
	c.calls++
	if c.calls > c.after {
		return context.Canceled
	}
	return nil
}

func TestDecodeContextCancelled(t *testing.T) {
	wav := makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16}, make([]float64, 4*ctxCheckFrames))
	mp3 := mp3Frames(hdrMPEG1L3, 400, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, data := range map[string][]byte{"wav": wav, "mp3": mp3} {
		t.Run(name+" already cancelled", func(t *testing.T) {
			_, err := Decode(ctx, data, 16000, Limits{})
			require.ErrorIs(t, err, context.Canceled)
		})
		// Cancelled mid-way: Decode checks once up front, then between blocks.
		for _, after := range []int{1, 2, 3, 6} {
			t.Run(fmt.Sprintf("%s cancelled after %d checks", name, after), func(t *testing.T) {
				fc := &flipCtx{Context: context.Background(), after: after}
				_, err := Decode(fc, data, 44100, Limits{})
				require.ErrorIs(t, err, context.Canceled)
				require.Equal(t, after+1, fc.calls, "decoding went on after cancellation")
			})
		}
	}
}

func TestDecodeTargetRate(t *testing.T) {
	wav := makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 22050, bits: 16}, sweep(22050, 1))
	d, err := Decode(context.Background(), wav, 0, Limits{})
	require.NoError(t, err)
	require.Equal(t, 22050, d.SampleRate)
	require.Len(t, d.Samples, 22050)
	_, err = Decode(context.Background(), wav, 10, Limits{})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrInvalidAudio), "a bad target rate is the caller's bug, not a client error")
}
