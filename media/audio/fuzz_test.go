package audio

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the fuzz seed corpora under testdata/fuzz")

// wavSeeds are small WAV files of every supported flavour plus a few broken ones.
func wavSeeds(t testing.TB) [][]byte {
	pcm := sweep(64, 2)
	mono := sweep(64, 1)
	list := chunk{"LIST", []byte("INFOISFT\x03\x00\x00\x00go\x00")}
	return [][]byte{
		makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16}, mono),
		makeWAV(t, wavSpec{tag: 1, ch: 2, rate: 44100, bits: 16, before: []chunk{list}}, pcm),
		makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 8000, bits: 8}, mono),
		makeWAV(t, wavSpec{tag: 1, ch: 2, rate: 48000, bits: 24, extensible: true}, pcm),
		makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 96000, bits: 32}, mono),
		makeWAV(t, wavSpec{tag: 3, ch: 1, rate: 16000, bits: 32, between: []chunk{{"fact", []byte{64, 0, 0, 0}}}}, mono),
		makeWAV(t, wavSpec{tag: 3, ch: 2, rate: 22050, bits: 64}, pcm),
		makeWAV(t, wavSpec{tag: 7, ch: 1, rate: 8000, bits: 8}, []float64{0, 1, 2, 255}),
		makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16, dataSize: u32p(0xFFFFFFFF), riffSize: u32p(0xFFFFFFFF)}, mono),
		makeWAV(t, wavSpec{tag: 1, ch: 1, rate: 16000, bits: 16, dataSize: u32p(4000)}, mono), // truncated
	}
}

// mp3Seeds are synthetic MPEG streams (silent and noisy frames, tags, Info/LAME frame).
func mp3Seeds() [][]byte {
	noisy := func(i int, b []byte) {
		x := uint32(i*2654435761 + 12345)
		for j := range b {
			x = x*1664525 + 1013904223
			b[j] = byte(x >> 24)
		}
	}
	return [][]byte{
		mp3Frames(hdrMPEG1L3, 3, nil),
		cat(id3(20, true), mp3Frames(hdrMPEG1L3, 2, nil), []byte("TAG"), make([]byte, 125)),
		cat(xingFrame(3, 576, 100), mp3Frames(hdrMPEG1L3, 3, nil)),
		mp3Frames(hdrMPEG2L3, 3, nil),
		mp3Frames(hdrMPEG1L3, 3, noisy),
		mp3Frames([]byte{0xFF, 0xFB, 0x50, 0x00}, 4, noisy), // 64 kbit/s stereo
		mp3Frames(hdrMPEG25, 2, nil),
	}
}

func sniffSeeds(t testing.TB) [][]byte {
	s := [][]byte{
		nil,
		[]byte("fLaC\x00\x00\x00\x22"),
		[]byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00OpusHead"),
		[]byte("\x00\x00\x00\x20ftypM4A "),
		[]byte("ID3\x04\x00\x10\x00\x00\x00\x05hello3DI\x04\x00\x10\x00\x00\x00\x05"),
		[]byte("hello, this is text"),
	}
	s = append(s, wavSeeds(t)[0][:64], vorbisSeeds(t)[1][:120], opusSeeds(t)[0][:80])
	return append(s, mp3Seeds()[1][:120])
}

// TestWriteFuzzSeeds writes the seed corpora (go test -run TestWriteFuzzSeeds -update-seeds).
func TestWriteFuzzSeeds(t *testing.T) {
	sets := map[string][][]byte{
		"FuzzDecode": decodeSeeds(t), "FuzzMP3": mp3Seeds(), "FuzzSniff": sniffSeeds(t), "FuzzFLAC": flacSeeds(t),
		"FuzzWAV": wavSeeds(t), "FuzzVorbis": vorbisSeeds(t), "FuzzOpus": opusSeeds(t),
		"FuzzWebM": webmSeeds(t), "FuzzMP4": mp4Seeds(t),
	}
	for name, seeds := range sets {
		dir := filepath.Join("testdata", "fuzz", name)
		for i, s := range seeds {
			path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
			want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
			if *updateSeeds {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run: go test -run TestWriteFuzzSeeds -update-seeds")
			require.Equal(t, want, string(got), "seed corpus is stale: run with -update-seeds")
		}
	}
}

// checkDecodeResult holds for any input: errors wrap exactly the client sentinels, successes
// are consistent and finite.
func checkDecodeResult(t *testing.T, d *Decoded, err error, lim Limits) {
	if err != nil {
		require.Nil(t, d)
		n := 0
		for _, s := range []error{ErrInvalidAudio, ErrUnsupportedFormat, ErrTooLarge, ErrTooLong} {
			if errors.Is(err, s) {
				n++
			}
		}
		require.Equal(t, 1, n, "error must wrap exactly one sentinel: %v", err)
		return
	}
	require.NotEmpty(t, d.Samples)
	require.GreaterOrEqual(t, d.SourceChannels, 1)
	require.LessOrEqual(t, d.Duration, lim.MaxDuration)
	for _, v := range d.Samples {
		require.False(t, math.IsNaN(float64(v)) || math.IsInf(float64(v), 0))
	}
}

// decodeSeeds are the WAV seeds and one of every other format.
func decodeSeeds(t testing.TB) [][]byte {
	return append(wavSeeds(t), mp3Seeds()[2], flacSeeds(t)[0], vorbisSeeds(t)[1], opusSeeds(t)[0], webmSeeds(t)[0], mp4Seeds(t)[0])
}

// fuzzDecode fuzzes Decode (1 MiB, 30 s limits, ffmpeg disabled) from seeds: every input ends
// in a consistent result or exactly one client error; more, when set, checks further.
func fuzzDecode(f *testing.F, seeds [][]byte, more func(t *testing.T, data []byte, err error)) {
	for _, s := range seeds {
		f.Add(s)
	}
	lim := Limits{MaxBytes: 1 << 20, MaxDuration: 30}
	withoutFFmpeg(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(context.Background(), data, 16000, lim)
		checkDecodeResult(t, d, err, lim)
		if more != nil {
			more(t, data, err)
		}
	})
}

func FuzzDecode(f *testing.F) { fuzzDecode(f, decodeSeeds(f), nil) }

func FuzzMP3(f *testing.F) { fuzzDecode(f, mp3Seeds(), nil) }

func FuzzSniff(f *testing.F) {
	for _, s := range sniffSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		format, err := Sniff(data)
		if err != nil {
			require.Empty(t, format)
			require.True(t, errors.Is(err, ErrInvalidAudio) || errors.Is(err, ErrUnsupportedFormat), "%v", err)
			return
		}
		require.Contains(t, []string{FormatWAV, FormatMP3, FormatFLAC, FormatVorbis, FormatOpus, FormatWebM, FormatMP4}, format)
	})
}
