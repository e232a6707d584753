//go:build cgo

package diffusionpipeline

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// openSD3Sim opens the simulated device with SD3.5's options and the pipeline's SD3.5
// programs from dir ("" = the full-size SD3Programs()).
func openSD3Sim(t *testing.T, dir string, t5 T5Tokenizer) (*SD3Pipeline, *TTNNSD3Device) {
	t.Helper()
	d := simDevice(t, 25_000_000, dir, SD3Programs(), NewTTNNSD3Device)
	p, err := NewSD3(d, testTokenizer(t), t5, SD35Config())
	require.NoError(t, err)
	return p, d
}

func TestSD3SimCallSequence(t *testing.T) {
	p, d := openSD3Sim(t, "testdata/small35", &fakeT5{})
	require.Equal(t, smallSD3Spec, d.Spec())
	require.Equal(t, Stats{TraceCaptures: 1}, d.Stats(), "warm-up captures the transformer trace")
	want := Stats{TraceCaptures: 1}
	for i, req := range []SD3Request{
		{Prompt: "the man", Steps: 4, GuidanceScale: 3.5, Seed: ptr[int64](1)},
		{Prompt: "an ant", NegativePrompt: "the", Steps: 2, GuidanceScale: 7, Seed: ptr[int64](2)},
		{Prompt: "the", Sigmas: []float64{1, 0.6, 0.3}, GuidanceScale: 1, Seed: ptr[int64](3)},
	} {
		sched, err := p.Schedule(req)
		require.NoError(t, err)
		steps := 0
		img, err := p.Generate(context.Background(), req, Hooks{Step: func(i, n int, _ func() []float32) error {
			steps = i
			require.Equal(t, sched.Len(), n)
			return nil
		}})
		require.NoError(t, err, "request %d", i)
		require.Equal(t, 64, img.Bounds().Dx())
		require.Equal(t, sched.Len(), steps)
		want.Encodes++
		want.TraceReplays += sched.Len()
		want.VAEDecodes++
		require.Equal(t, want, d.Stats(), "request %d: encoders once, transformer replayed N times, VAE once, no recapture", i)
	}
	c, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, uint64(1), c.Traces)
}

func TestSD3SimCancel(t *testing.T) {
	p, d := openSD3Sim(t, "testdata/small35", &fakeT5{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := p.Generate(ctx, SD3Request{Prompt: "the", Steps: 8, GuidanceScale: 3.5, Seed: ptr[int64](1)},
		Hooks{Step: func(i, _ int, _ func() []float32) error {
			if i == 3 {
				cancel()
			}
			return nil
		}})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: 3}, d.Stats())
	_, err = p.Generate(context.Background(), SD3Request{Prompt: "the", Steps: 2, GuidanceScale: 3.5, Seed: ptr[int64](1)}, Hooks{})
	require.NoError(t, err, "the device stays usable")
	require.Equal(t, Stats{Encodes: 2, TraceCaptures: 1, TraceReplays: 5, VAEDecodes: 1}, d.Stats())
}

func TestSD3SimDeterministic(t *testing.T) {
	p, _ := openSD3Sim(t, "testdata/small35", &fakeT5{})
	gen := func(req SD3Request) []byte {
		img, err := p.Generate(context.Background(), req, Hooks{})
		require.NoError(t, err)
		return img.Pix
	}
	req := SD3Request{Prompt: "the man", Steps: 3, GuidanceScale: 3.5, Seed: ptr[int64](77)}
	a := gen(req)
	require.Equal(t, a, gen(req))
	other := req
	other.Seed = ptr[int64](78)
	require.NotEqual(t, a, gen(other), "the seed reaches the image")
	other = req
	other.Prompt3 = "an ant"
	require.NotEqual(t, a, gen(other), "the T5 prompt reaches the image")
}

func TestSD3SimNoT5(t *testing.T) {
	p, d := openSD3Sim(t, "testdata/small35", nil)
	_, err := p.Generate(context.Background(), SD3Request{Prompt: "the", Steps: 2, GuidanceScale: 3.5, Seed: ptr[int64](1)}, Hooks{})
	require.NoError(t, err)
	require.Equal(t, Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: 2, VAEDecodes: 1}, d.Stats())
}

