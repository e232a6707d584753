package audioenc

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
)

func tone(n, rate int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(0.4 * math.Sin(2*math.Pi*220*float64(i)/float64(rate)))
	}
	return x
}

// needFFmpeg skips without ffmpeg/ffprobe, except under CI=true (.ci/run installs them).
func needFFmpeg(t *testing.T) string {
	t.Helper()
	probe, err := exec.LookPath("ffprobe")
	if err != nil || audio.FFmpegPath() == "" {
		require.NotEqual(t, "true", os.Getenv("CI"), "ffmpeg and ffprobe must be installed in CI (.ci/run)")
		t.Skip("ffmpeg/ffprobe not installed (Debian: apt-get install ffmpeg)")
	}
	return probe
}

type probed struct {
	Streams []struct {
		CodecName  string `json:"codec_name"`
		SampleRate string `json:"sample_rate"`
		Channels   int    `json:"channels"`
	} `json:"streams"`
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
	} `json:"format"`
}

func ffprobe(t *testing.T, bin string, data []byte, format string) probed {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a."+format)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	args := []string{"-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels:format=format_name,duration", "-of", "json"}
	if format == PCM {
		args = append(args, "-f", "s16le", "-ar", "24000", "-ac", "1")
	}
	out, err := exec.Command(bin, append(args, path)...).Output()
	require.NoError(t, err, format)
	var p probed
	require.NoError(t, json.Unmarshal(out, &p))
	require.Len(t, p.Streams, 1, format)
	return p
}

// Every format encodes 1.5 s of 16 kHz speech into a file ffprobe reads with the expected codec,
// rate and duration, both as a whole and streamed in pieces.
func TestFormatsProbe(t *testing.T) {
	bin := needFFmpeg(t)
	const rate = 16000
	x := tone(24000, rate)
	for _, tc := range []struct {
		format, codec string
		outRate       int
		rate          string
	}{
		{WAV, "pcm_s16le", 0, "16000"},
		{PCM, "pcm_s16le", 24000, "24000"},
		{FLAC, "flac", 0, "16000"},
		{MP3, "mp3", 0, "16000"},
		{Opus, "opus", 0, "48000"},
		{AAC, "aac", 0, "16000"},
		{Vorbis, "vorbis", 0, "16000"},
	} {
		for _, streamed := range []bool{false, true} {
			t.Run(tc.format+map[bool]string{false: "/whole", true: "/streamed"}[streamed], func(t *testing.T) {
				t.Parallel() // each run waits mostly on ffmpeg and ffprobe starting
				var buf bytes.Buffer
				o := Options{Rate: rate, OutRate: tc.outRate}
				if streamed {
					s, err := New(context.Background(), tc.format, &buf, o)
					require.NoError(t, err)
					for i := 0; i < len(x); i += 5000 {
						require.NoError(t, s.Write(x[i:min(i+5000, len(x))]))
					}
					require.NoError(t, s.Close())
				} else {
					require.NoError(t, Encode(context.Background(), tc.format, &buf, x, o))
				}
				p := ffprobe(t, bin, buf.Bytes(), tc.format)
				require.Equal(t, tc.codec, p.Streams[0].CodecName)
				require.Equal(t, tc.rate, p.Streams[0].SampleRate)
				require.Equal(t, 1, p.Streams[0].Channels)
				if !streamed && tc.format != PCM { // a whole file says how long it is
					require.NotContains(t, []string{"", "N/A"}, p.Format.Duration, "%s: ffprobe reports no duration", tc.format)
				}
				if p.Format.Duration != "" && p.Format.Duration != "N/A" && !(streamed && tc.format == WAV) {
					d, err := strconv.ParseFloat(p.Format.Duration, 64)
					require.NoError(t, err)
					require.InDelta(t, 1.5, d, 0.12, "%s duration", tc.format)
				}
			})
		}
	}
}

