package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Frame headers: MPEG-1 Layer III 128 kbit/s 44.1 kHz mono, no CRC (417-byte frames), and
// variants differing in version / layer bits.
var (
	hdrMPEG1L3 = []byte{0xFF, 0xFB, 0x90, 0xC0}
	hdrMPEG2L3 = []byte{0xFF, 0xF3, 0x90, 0xC0} // 22.05 kHz, 128 kbit/s: 72*128000/22050 = 417 bytes
	hdrMPEG25  = []byte{0xFF, 0xE3, 0x90, 0xC0} // 11.025 kHz
	hdrMPEG1L2 = []byte{0xFF, 0xFD, 0x90, 0xC0}
)

// mp3Frames builds n frames with the given header. payload(i) fills frame i after the header
// (nil: zero side info and main data, which decodes to silence).
func mp3Frames(hdr []byte, n int, payload func(i int, b []byte)) []byte {
	h, ok := parseMPEGHeader(hdr)
	if !ok {
		panic("bad test header")
	}
	var out bytes.Buffer
	for i := 0; i < n; i++ {
		f := make([]byte, h.Size)
		copy(f, hdr)
		if payload != nil {
			payload(i, f[4:])
		}
		out.Write(f)
	}
	return out.Bytes()
}

// xingFrame is an MPEG-1 mono Info frame with a LAME tag recording delay and padding.
func xingFrame(frames, delay, pad int) []byte {
	f := mp3Frames(hdrMPEG1L3, 1, nil)
	x := 4 + 17
	copy(f[x:], "Info")
	binary.BigEndian.PutUint32(f[x+4:], 1) // frames field present
	binary.BigEndian.PutUint32(f[x+8:], uint32(frames))
	l := x + 12
	copy(f[l:], "LAME3.100")
	f[l+21] = byte(delay >> 4)
	f[l+22] = byte(delay<<4) | byte(pad>>8)
	f[l+23] = byte(pad)
	return f
}