func TestSD3SimFullSize(t *testing.T) {
	p, d := openSD3Sim(t, "", &fakeT5{})
	require.Equal(t, SD3Spec{LatentChannels: 16, LatentHeight: 128, LatentWidth: 128, CLIPSeqLen: 77, CLIPHidden: 2048,
		PooledSize: 2048, T5SeqLen: 256, JointDim: 4096, ImageHeight: 1024, ImageWidth: 1024}, d.Spec())
	img, err := p.Generate(context.Background(), SD3Request{Prompt: "the man", Steps: 1, GuidanceScale: 3.5, Seed: ptr[int64](0)}, Hooks{})
	require.NoError(t, err)
	require.Equal(t, 1024, img.Bounds().Dx())
	require.Equal(t, Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: 1, VAEDecodes: 1}, d.Stats())
}

func TestSD3SimProgramMismatch(t *testing.T) {
	tests := []struct {
		name, prog, old, repl, msg string
	}{
		{"joint width", ProgSD3Transformer, "encoder_hidden_states bf16 2 333 32", "encoder_hidden_states bf16 2 333 33", "encoder_hidden_states"},
		{"joint sequence", ProgSD3Transformer, "encoder_hidden_states bf16 2 333 32", "encoder_hidden_states bf16 2 77 32", "encoder_hidden_states"},
		{"pooled size", ProgSD3Transformer, "pooled_projections bf16 2 24", "pooled_projections bf16 2 16", "pooled_projections"},
		{"latent channels", ProgSD3VAE, "latents bf16 1 16 8 8", "latents bf16 1 4 8 8", "latents"},
		{"t5 batch", ProgSD3TextEncoder3, "input_ids i32 2 256", "input_ids i32 1 256", "input_ids"},
		{"missing pooled", ProgSD3TextEncoder, "output text_embeds bf16 2 8", "", "text_embeds"},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{ProgSD3TextEncoder, ProgSD3TextEncoder2, ProgSD3TextEncoder3, ProgSD3Transformer, ProgSD3VAE} {
				b, err := os.ReadFile("testdata/small35/" + name + ".ttbsim")
				require.NoError(t, err)
				s := string(b)
				if name == tc.prog {
					require.Contains(t, s, tc.old)
					s = replaceOnce(s, tc.old, tc.repl)
				}
				require.NoError(t, os.WriteFile(dir+"/"+name+".ttbsim", []byte(s), 0o600))
			}
			dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, CommandQueues: 1})
			require.NoError(t, err)
			defer func() { require.NoError(t, dev.Close()) }()
			_, err = NewTTNNSD3Device(ctx, dev, os.DirFS(dir))
			require.ErrorContains(t, err, tc.msg)
			c, err := ttnn.Counts()
			require.NoError(t, err)
			require.Equal(t, ttnn.LiveCounts{Devices: 1}, c, "a failed construction frees what it made")
		})
	}
}

func replaceOnce(s, old, repl string) string { return strings.Replace(s, old, repl, 1) }

// BenchmarkSD3SimGenerate measures one full-size (1024x1024, 16x128x128 latents, 333x4096
// joint sequence) 20-step SD3.5 request with guidance on the simulator at latency scale 0.001:
// nearly all host time (tokenizing, bf16 conversion, transfers, CFG, scheduler, image mapping)
// plus the simulator's output generation.
func BenchmarkSD3SimGenerate(b *testing.B) {
	ctx := context.Background()
	dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, CommandQueues: 1, TraceRegionSize: 25_000_000})
	require.NoError(b, err)
	defer func() { require.NoError(b, dev.Close()) }()
	d, err := NewTTNNSD3Device(ctx, dev, SD3Programs())
	require.NoError(b, err)
	defer func() { require.NoError(b, d.Close()) }()
	p, err := NewSD3(d, testTokenizer(b), &fakeT5{}, SD35Config())
	require.NoError(b, err)
	for b.Loop() {
		_, err := p.Generate(ctx, SD3Request{Prompt: "the man", Steps: 20, GuidanceScale: 3.5, Seed: ptr[int64](1)}, Hooks{})
		require.NoError(b, err)
	}
}
