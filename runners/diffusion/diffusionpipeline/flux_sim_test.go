//go:build cgo

package diffusionpipeline

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// openFluxSim opens the simulated device and one Flux variant's programs from dir ("" = the
// full-size FluxPrograms()).
func openFluxSim(t *testing.T, dir string, v FluxVariant) (*FluxPipeline, *TTNNFluxDevice) {
	t.Helper()
	d := simDevice(t, 25_000_000, dir, FluxPrograms(), func(ctx context.Context, dev *ttnn.Device, set fs.FS) (*TTNNFluxDevice, error) {
		return NewTTNNFluxDevice(ctx, dev, set, v)
	})
	p, err := NewFlux(d, testTokenizer(t), &fakeT5{}, v.Config())
	require.NoError(t, err)
	return p, d
}

// TestFluxSimCallSequence is the call sequence of Flux images on the simulator: at warm-up
// every program runs once and the transformer step is captured in a trace; per image CLIP-L
// and T5 run once (Encodes), the transformer trace is replayed once per step with the packed
// latents, and the VAE decodes once; the trace is never captured again.
func TestFluxSimCallSequence(t *testing.T) {
	for _, tc := range []struct {
		v    FluxVariant
		spec FluxSpec
		reqs []FluxRequest
	}{
		{FluxDev, smallFluxSpec, []FluxRequest{
			{Prompt: "the man", Steps: 4, Seed: ptr[int64](1)},
			{Prompt: "an ant", Prompt2: "the", Steps: 28, GuidanceScale: 5, Seed: ptr[int64](2)},
			{Prompt: "the", Sigmas: []float64{1, 0.6, 0.3}, Seed: ptr[int64](3)},
		}},
		{FluxSchnell, func() FluxSpec { s := smallFluxSpec; s.Guidance, s.T5SeqLen = false, 6; return s }(), []FluxRequest{
			{Prompt: "the man", Steps: 4, Seed: ptr[int64](1)},
			{Prompt: "the", Steps: 1, Seed: ptr[int64](2)},
		}},
	} {
		t.Run(tc.v.Prefix(), func(t *testing.T) {
			p, d := openFluxSim(t, "testdata/smallflux", tc.v)
			require.Equal(t, tc.spec, d.Spec())
			require.Equal(t, 16, d.Spec().ImageSeqLen(), "8x8 latents are 16 packed tokens")
			require.Equal(t, Stats{TraceCaptures: 1}, d.Stats(), "warm-up captures the transformer trace")
			want := Stats{TraceCaptures: 1}
			for i, req := range tc.reqs {
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
		})
	}
}

func TestFluxSimDeterministic(t *testing.T) {
	p, _ := openFluxSim(t, "testdata/smallflux", FluxDev)
	gen := func(req FluxRequest) []byte {
		img, err := p.Generate(context.Background(), req, Hooks{})
		require.NoError(t, err)
		return img.Pix
	}
	req := FluxRequest{Prompt: "the man", Steps: 4, Seed: ptr[int64](77)}
	a := gen(req)
	require.Equal(t, a, gen(req))
	for _, change := range []func(r *FluxRequest){
		func(r *FluxRequest) { r.Seed = ptr[int64](78) },
		func(r *FluxRequest) { r.Prompt2 = "an ant" },
		func(r *FluxRequest) { r.GuidanceScale = 4.5 },
	} {
		other := req
		change(&other)
		require.NotEqual(t, a, gen(other), "%+v reaches the image", other)
	}
}

func TestFluxSimFullSize(t *testing.T) {
	for _, tc := range []struct {
		v  FluxVariant
		t5 int
	}{{FluxDev, 512}, {FluxSchnell, 256}} {
		t.Run(tc.v.Prefix(), func(t *testing.T) {
			p, d := openFluxSim(t, "", tc.v)
			require.Equal(t, FluxSpec{LatentChannels: 16, LatentHeight: 128, LatentWidth: 128, CLIPSeqLen: 77, PooledSize: 768,
				T5SeqLen: tc.t5, JointDim: 4096, Guidance: tc.v == FluxDev, ImageHeight: 1024, ImageWidth: 1024}, d.Spec())
			require.Equal(t, 4096, d.Spec().ImageSeqLen())
			require.InDelta(t, 1.15, p.Mu(), 1e-12, "1024x1024 is max_image_seq_len: mu is max_shift")
			img, err := p.Generate(context.Background(), FluxRequest{Prompt: "the man", Steps: 1, Seed: ptr[int64](0)}, Hooks{})
			require.NoError(t, err)
			require.Equal(t, 1024, img.Bounds().Dx())
			require.Equal(t, Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: 1, VAEDecodes: 1}, d.Stats())
		})
	}
}

func TestFluxSimProgramMismatch(t *testing.T) {
	tests := []struct {
		name, prog, old, repl, msg string
	}{
		{"packed width", "flux1-dev-transformer", "hidden_states bf16 1 16 64", "hidden_states bf16 1 16 32", "hidden_states"},
		{"image ids", "flux1-dev-transformer", "img_ids f32 16 3", "img_ids f32 8 3", "img_ids"},
		{"t5 length", "flux1-dev-transformer", "encoder_hidden_states bf16 1 12 32", "encoder_hidden_states bf16 1 10 32", "encoder_hidden_states"},
		{"pooled size", "flux1-dev-text-encoder", "pooled_output bf16 1 8", "pooled_output bf16 1 4", "pooled_projections"},
		{"odd latents", "flux1-dev-vae", "latents bf16 1 16 8 8", "latents bf16 1 16 7 8", "2x2"},
		{"guidance dtype", "flux1-dev-transformer", "guidance f32 1", "guidance bf16 1", "guidance"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ents, err := os.ReadDir("testdata/smallflux")
			require.NoError(t, err)
			for _, e := range ents {
				b, err := os.ReadFile("testdata/smallflux/" + e.Name())
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
			_, err = NewTTNNFluxDevice(ctx, dev, os.DirFS(dir), FluxDev)
			require.ErrorContains(t, err, tc.msg)
			c, err := ttnn.Counts()
			require.NoError(t, err)
			require.Zero(t, c.Programs, "a refused set is freed")
		})
	}
}
