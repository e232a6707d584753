package audio

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The fixtures in testdata/ogg are made by scripts/gen-audio-fixtures.sh from fixtureSignal.

// fixtureSignal is the synthetic signal of scripts/gen-audio-fixtures.sh (keep in sync): a tone
// per channel plus a 300→2700 Hz chirp.
func fixtureSignal(ch int, t float64) float64 {
	chirp := 0.25 * math.Sin(2*math.Pi*(300*t+1200*t*t))
	if ch == 1 {
		return 0.30*math.Sin(2*math.Pi*880*t) + chirp
	}
	return 0.35*math.Sin(2*math.Pi*440*t) + chirp
}

// fixtureMono is the downmix of the fixture signal, n frames at rate.
func fixtureMono(channels, rate, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		t := float64(i) / float64(rate)
		var s float64
		for c := 0; c < channels; c++ {
			s += fixtureSignal(c, t)
		}
		out[i] = float32(s / float64(channels))
	}
	return out
}

// codecFixture is one entry of a fixture manifest (testdata/ogg, testdata/browser).
type codecFixture struct {
	File            string `json:"file"`
	Encoder         string `json:"encoder"`
	SourceRate      int    `json:"source_rate"`
	Channels        int    `json:"channels"`
	SourceFrames    int    `json:"source_frames"`
	DecodedRate     int    `json:"decoded_rate"`
	ReferenceFrames int    `json:"reference_frames"`
	FFmpegFrames    int    `json:"ffmpeg_frames"`
}

// fixtureManifest reads testdata/<dir>/manifest.json, which lists n fixtures.
func fixtureManifest(t testing.TB, dir string, n int) []codecFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", dir, "manifest.json"))
	require.NoError(t, err)
	var m struct{ Files []codecFixture }
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Len(t, m.Files, n)
	return m.Files
}

func readFixture(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, name))
	require.NoError(t, err)
	return b
}

func codecFixtures(t testing.TB) []codecFixture       { return fixtureManifest(t, "ogg", 5) }
func readOggFixture(t testing.TB, name string) []byte { return readFixture(t, "ogg", name) }

// ffmpegMono decodes data with ffmpeg at the fixture's decoded rate and averages the channels
// (ffmpeg's own downmix, -ac 1, scales stereo by 1/√2, not 1/2).
func ffmpegMono(t *testing.T, data []byte, fx codecFixture) []float32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := filepath.Join(t.TempDir(), fx.File)
	require.NoError(t, os.WriteFile(f, data, 0o644))
	cmd := exec.CommandContext(ctx, FFmpegPath(), "-nostdin", "-loglevel", "error", "-i", f,
		"-ar", strconv.Itoa(fx.DecodedRate), "-f", "f32le", "-c:a", "pcm_f32le", "pipe:1")
	out, err := cmd.Output()
	require.NoError(t, err)
	ff := make([]float32, len(out)/4/fx.Channels)
	for i := range ff {
		var s float32
		for c := range fx.Channels {
			s += math.Float32frombits(binary.LittleEndian.Uint32(out[4*(i*fx.Channels+c):]))
		}
		ff[i] = s / float32(fx.Channels)
	}
	return ff
}

// snrDB is the power of ref over the power of (got − ref), in dB.
func snrDB(got, ref []float32) float64 {
	var ps, pn float64
	for i := range min(len(got), len(ref)) {
		d := float64(got[i]) - float64(ref[i])
		ps += float64(ref[i]) * float64(ref[i])
		pn += d * d
	}
	return 10 * math.Log10(ps/pn)
}

// bestLag is the shift of got against ref (within ±maxLag) with the highest correlation.
func bestLag(got, ref []float32, maxLag int) int {
	best, bestC := 0, math.Inf(-1)
	for lag := -maxLag; lag <= maxLag; lag++ {
		var c float64
		for i := range ref {
			if j := i + lag; j >= 0 && j < len(got) {
				c += float64(got[j]) * float64(ref[i])
			}
		}
		if c > bestC {
			best, bestC = lag, c
		}
	}
	return best
}