func TestPureGoFormats(t *testing.T) {
	x := tone(16000, 16000)
	var buf bytes.Buffer
	require.NoError(t, Encode(context.Background(), WAV, &buf, x, Options{Rate: 16000}))
	b := buf.Bytes()
	require.Equal(t, "RIFF", string(b[:4]))
	require.Equal(t, uint32(len(b)-8), binary.LittleEndian.Uint32(b[4:]))
	require.Equal(t, 44+2*16000, len(b))

	buf.Reset()
	require.NoError(t, Encode(context.Background(), PCM, &buf, x, Options{Rate: 16000, OutRate: 24000}))
	require.InDelta(t, 2*24000, buf.Len(), 4)

	buf.Reset()
	require.NoError(t, Encode(context.Background(), FLAC, &buf, x, Options{Rate: 16000}))
	require.Equal(t, "fLaC", string(buf.Bytes()[:4]))
	require.Less(t, buf.Len(), 2*16000, "compressed")

	_, err := New(context.Background(), "wma", &buf, Options{Rate: 16000})
	require.ErrorIs(t, err, ErrUnknownFormat)
}

// FLAC's STREAMINFO carries the total sample count and the MD5 wherever the stream can be
// rewritten (a whole file, a seekable writer), and "unknown" (0) when streamed to a plain writer.
func TestFLACStreamInfo(t *testing.T) {
	x := tone(20000, 16000)
	file, err := os.Create(filepath.Join(t.TempDir(), "a.flac"))
	require.NoError(t, err)
	defer file.Close()
	for _, tc := range []struct {
		name  string
		write func(t *testing.T) []byte
		total uint64
	}{
		{"whole", func(t *testing.T) []byte {
			var buf bytes.Buffer
			require.NoError(t, Encode(context.Background(), FLAC, &buf, x, Options{Rate: 16000}))
			return buf.Bytes()
		}, 20000},
		{"whole resampled", func(t *testing.T) []byte {
			var buf bytes.Buffer
			require.NoError(t, Encode(context.Background(), FLAC, &buf, x, Options{Rate: 16000, OutRate: 24000}))
			return buf.Bytes()
		}, 30000},
		{"streamed to a file", func(t *testing.T) []byte {
			s, err := New(context.Background(), FLAC, file, Options{Rate: 16000})
			require.NoError(t, err)
			for i := 0; i < len(x); i += 3000 {
				require.NoError(t, s.Write(x[i:min(i+3000, len(x))]))
			}
			require.NoError(t, s.Close())
			data, err := os.ReadFile(file.Name())
			require.NoError(t, err)
			return data
		}, 20000},
		{"streamed to a plain writer", func(t *testing.T) []byte {
			var buf bytes.Buffer
			s, err := New(context.Background(), FLAC, &buf, Options{Rate: 16000})
			require.NoError(t, err)
			require.NoError(t, s.Write(x))
			require.NoError(t, s.Close())
			return buf.Bytes()
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.write(t)
			stream, err := flac.New(bytes.NewReader(data))
			require.NoError(t, err)
			require.Equal(t, tc.total, stream.Info.NSamples)
			var decoded uint64
			for {
				f, err := stream.ParseNext()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				decoded += uint64(f.Subframes[0].NSamples)
			}
			if tc.total > 0 {
				require.Equal(t, tc.total, decoded, "STREAMINFO's count is the frames' count")
				require.NotEqual(t, [16]byte{}, stream.Info.MD5sum, "no MD5 in a rewritable stream")
			} else {
				require.Equal(t, uint64(20000), decoded)
			}
		})
	}
}

// Without ffmpeg the ffmpeg formats are refused, naming what is missing, and not listed.
func TestMissingFFmpeg(t *testing.T) {
	old := ffmpegBinary
	ffmpegBinary = func() string { return "" }
	defer func() { ffmpegBinary = old }()
	for _, f := range []string{MP3, Opus, AAC, Vorbis} {
		err := Check(f)
		require.ErrorIs(t, err, ErrUnavailable)
		require.ErrorContains(t, err, "ffmpeg")
		_, err = New(context.Background(), f, &bytes.Buffer{}, Options{Rate: 16000})
		require.ErrorIs(t, err, ErrUnavailable)
	}
	require.Equal(t, []string{WAV, PCM, FLAC}, Available())
}
