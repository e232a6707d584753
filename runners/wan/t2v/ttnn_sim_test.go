//go:build cgo

package t2v

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/simtest"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestMain(m *testing.M) {
	simtest.Setup(1, "0.0001")
	os.Exit(m.Run())
}

// openTTNN opens the simulated 1x1 device and the programs of set.
func openTTNN(t *testing.T, set fs.FS, prefix string) (*Pipeline, *TTNNDevice) {
	t.Helper()
	ctx := context.Background()
	dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768,
		TraceRegionSize: 25_000_000, CommandQueues: 1, ProgramCache: true})
	require.NoError(t, err)
	d, err := NewTTNNDevice(ctx, dev, set, prefix)
	if err != nil {
		require.NoError(t, dev.Close())
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		require.NoError(t, dev.Close())
		c, err := ttnn.Counts()
		require.NoError(t, err)
		require.Zero(t, c.Programs+c.Tensors, "every program and tensor is freed")
	})
	p, err := New(d, testTokenizer(t), Wan22Config())
	require.NoError(t, err)
	return p, d
}

// TestTTNNSimCallSequence is the call sequence of a Wan2.2 clip on the ttnn simulator (the
// declared programs, shrunk): the UMT5 encoder runs twice per clip (prompt and negative
// prompt), each step runs one expert's program twice — wan22-t2v-transformer while the
// timestep is >= 875, then wan22-t2v-transformer-2 — and the VAE once; the clip is
// deterministic in prompt and seed.
func TestTTNNSimCallSequence(t *testing.T) {
	p, d := openTTNN(t, os.DirFS("testdata/smallwan"), Prefix480)
	sh, err := ShapeFor(17, 64, 48)
	require.NoError(t, err)
	require.Equal(t, Spec{Shape: sh, TextLen: 512, TextDim: 32}, d.Spec())
	want := TTNNStats{}
	var first [][]byte
	for i, req := range []Request{
		{Prompt: "a red fox in snow", Steps: 8, Seed: 1},
		{Prompt: "a red fox in snow", Steps: 8, Seed: 1},
		{Prompt: "a red fox in snow", Steps: 8, Seed: 2},
		{Prompt: "a whale in the sky", NegativePrompt: "static", Steps: 3, Seed: 1},
	} {
		sched, err := Wan22Config().Sampler.Schedule(req.Steps)
		require.NoError(t, err)
		frames, err := p.Generate(context.Background(), req, Hooks{})
		require.NoError(t, err)
		require.Len(t, frames, 17)
		want.Encodes += 2
		for _, ts := range sched.Timesteps {
			if ts >= 875 {
				want.Runs[HighNoise] += 2
			} else {
				want.Runs[LowNoise] += 2
			}
		}
		want.VAEs++
		require.Equal(t, want, d.Stats(), "request %d", i)
		switch i {
		case 0:
			first = frames
		case 1:
			require.Equal(t, first, frames, "same prompt and seed, same clip")
		default:
			require.NotEqual(t, first, frames, "request %d: prompt and seed reach the clip", i)
		}
	}
	require.Positive(t, want.Runs[LowNoise])
}

// TestTTNNSimFullSize loads the full-size manifests (81 frames at 832x480 on the T3K set and
// 1280x720 on the Galaxy set, UMT5 512x4096): the spec the device derives from them is Wan2.2's.
func TestTTNNSimFullSize(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		w, h   int
		latent Shape
	}{
		{Prefix480, 832, 480, Shape{Frames: 81, Height: 480, Width: 832, LatentFrames: 21, LatentHeight: 60, LatentWidth: 104}},
		{Prefix720, 1280, 720, Shape{Frames: 81, Height: 720, Width: 1280, LatentFrames: 21, LatentHeight: 90, LatentWidth: 160}},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			_, d := openTTNN(t, Programs(), tc.prefix)
			sh, err := ShapeFor(81, tc.h, tc.w)
			require.NoError(t, err)
			require.Equal(t, tc.latent, sh)
			require.Equal(t, Spec{Shape: sh, TextLen: 512, TextDim: 4096}, d.Spec())
		})
	}
}

// TestTTNNSimProgramMismatch: programs that do not fit together are refused at load, naming
// the tensor, and everything loaded is freed.
func TestTTNNSimProgramMismatch(t *testing.T) {
	for _, tc := range []struct{ name, prog, old, repl, msg string }{
		{"text length", "wan22-t2v-transformer", "encoder_hidden_states bf16 1 512 32", "encoder_hidden_states bf16 1 256 32", "encoder_hidden_states"},
		{"expert shapes", "wan22-t2v-transformer-2", "hidden_states bf16 1 16 5 8 6", "hidden_states bf16 1 16 5 8 8", "experts"},
		{"vae frames", "wan22-t2v-vae", "video bf16 1 3 17 64 48", "video bf16 1 3 16 64 48", "VAE output"},
		{"channels", "wan22-t2v-transformer", "input hidden_states bf16 1 16 5 8 6", "input hidden_states bf16 1 8 5 8 6", "[1,16,F,H,W]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ents, err := os.ReadDir("testdata/smallwan")
			require.NoError(t, err)
			for _, e := range ents {
				b, err := os.ReadFile("testdata/smallwan/" + e.Name())
				require.NoError(t, err)
				if e.Name() == tc.prog+".ttbsim" {
					require.Contains(t, string(b), tc.old)
					b = []byte(strings.Replace(string(b), tc.old, tc.repl, 1))
				}
				require.NoError(t, os.WriteFile(dir+"/"+e.Name(), b, 0o644))
			}
			ctx := context.Background()
			dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, L1SmallSize: 32768,
				TraceRegionSize: 25_000_000, CommandQueues: 1, ProgramCache: true})
			require.NoError(t, err)
			defer func() { require.NoError(t, dev.Close()) }()
			_, err = NewTTNNDevice(ctx, dev, os.DirFS(dir), Prefix480)
			require.ErrorContains(t, err, tc.msg)
			c, err := ttnn.Counts()
			require.NoError(t, err)
			require.Zero(t, c.Programs, "a refused set is freed")
		})
	}
}
