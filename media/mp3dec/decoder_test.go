package mp3dec

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"testing"

	"github.com/hajimehoshi/go-mp3"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// testAudio returns a file of ../shared/testdata/audio, skipping the test when the shared test
// data is not beside the repository.
func testAudio(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(shareddata.File(t, "audio", name))
	require.NoError(t, err)
	return b
}

// frames splits an MP3 file into its audio frames: after any ID3v2 tag, without the
// Xing/Info frame, up to the first bytes that are not a frame.
func frames(t testing.TB, b []byte) [][]byte {
	t.Helper()
	off := 0
	if len(b) >= 10 && string(b[:3]) == "ID3" {
		off = 10 + int(b[6])<<21 | int(b[7])<<14 | int(b[8])<<7 | int(b[9])
	}
	for off+4 <= len(b) {
		if _, ok := ParseHeader(b[off:]); ok {
			break
		}
		off++
	}
	var out [][]byte
	for off+4 <= len(b) {
		h, ok := ParseHeader(b[off:])
		if !ok || off+h.Size > len(b) {
			break
		}
		f := b[off : off+h.Size]
		if len(out) == 0 && (bytes.Contains(f, []byte("Xing")) || bytes.Contains(f, []byte("Info"))) {
			off += h.Size
			continue
		}
		out = append(out, f)
		off += h.Size
	}
	require.NotEmpty(t, out)
	return out
}

func decodeAll(t testing.TB, d *Decoder, fs [][]byte) []float32 {
	t.Helper()
	var out []float32
	for i, f := range fs {
		var err error
		out, err = d.Decode(f, out)
		require.NoError(t, err, "frame %d", i)
	}
	return out
}

// goMP3Mono decodes the frames with go-mp3 (s16 stereo) and averages the channels.
func goMP3Mono(t testing.TB, fs [][]byte) []float32 {
	t.Helper()
	dec, err := mp3.NewDecoder(struct{ io.Reader }{bytes.NewReader(bytes.Join(fs, nil))})
	require.NoError(t, err)
	raw, err := io.ReadAll(dec)
	require.NoError(t, err)
	out := make([]float32, len(raw)/4)
	for i := range out {
		l := int16(binary.LittleEndian.Uint16(raw[4*i:]))
		r := int16(binary.LittleEndian.Uint16(raw[4*i+2:]))
		out[i] = (float32(l) + float32(r)) / 65536
	}
	return out
}

// snr is 10·log10(Σref² / Σ(ref−got)²) over the common length.
func snr(ref, got []float32) float64 {
	var s, e float64
	for i := range min(len(ref), len(got)) {
		s += float64(ref[i]) * float64(ref[i])
		d := float64(ref[i]) - float64(got[i])
		e += d * d
	}
	return 10 * math.Log10(s/e)
}

// TestAgreesWithGoMP3: full-rate output matches go-mp3's (through its public API) sample for
// sample, at the same length, within go-mp3's int16 quantisation: on the shared speech files and
// the dual-channel fixture. With the normative tables now our own generated source
// (tables_iso.go), this is their check against go-mp3. Not here: the MPEG-2.5 fixtures (go-mp3
// refuses them), the intensity-stereo fixture (go-mp3 25.5 dB, 9923 LSB apart) and the MPEG-2
// fixture (63.7 dB, 554 LSB), where go-mp3 is the one that differs from mpg123 (mp3dec matches
// mpg123 at 130.6 and 129.4 dB: TestMatchesReference).
func TestAgreesWithGoMP3(t *testing.T) {
	for _, tc := range []struct {
		file   string
		minSNR float64
		local  bool // media/mp3dec/testdata, else ../shared/testdata/audio
	}{
		{"speech_b_44k1_cbr128_stereo_id3.mp3", 60, false},
		{"speech_a_22k05_vbr_mono.mp3", 60, false},
		{"dualchannel_44k1_blocktypes.mp3", 60, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var data []byte
			if tc.local {
				data = readFixture(t, tc.file)
			} else {
				data = testAudio(t, tc.file)
			}
			fs := frames(t, data)
			got := decodeAll(t, New(), fs)
			ref := goMP3Mono(t, fs)
			require.Len(t, got, len(ref))
			s := snr(ref, got)
			worst := 0.0
			for i := range ref {
				worst = max(worst, math.Abs(float64(ref[i]-got[i]))*32768)
			}
			t.Logf("%s: %d samples, SNR against go-mp3 %.1f dB, largest difference %.2f LSB", tc.file, len(got), s, worst)
			require.Greater(t, s, tc.minSNR)
			// go-mp3 truncates each channel to int16 (up to 1 LSB) and sums in another order.
			require.Less(t, worst, 4.0, "a difference beyond int16 quantisation")
		})
	}
}

