package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedTestdata locates ../shared/testdata beside the repository root.
func sharedTestdata(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("repository root (go.mod) not found")
		}
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "testdata")
	if _, err := os.Stat(filepath.Join(d, "whisper", "mel_filters.npz")); err != nil {
		t.Skipf("shared test data not found at %s (it lives beside the repo, ../shared/testdata)", d)
	}
	return d
}

func f32s(t *testing.T, b []byte) []float32 {
	t.Helper()
	require.Zero(t, len(b)%4)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestAudioFeaturesGolden runs the subcommand through run() on the 16 kHz WAV that whisper's
// goldens were made from: WAV decoding (int16/32768) + log-mel must match within 1e-4.
func TestAudioFeaturesGolden(t *testing.T) {
	td := sharedTestdata(t)
	in := filepath.Join(td, "audio", "speech_a_16k_s16_mono.wav")
	for _, tc := range []struct {
		nMels string
		extra []string
	}{
		{"80", nil},
		{"128", nil},
		{"80", []string{"--mel-filters", filepath.Join(td, "whisper", "mel_filters.npz")}},
	} {
		t.Run(tc.nMels+strings.Join(tc.extra, "_"), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "mel.f32")
			var stderr bytes.Buffer
			args := append([]string{"audio-features", "--n-mels", tc.nMels}, tc.extra...)
			require.NoError(t, run(context.Background(), append(args, in, out), &stderr))
			require.Contains(t, stderr.String(), "16000 Hz, 1 ch")
			raw, err := os.ReadFile(out)
			require.NoError(t, err)
			got := f32s(t, raw)
			goldRaw, err := os.ReadFile(filepath.Join(td, "whisper", "speech_a_16k_s16_mono.mel"+tc.nMels+".f32"))
			require.NoError(t, err)
			want := f32s(t, goldRaw)
			require.Len(t, got, len(want))
			worst, at := 0.0, 0
			for i := range want {
				if d := math.Abs(float64(got[i]) - float64(want[i])); d > worst {
					worst, at = d, i
				}
			}
			require.LessOrEqual(t, worst, 1e-4, "mel %d frame %d", at/3000, at%3000)
		})
	}
}

func TestAudioFeaturesStdio(t *testing.T) {
	td := sharedTestdata(t)
	wav, err := os.ReadFile(filepath.Join(td, "audio", "speech_a_44k1_s16_stereo.wav"))
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.NoError(t, audioFeatures(context.Background(), []string{"--n-mels", "128", "-", "-"},
		bytes.NewReader(wav), &stdout, &stderr))
	require.Equal(t, 4*128*3000, stdout.Len())
	require.Contains(t, stderr.String(), "wav, 44100 Hz, 2 ch")
}

func TestAudioFeaturesErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "x.wav")
	require.NoError(t, os.WriteFile(text, []byte("not audio at all, just text"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"n-mels", []string{"--n-mels", "64", text, filepath.Join(dir, "o")}, "80 or 128"},
		{"one arg", []string{text}, "want IN and OUT"},
		{"bad flag", []string{"--frobnicate", text, "o"}, "frobnicate"},
		{"missing input", []string{filepath.Join(dir, "absent.wav"), filepath.Join(dir, "o")}, "no such file"},
		{"not audio", []string{text, filepath.Join(dir, "o")}, "unsupported audio format"},
		{"bad filters", []string{"--mel-filters", text, text, filepath.Join(dir, "o")}, "invalid mel filter bank"},
		{"unwritable output", []string{"--n-mels", "80", filepath.Join(sharedTestdata(t), "audio", "speech_c_16k_u8_mono.wav"),
			filepath.Join(dir, "no", "such", "dir", "o")}, "write output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := audioFeatures(context.Background(), tc.args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
