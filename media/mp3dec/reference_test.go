package mp3dec

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The fixtures in testdata are made by scripts/gen-mp3-fixtures.sh from synthetic signals.
var fixtures = []string{"dualchannel_44k1_blocktypes.mp3", "mpeg2_24k_joint.mp3", "stereo_44k1_intensity.mp3",
	"mpeg25_8k_mono.mp3", "mpeg25_12k_joint.mp3"}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// fixtureStats decodes a fixture frame by frame and counts what it exercised.
type fixtureStats struct {
	version, frames, granules, short, mismatched, midSide, intensityBands int
}

func decodeFixture(t *testing.T, name string) ([]float32, fixtureStats) {
	t.Helper()
	fs := frames(t, readFixture(t, name))
	d := New()
	var out []float32
	var st fixtureStats
	for _, f := range fs {
		h, _ := ParseHeader(f)
		var err error
		out, err = d.Decode(f, out)
		require.NoError(t, err)
		st.version = h.Version
		st.frames++
		if h.Mode == 1 && h.ModeExt&2 != 0 {
			st.midSide++
		}
		ngr := 2
		if h.Version != 1 {
			ngr = 1
		}
		for gr := 0; gr < ngr; gr++ {
			st.granules++
			g0, g1 := d.gi[gr][0], d.gi[gr][1]
			if g0.blockType == 2 || g1.blockType == 2 {
				st.short++
			}
			if h.Channels == 2 && g0.blockType != g1.blockType {
				st.mismatched++
			}
		}
	}
	require.Zero(t, d.Concealed())
	st.intensityBands = d.isBands
	return out, st
}

// TestFixtures: each fixture reaches the decoder paths it was made for.
func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(t *testing.T, st fixtureStats)
	}{
		{"dualchannel_44k1_blocktypes.mp3", func(t *testing.T, st fixtureStats) {
			require.Positive(t, st.mismatched, "granules with different block types per channel")
			require.Zero(t, st.midSide)
		}},
		{"mpeg2_24k_joint.mp3", func(t *testing.T, st fixtureStats) {
			require.Equal(t, 2, st.version)
			require.Positive(t, st.short)
			require.Positive(t, st.midSide)
		}},
		{"stereo_44k1_intensity.mp3", func(t *testing.T, st fixtureStats) {
			require.Positive(t, st.intensityBands)
			require.Positive(t, st.short)
		}},
		{"mpeg25_8k_mono.mp3", func(t *testing.T, st fixtureStats) {
			require.Equal(t, 25, st.version)
			require.Positive(t, st.short)
		}},
		{"mpeg25_12k_joint.mp3", func(t *testing.T, st fixtureStats) {
			require.Equal(t, 25, st.version)
			require.Positive(t, st.short)
			require.Positive(t, st.midSide)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := decodeFixture(t, tc.name)
			t.Logf("%+v", st)
			tc.check(t, st)
		})
	}
}

// TestMatchesReference: every fixture decodes like mpg123 (floating-point output, no gapless
// trimming; its channels are averaged here as mp3dec does). Skipped without mpg123; the fixture
// script installs it and runs this test.
func TestMatchesReference(t *testing.T) {
	mpg123, err := exec.LookPath("mpg123")
	if err != nil {
		t.Skip("mpg123 is not installed; scripts/gen-mp3-fixtures.sh installs it and runs this test")
	}
	shared := []string{"speech_b_44k1_cbr128_stereo_id3.mp3", "speech_a_22k05_vbr_mono.mp3"}
	for _, name := range append(fixtures, shared...) {
		t.Run(name, func(t *testing.T) {
			var data []byte
			var got []float32
			if slices.Contains(shared, name) {
				data = testAudio(t, name)
				got = decodeAll(t, New(), frames(t, data))
			} else {
				data = readFixture(t, name)
				got, _ = decodeFixture(t, name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, mpg123, "--quiet", "--no-gapless", "--encoding", "f32", "--stdout", "-")
			cmd.Stdin = bytes.NewReader(data)
			raw, err := cmd.Output()
			require.NoError(t, err)
			h, _ := ParseHeader(frames(t, data)[0])
			ref := make([]float32, len(raw)/4/h.Channels)
			for i := range ref {
				var sum float32
				for c := range h.Channels {
					sum += math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*h.Channels+c):]))
				}
				ref[i] = sum / float32(h.Channels)
			}
			require.Len(t, got, len(ref))
			s := snr(ref, got)
			t.Logf("%s: %d samples, SNR against mpg123 %.1f dB", name, len(got), s)
			require.Greater(t, s, 110.0)
		})
	}
}