// TestOggFixtures decodes each fixture at its own rate: the exact length of the Xiph reference
// decoders (pre-skip and end trimming right), no time shift against the source signal, and a
// codec-level SNR against it.
func TestOggFixtures(t *testing.T) {
	// Lossy codecs at low bit rates, so a sanity bound (wrong gain, channel or shift would fail
	// it); the accuracy check is TestOggMatchesFFmpeg. Measured 24.4, 25.2, 33.5, 9.8, 10.9 dB:
	// SILK (speech mode, the 12 and 24 kbit/s files) codes the spectrum, not the waveform.
	minSNR := map[string]float64{
		"vorbis_44k1_stereo_oggenc_q0.ogg": 20, "vorbis_16k_mono_ffmpeg_q1.ogg": 20,
		"opus_48k_stereo_opusenc_32k.opus": 28, "opus_16k_mono_opusenc_12k.opus": 7, "opus_48k_mono_ffmpeg_24k.opus": 7,
	}
	for _, fx := range codecFixtures(t) {
		t.Run(fx.File, func(t *testing.T) {
			d, err := Decode(context.Background(), readOggFixture(t, fx.File), 0, Limits{MaxBytes: 1 << 20, MaxDuration: 30})
			require.NoError(t, err)
			want := FormatVorbis
			if strings.HasPrefix(fx.File, "opus") {
				want = FormatOpus
			}
			require.Equal(t, want, d.Format)
			require.Equal(t, fx.DecodedRate, d.SourceRate)
			require.Equal(t, fx.DecodedRate, d.SampleRate)
			require.Equal(t, fx.Channels, d.SourceChannels)
			require.Len(t, d.Samples, fx.ReferenceFrames, "frames (reference decoder: %d, ffmpeg: %d)", fx.ReferenceFrames, fx.FFmpegFrames)
			require.Equal(t, float64(fx.ReferenceFrames)/float64(fx.DecodedRate), d.Duration)
			// The source signal, evaluated at the decoded rate (Opus decodes 16 kHz input at 48 kHz).
			ref := fixtureMono(fx.Channels, fx.DecodedRate, fx.ReferenceFrames)
			// Skip the first and last 20 ms, where codecs ramp.
			edge := fx.DecodedRate / 50
			got, r := d.Samples[edge:len(d.Samples)-edge], ref[edge:len(ref)-edge]
			// pion/opus's SILK path runs 2 samples (42 µs at 48 kHz) ahead of libopus's.
			require.LessOrEqual(t, abs(bestLag(got, r, 48)), 2, "decoded audio is shifted against the source")
			snr := snrDB(got, r)
			t.Logf("%s: %d frames, SNR vs source %.1f dB", fx.File, len(d.Samples), snr)
			require.Greater(t, snr, minSNR[fx.File])
		})
	}
}

// TestOggMatchesFFmpeg compares our decode with ffmpeg's (when ffmpeg is installed): the same
// samples up to the decoders' accuracy, aligned. ffmpeg 5.1's Vorbis decoder does not trim
// like the reference decoder (the manifest records both counts), so the overlap is compared.
func TestOggMatchesFFmpeg(t *testing.T) {
	if FFmpegPath() == "" {
		t.Skip("ffmpeg is not installed; scripts/gen-audio-fixtures.sh runs this test with it")
	}
	if raceEnabled {
		t.Skip("five ffmpeg processes and decodes take ~10 s under -race on a loaded machine; the plain run covers this")
	}
	// Measured: Vorbis 135.5 and 135.3 dB; Opus CELT 111.8 dB, SILK 39.4 and 44.1 dB.
	minSNR := map[string]float64{"ogg-vorbis": 100, "ogg-opus": 30}
	for _, fx := range codecFixtures(t) {
		t.Run(fx.File, func(t *testing.T) {
			data := readOggFixture(t, fx.File)
			d, err := Decode(context.Background(), data, 0, Limits{})
			require.NoError(t, err)
			ff := ffmpegMono(t, data, fx)
			require.Len(t, ff, fx.FFmpegFrames)
			lag := bestLag(ff, d.Samples, 256)
			// Compare the overlap, ours shifted by lag.
			var a, b []float32
			if lag >= 0 {
				a, b = d.Samples, ff[lag:]
			} else {
				a, b = d.Samples[-lag:], ff
			}
			n := min(len(a), len(b))
			snr := snrDB(a[:n], b[:n])
			t.Logf("%s: ours %d frames, ffmpeg %d, lag %d, SNR vs ffmpeg %.1f dB", fx.File, len(d.Samples), len(ff), lag, snr)
			require.Greater(t, snr, minSNR[d.Format])
			if d.Format == FormatOpus {
				// Both apply pre-skip and end trimming exactly; pion/opus's SILK path runs 2
				// samples (42 µs) ahead of libopus's, the CELT path is aligned.
				require.LessOrEqual(t, abs(lag), 2)
				require.Len(t, d.Samples, len(ff))
			}
		})
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
