package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
)

// TestAudioDecode: the subcommand writes what the transcription routes decode, as a 16-bit PCM
// mono WAV (go-audio/wav's encoder) that our own WAV parser reads back to the same samples
// within the 16-bit quantisation.
func TestAudioDecode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		rate int
	}{
		{"../../media/audio/testdata/browser/webm_opus_48k_stereo_64k.webm", 16000},
		{"../../media/audio/testdata/ogg/vorbis_44k1_stereo_oggenc_q0.ogg", 16000},
		{"../../media/mp3dec/testdata/mpeg2_24k_joint.mp3", 8000},
	} {
		t.Run(filepath.Base(tc.in), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.wav")
			var stderr bytes.Buffer
			args := []string{tc.in, out}
			if tc.rate != 16000 {
				args = append([]string{"--rate", "8000"}, args...)
			}
			require.NoError(t, audioDecode(context.Background(), args, nil, nil, &stderr))
			require.Contains(t, stderr.String(), "mono 16-bit WAV")
			wavBytes, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, "RIFF", string(wavBytes[:4]))
			require.Equal(t, uint32(len(wavBytes)-8), binary.LittleEndian.Uint32(wavBytes[4:]), "RIFF size patched")
			require.Equal(t, uint16(1), binary.LittleEndian.Uint16(wavBytes[20:]), "PCM")
			require.Equal(t, uint16(1), binary.LittleEndian.Uint16(wavBytes[22:]), "mono")
			require.Equal(t, uint32(tc.rate), binary.LittleEndian.Uint32(wavBytes[24:]))
			require.Equal(t, uint16(16), binary.LittleEndian.Uint16(wavBytes[34:]))

			src, err := os.ReadFile(tc.in)
			require.NoError(t, err)
			want, err := audio.Decode(context.Background(), src, tc.rate, audio.Limits{})
			require.NoError(t, err)
			got, err := audio.Decode(context.Background(), wavBytes, 0, audio.Limits{})
			require.NoError(t, err)
			require.Equal(t, tc.rate, got.SampleRate)
			require.Len(t, got.Samples, len(want.Samples))
			for i, v := range want.Samples {
				require.InDelta(t, v, got.Samples[i], 0.5/32768+1e-7, "sample %d", i)
			}
		})
	}
}

func TestAudioDecodeStdio(t *testing.T) {
	src, err := os.ReadFile("../../media/mp3dec/testdata/mpeg25_8k_mono.mp3")
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.NoError(t, audioDecode(context.Background(), []string{"-", "-"}, bytes.NewReader(src), &stdout, &stderr))
	d, err := audio.Decode(context.Background(), stdout.Bytes(), 0, audio.Limits{})
	require.NoError(t, err)
	require.Equal(t, 16000, d.SampleRate)

	err = audioDecode(context.Background(), []string{"-", "-"}, strings.NewReader("not audio"), &stdout, &stderr)
	require.ErrorIs(t, err, audio.ErrUnsupportedFormat)
	err = audioDecode(context.Background(), []string{"--rate", "10", "-", "-"}, strings.NewReader(""), &stdout, &stderr)
	require.ErrorContains(t, err, "--rate 10 is outside")
	err = audioDecode(context.Background(), []string{"one"}, nil, &stdout, &stderr)
	require.ErrorContains(t, err, "want IN and OUT")
}

// BenchmarkWriteWAV16: go-audio/wav's encoder on 60 s at 16 kHz (one binary.Write per sample).
func BenchmarkWriteWAV16(b *testing.B) {
	s := make([]float32, 60*16000)
	for i := range s {
		s[i] = float32(i%200)/200 - 0.5
	}
	for b.Loop() {
		var ws writeSeeker
		if err := writeWAV16(&ws, s, 16000); err != nil {
			b.Fatal(err)
		}
	}
}