func id3(size int, footer bool) []byte {
	flags := byte(0)
	if footer {
		flags = 0x10
	}
	h := []byte{'I', 'D', '3', 4, 0, flags, byte(size >> 21 & 0x7F), byte(size >> 14 & 0x7F), byte(size >> 7 & 0x7F), byte(size & 0x7F)}
	b := append(h, make([]byte, size)...)
	if footer {
		b = append(b, '3', 'D', 'I', 4, 0, flags, h[6], h[7], h[8], h[9])
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestSniff(t *testing.T) {
	frames := mp3Frames(hdrMPEG1L3, 3, nil)
	for _, tc := range []struct {
		name string
		data []byte
		want string
		err  error
		msg  string
	}{
		{"wav", makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16}, []float64{0}), "wav", nil, ""},
		{"mp3 frames", frames, "mp3", nil, ""},
		{"mp3 single frame", frames[:417], "mp3", nil, ""},
		{"mp3 with id3v2", cat(id3(100, false), frames), "mp3", nil, ""},
		{"mp3 with id3v2 footer", cat(id3(100, true), frames), "mp3", nil, ""},
		{"mp3 with two id3v2 tags and padding", cat(id3(10, false), id3(20, false), make([]byte, 300), frames), "mp3", nil, ""},
		{"mpeg-2.5 is still mp3", mp3Frames(hdrMPEG25, 2, nil), "mp3", nil, ""},
		{"empty", nil, "", ErrInvalidAudio, "empty audio file"},
		{"text", []byte("This is not audio, just some text renamed to .mp3\n"), "", ErrUnsupportedFormat, "send WAV"},
		{"lone sync word", cat(hdrMPEG1L3, []byte("garbage garbage garbage")), "", ErrUnsupportedFormat, "not a recognised"},
		{"sync word without a second frame", cat(frames[:417], []byte("xxxx")), "", ErrUnsupportedFormat, "not a recognised"},
		{"id3 without frames", cat(id3(10, false), []byte("plain text after a tag")), "", ErrUnsupportedFormat, "ID3 tag but no MP3"},
		{"id3 claims too much", id3(10, false)[:15], "", ErrInvalidAudio, "ID3v2 tag claims 20 bytes but only 15 follow"},
		{"flac", []byte("fLaC\x00\x00\x00\x22"), "flac", nil, ""},
		{"flac after id3v2", cat(id3(10, false), []byte("fLaC\x00\x00\x00\x22")), "flac", nil, ""},
		{"ogg opus", oggPage(1, 0, oggFlagBOS, 0, []byte("OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00")), "ogg-opus", nil, ""},
		{"ogg vorbis", oggPage(1, 0, oggFlagBOS, 0, []byte("\x01vorbis\x00\x00\x00\x00\x01")), "ogg-vorbis", nil, ""},
		{"ogg vorbis, first page cut short", oggPage(1, 0, oggFlagBOS, 0, []byte("\x01vorbis\x00\x00\x00\x00\x01"))[:35], "ogg-vorbis", nil, ""},
		{"ogg theora", oggPage(1, 0, oggFlagBOS, 0, []byte("\x80theora\x03\x02")), "", ErrUnsupportedFormat, "Ogg Theora video is not supported; send WAV (PCM or IEEE float), MP3, FLAC, Ogg Vorbis, Ogg Opus, WebM (Opus) or, when the server has ffmpeg, M4A/MP4 (AAC)"},
		{"ogg unknown codec", oggPage(1, 0, oggFlagBOS, 0, []byte("SomethingElse")), "", ErrUnsupportedFormat, "Ogg with an unknown codec"},
		{"ogg empty first packet", oggPage(1, 0, oggFlagBOS, 0, nil), "", ErrInvalidAudio, "first packet is cut off or empty"},
		{"ogg header cut", []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00OpusHead"), "", ErrInvalidAudio, "too short for an Ogg page header"},
		{"m4a", []byte("\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00"), "mp4", nil, ""},
		{"webm", []byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F}, "webm", nil, ""},
		{"aac adts", []byte{0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC}, "", ErrUnsupportedFormat, "AAC (ADTS)"},
		{"aiff", []byte("FORM\x00\x00\x00\x00AIFFCOMM"), "", ErrUnsupportedFormat, "AIFF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Sniff(tc.data)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Contains(t, err.Error(), tc.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeMP3Synthetic(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		data    []byte
		samples int
		rate    int
	}{
		{"10 silent frames", mp3Frames(hdrMPEG1L3, 10, nil), 10 * 1152, 44100},
		{"id3 + frames + id3v1", cat(id3(50, true), mp3Frames(hdrMPEG1L3, 4, nil), []byte("TAG"), make([]byte, 125)), 4 * 1152, 44100},
		{"mpeg-2 frames", mp3Frames(hdrMPEG2L3, 6, nil), 6 * 576, 22050},
		{"mpeg-2.5 frames", mp3Frames(hdrMPEG25, 6, nil), 6 * 576, 11025},
		{"info frame + LAME gapless trim", cat(xingFrame(20, 576, 1000), mp3Frames(hdrMPEG1L3, 20, nil)), 20*1152 - 1576, 44100},
		{"junk between frames is skipped", cat(mp3Frames(hdrMPEG1L3, 3, nil), []byte("junk!"), mp3Frames(hdrMPEG1L3, 3, nil)), 6 * 1152, 44100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(ctx, tc.data, 0, Limits{})
			require.NoError(t, err)
			require.Equal(t, FormatMP3, d.Format)
			require.Equal(t, tc.rate, d.SourceRate)
			require.Equal(t, 1, d.SourceChannels)
			require.Len(t, d.Samples, tc.samples)
			require.InDelta(t, float64(tc.samples)/float64(tc.rate), d.Duration, 1e-12)
			for _, v := range d.Samples {
				require.Zero(t, v)
			}
		})
	}
}

