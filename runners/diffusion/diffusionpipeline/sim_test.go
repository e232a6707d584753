//go:build cgo

package diffusionpipeline

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/internal/simtest"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func TestMain(m *testing.M) {
	simtest.Setup(1, "0.001")
	goleak.VerifyTestMain(m)
}

// openSim opens the simulated device (SDXL's n150 options) and the pipeline's programs from
// dir ("" = the full-size Programs()). The simulator allows one open device per process, so
// these tests do not run in parallel.
func openSim(t *testing.T, dir string) (*Pipeline, *TTNNDevice) {
	t.Helper()
	return openSimVariant(t, dir, TextToImage)
}

func TestSimCallSequence(t *testing.T) {
	p, d := openSim(t, "testdata/small")
	require.Equal(t, smallSpec, d.Spec())
	require.Equal(t, Stats{TraceCaptures: 1}, d.Stats(), "warm-up captures the UNet trace")
	ctx := context.Background()
	want := Stats{TraceCaptures: 1}
	for i, req := range []Request{
		{Prompt: "the man", Steps: 4, GuidanceScale: 5, GuidanceRescale: 0.7, Seed: ptr[int64](1)},
		{Prompt: "an ant", NegativePrompt: ptr("the"), Steps: 2, GuidanceScale: 7.5, Seed: ptr[int64](2)},
		{Prompt: "the", Timesteps: []float64{999, 700, 400}, GuidanceScale: 1, Seed: ptr[int64](3)},
		{Prompt: "the", Sigmas: []float64{14.6, 3, 1, 0.5, 0.1, 0}, GuidanceScale: 5},
	} {
		sched, err := p.Schedule(req)
		require.NoError(t, err)
		steps := 0
		img, err := p.Generate(ctx, req, func(i, n int) { steps = i; require.Equal(t, sched.Len(), n) })
		require.NoError(t, err, "request %d", i)
		require.Equal(t, 64, img.Bounds().Dx())
		require.Equal(t, sched.Len(), steps)
		want.Encodes++
		want.TraceReplays += sched.Len()
		want.VAEDecodes++
		require.Equal(t, want, d.Stats(), "request %d: encoders once, UNet replayed N times, VAE once, no recapture", i)
	}
	c, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, uint64(1), c.Traces)
}

func TestSimCancel(t *testing.T) {
	p, d := openSim(t, "testdata/small")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := p.Generate(ctx, Request{Prompt: "the", Steps: 8, GuidanceScale: 5, Seed: ptr[int64](1)}, func(i, _ int) {
		if i == 3 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: 3}, d.Stats())
	// The device stays usable.
	_, err = p.Generate(context.Background(), Request{Prompt: "the", Steps: 2, GuidanceScale: 5, Seed: ptr[int64](1)}, nil)
	require.NoError(t, err)
	require.Equal(t, Stats{Encodes: 2, TraceCaptures: 1, TraceReplays: 5, VAEDecodes: 1}, d.Stats())
}

func TestSimDeterministic(t *testing.T) {
	p, _ := openSim(t, "testdata/small")
	gen := func(req Request) []byte {
		img, err := p.Generate(context.Background(), req, nil)
		require.NoError(t, err)
		return img.Pix
	}
	req := Request{Prompt: "the man", Steps: 3, GuidanceScale: 5, Seed: ptr[int64](77)}
	a := gen(req)
	require.Equal(t, a, gen(req))
	other := req
	other.Seed = ptr[int64](78)
	require.NotEqual(t, a, gen(other), "the seed reaches the image")
	other = req
	other.Prompt = "an ant"
	require.NotEqual(t, a, gen(other), "the prompt reaches the image")
}

func TestSimFullSize(t *testing.T) {
	p, d := openSim(t, "")
	require.Equal(t, Spec{LatentChannels: 4, LatentHeight: 128, LatentWidth: 128, SeqLen: 77, HiddenSize: 2048,
		PooledSize: 1280, ImageHeight: 1024, ImageWidth: 1024}, d.Spec())
	img, err := p.Generate(context.Background(), Request{Prompt: "the man", Steps: 2, GuidanceScale: 5, Seed: ptr[int64](0)}, nil)
	require.NoError(t, err)
	require.Equal(t, 1024, img.Bounds().Dx())
	require.Equal(t, Stats{Encodes: 1, TraceCaptures: 1, TraceReplays: 2, VAEDecodes: 1}, d.Stats())
}