// TestDCT32 checks the fast DCT against its definition.
func TestDCT32(t *testing.T) {
	var x, want [32]float32
	for i := range x {
		x[i] = float32(math.Sin(float64(i*i)*0.37) + 0.1*float64(i%5))
	}
	for k := range want {
		var s float64
		for n := range x {
			s += float64(x[n]) * math.Cos(math.Pi*float64((2*n+1)*k)/64)
		}
		want[k] = float32(s)
	}
	dct32(&x)
	for k := range want {
		require.InDelta(t, want[k], x[k], 1e-4, "X[%d]", k)
	}
}

// TestDecodeRefuses: Decode fails only for what is not a whole Layer III frame of MPEG-1 or 2.
func TestDecodeRefuses(t *testing.T) {
	frame := func(hdr []byte) []byte {
		h, ok := ParseHeader(hdr)
		require.True(t, ok)
		f := make([]byte, h.Size)
		copy(f, hdr)
		return f
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		err   error
		msg   string
	}{
		{"no sync", []byte{0, 1, 2, 3, 4, 5}, ErrCorrupt, "bad frame header"},
		{"free format", append([]byte{0xFF, 0xFB, 0x00, 0xC0}, make([]byte, 400)...), ErrCorrupt, "bad frame header"},
		{"layer II", frame([]byte{0xFF, 0xFD, 0x90, 0xC0}), ErrUnsupported, "layer 2"},
		{"truncated", frame([]byte{0xFF, 0xFB, 0x90, 0xC0})[:100], ErrCorrupt, "frame is 100 bytes, its header says 417"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := New().Decode(tc.frame, nil)
			require.ErrorIs(t, err, tc.err)
			require.ErrorContains(t, err, tc.msg)
			require.Empty(t, out)
		})
	}
}

// TestWarmUp: a decoder started a few frames into a stream (as the parallel chunk decoder in
// media/audio does) conceals the frames whose bit reservoir it has not seen, then produces
// exactly the samples of a decoder that saw the whole stream; at full and half rate.
func TestWarmUp(t *testing.T) {
	fs := frames(t, testAudio(t, "speech_b_44k1_cbr128_stereo_id3.mp3"))
	for _, mk := range []func() *Decoder{New, func() *Decoder { return NewHalfRate(1) }} {
		whole := decodeAll(t, mk(), fs)
		spf := len(whole) / len(fs)
		const start, warm = 300, 4
		d := mk()
		var out []float32
		for i := start - warm; i < len(fs); i++ {
			var err error
			out, err = d.Decode(fs[i], out)
			require.NoError(t, err)
		}
		require.Positive(t, d.Concealed(), "the first frame reaches back into the reservoir")
		require.Equal(t, whole[start*spf:], out[warm*spf:])
	}
}

// TestHalfRateIsEveryOtherSample: the half-rate decode of either phase is every other sample of
// the full-rate decode, less what the full decode has above 11 kHz (little, in speech) and the
// aliasing of dropping the upper subbands (folded above 10 kHz).
func TestHalfRateIsEveryOtherSample(t *testing.T) {
	fs := frames(t, testAudio(t, "speech_b_44k1_cbr128_stereo_id3.mp3"))
	full := decodeAll(t, New(), fs)
	for phase := 0; phase < 2; phase++ {
		half := decodeAll(t, NewHalfRate(phase), fs)
		require.Len(t, half, len(full)/2)
		even := make([]float32, len(half))
		for j := range even {
			even[j] = full[2*j+phase]
		}
		s := snr(even, half)
		t.Logf("phase %d: SNR of the half-rate decode against the full decode's samples: %.1f dB", phase, s)
		require.Greater(t, s, 80.0)
	}
}