func TestDecodeMP3Rejects(t *testing.T) {
	ctx := context.Background()
	noise := func(i int, b []byte) {
		x := uint32(i*7919 + 1)
		for j := range b {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b[j] = byte(x)
		}
	}
	for _, tc := range []struct {
		name string
		data []byte
		err  error
		msg  string
	}{
		{"layer II", mp3Frames(hdrMPEG1L2, 4, nil), ErrUnsupportedFormat, "Layer II"},
		{"gapless trim larger than the audio", cat(xingFrame(1, 2000, 2000), mp3Frames(hdrMPEG1L3, 1, nil)), ErrInvalidAudio, "trims away"},
		{"random main data", mp3Frames(hdrMPEG1L3, 40, noise), ErrInvalidAudio, "corrupt MP3 data: 40 of 40 frames could not be decoded"},
		{"only an info frame", xingFrame(0, 0, 0), ErrInvalidAudio, "no complete audio frames"},
		{"too long", mp3Frames(hdrMPEG1L3, 100, nil), ErrTooLong, "limit is 2 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(ctx, tc.data, 16000, Limits{MaxDuration: 2})
			require.ErrorIs(t, err, tc.err)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestDecodeMP3Alignment: after gapless trimming the MP3s line up sample-exactly with the WAVs
// made from the same speech (best cross-correlation at lag 0, same length).
func TestDecodeMP3Alignment(t *testing.T) {
	dec := func(name string) []float32 {
		_, d, err := decodeShared(t, name)
		require.NoError(t, err)
		return d.Samples
	}
	for wav, mp3 := range map[string]string{
		"speech_a_16k_s16_mono.wav": "speech_a_22k05_vbr_mono.mp3",
		"speech_b_16k_s16_mono.wav": slowMP3,
	} {
		a, b := dec(wav), dec(mp3)
		require.Len(t, b, len(a))
		best, bestLag := -1.0, 99
		for lag := -20; lag <= 20; lag++ {
			var s float64
			for i := 100; i < len(a)-100; i += 3 {
				s += float64(a[i]) * float64(b[i+lag])
			}
			if s > best {
				best, bestLag = s, lag
			}
		}
		require.Zero(t, bestLag, mp3)
	}
}

// TestMP3ParallelIdentical: decoding an MP3's frames in concurrent chunks (each decoder warmed
// up on the frames before its chunk) gives exactly the samples of one sequential decoder.
func TestMP3ParallelIdentical(t *testing.T) {
	dir := sharedAudioDir(t)
	for _, tc := range []struct {
		name              string
		workers, minChunk int
	}{
		{"speech_a_22k05_vbr_mono.mp3", 2, 16},
		{"speech_a_22k05_vbr_mono.mp3", 7, 16},
		{"speech_a_22k05_vbr_mono.mp3", 64, 9}, // chunks shorter than the warm-up
		{slowMP3, 2, 256},
		{slowMP3, 5, 64},
	} {
		for _, mode := range []mp3Mode{{}, {half: true, phase: 1}} {
			t.Run(fmt.Sprintf("%s/%d/half=%v", tc.name, tc.workers, mode.half), func(t *testing.T) {
				raw, err := os.ReadFile(filepath.Join(dir, tc.name))
				require.NoError(t, err)
				first, err := locateMP3(raw)
				require.NoError(t, err)
				info, err := scanMP3(raw, first)
				require.NoError(t, err)
				require.GreaterOrEqual(t, info.frames/tc.minChunk, 2, "the case must run in parallel")
				ctx := context.Background()
				seq, bad, err := runMP3Decoder(ctx, info, mode)
				require.NoError(t, err)
				require.Zero(t, bad)
				par, bad, err := runMP3Parallel(ctx, info, mode, tc.workers, tc.minChunk)
				require.NoError(t, err)
				require.Zero(t, bad, "warm-up frames are not counted as damage")
				require.Equal(t, len(seq), len(par))
				spf := len(seq) / info.frames
				for i := range seq {
					if seq[i] != par[i] {
						t.Fatalf("sample %d (frame %d) differs: %g vs %g", i, i/spf, seq[i], par[i])
					}
				}
			})
		}
	}
}

// TestMP3HalfRateLogMel: decoding at half rate for a 16 kHz target (what Decode does for a
// 44.1 kHz MP3) changes nothing Whisper sees. Against the full-rate decode resampled from
// 44.1 kHz, the 16 kHz waveforms agree to the resampler's own stop-band level and the log-mel
// features far inside the resampler's quality bound (TestResampleQualityLogMel).
func TestMP3HalfRateLogMel(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(sharedAudioDir(t), slowMP3))
	require.NoError(t, err)
	ctx := context.Background()
	half, err := Decode(ctx, raw, 16000, Limits{})
	require.NoError(t, err)
	fullPCM, err := decodeMP3(ctx, raw, Limits{}, 0)
	require.NoError(t, err)
	require.Equal(t, 44100, fullPCM.rate)
	full, err := resampleCtx(ctx, fullPCM.mono, 44100, 16000)
	require.NoError(t, err)
	require.InDelta(t, len(full), len(half.Samples), 1)
	n := min(len(full), len(half.Samples))
	var sig, noise float64
	for i := range n {
		sig += float64(full[i]) * float64(full[i])
		e := float64(full[i]) - float64(half.Samples[i])
		noise += e * e
	}
	snr := 10 * math.Log10(sig/noise)
	lm, err := WhisperLogMel(80)
	require.NoError(t, err)
	a, err := lm.Compute(ctx, full[:n], nil)
	require.NoError(t, err)
	b, err := lm.Compute(ctx, half.Samples[:n], nil)
	require.NoError(t, err)
	mean, p99, maxd := diffStats(a, b)
	t.Logf("half-rate vs full-rate decode at 16 kHz: SNR %.1f dB; log-mel mean abs %.3g, p99 %.3g, max %.3g", snr, mean, p99, maxd)
	require.Greater(t, snr, 60.0)
	require.LessOrEqual(t, mean, 5e-5)
	require.LessOrEqual(t, p99, 5e-4)
}