// writeSet copies the small manifests to a directory, replacing one line of one manifest.
func writeSet(t *testing.T, prog, old, repl string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{ProgTextEncoder, ProgTextEncoder2, ProgUNet, ProgVAE} {
		b, err := os.ReadFile("testdata/small/" + name + ".ttbsim")
		require.NoError(t, err)
		s := string(b)
		if name == prog {
			require.Contains(t, s, old)
			s = strings.Replace(s, old, repl, 1)
		}
		require.NoError(t, os.WriteFile(dir+"/"+name+".ttbsim", []byte(s), 0o600))
	}
	return dir
}

func TestSimProgramMismatch(t *testing.T) {
	tests := []struct {
		name, prog, old, repl, msg string
	}{
		{"context size", ProgUNet, "encoder_hidden_states bf16 2 77 24", "encoder_hidden_states bf16 2 77 25", "encoder_hidden_states"},
		{"pooled size", ProgUNet, "text_embeds bf16 2 16", "text_embeds bf16 2 17", "text_embeds"},
		{"latent size", ProgVAE, "latents bf16 1 4 8 8", "latents bf16 1 4 16 16", "latents"},
		{"batch", ProgTextEncoder2, "input_ids i32 2 77", "input_ids i32 1 77", "input_ids"},
		{"timestep dtype", ProgUNet, "timestep f32 1", "timestep bf16 1", "timestep"},
		{"missing output", ProgTextEncoder2, "output text_embeds bf16 2 16", "", "text_embeds"},
		{"two functions", ProgVAE, "output image bf16 1 3 64 64", "output image bf16 1 3 64 64\nfunc other\ninput a f32 1\noutput b f32 1", "2 functions"},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeSet(t, tc.prog, tc.old, tc.repl)
			dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, CommandQueues: 1})
			require.NoError(t, err)
			defer func() { require.NoError(t, dev.Close()) }()
			_, err = NewTTNNDevice(ctx, dev, os.DirFS(dir))
			require.ErrorContains(t, err, tc.msg)
			c, err := ttnn.Counts()
			require.NoError(t, err)
			require.Equal(t, ttnn.LiveCounts{Devices: 1}, c, "a failed construction frees what it made")
		})
	}
}

func TestSimDeviceFailure(t *testing.T) {
	t.Setenv("TTB_SIM_FAIL_PROB", "1") // every execution fails; read at device open
	ctx := context.Background()
	dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, CommandQueues: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	_, err = NewTTNNDevice(ctx, dev, os.DirFS("testdata/small"))
	require.ErrorIs(t, err, ttnn.ErrInternal)
	require.ErrorContains(t, err, "compile run of "+ProgTextEncoder)
}

// BenchmarkSimGenerate measures one full-size 20-step request on the simulator at latency
// scale 0.001, i.e. nearly all host time (tokenizing, bf16 conversion, transfers, CFG,
// scheduler, image mapping) plus the simulator's output generation.
func BenchmarkSimGenerate(b *testing.B) {
	ctx := context.Background()
	dev, err := ttnn.Open(ctx, ttnn.Options{Mesh: ttnn.MeshShape{Rows: 1, Cols: 1}, CommandQueues: 1})
	require.NoError(b, err)
	defer func() { require.NoError(b, dev.Close()) }()
	d, err := NewTTNNDevice(ctx, dev, Programs())
	require.NoError(b, err)
	defer func() { require.NoError(b, d.Close()) }()
	p, err := New(d, testTokenizer(b), SDXLConfig())
	require.NoError(b, err)
	for b.Loop() {
		_, err := p.Generate(ctx, Request{Prompt: "the man", Steps: 20, GuidanceScale: 5, GuidanceRescale: 0.7, Seed: ptr[int64](1)}, nil)
		require.NoError(b, err)
	}
}
