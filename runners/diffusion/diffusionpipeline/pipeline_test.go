package diffusionpipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/samplers"
)

// testTokenizer is a CLIP tokenizer with a few merges (byte-level symbols otherwise).
func testTokenizer(t testing.TB) *clip.Tokenizer {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write([]byte("#version: test\nt h\nth e</w>\na n\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	tok, err := clip.NewFromBPE(&buf)
	require.NoError(t, err)
	return tok
}

var smallSpec = Spec{LatentChannels: 4, LatentHeight: 8, LatentWidth: 8, SeqLen: clip.ContextLength,
	HiddenSize: 24, PooledSize: 16, ImageHeight: 64, ImageWidth: 64}

// fakeDevice records the calls and computes simple deterministic outputs from its inputs.
type fakeDevice struct {
	spec    Spec
	prompts [][]clip.SDXLInputs
	fakeDenoiser[Cond]
}

var errFake = errors.New("fake device failure")

// fakeDenoiser records a fake device's calls of its denoiser (SDXL's UNet, SD3.5's
// transformer) and VAE; C is the denoiser's conditioning.
type fakeDenoiser[C any] struct {
	calls   []string
	ts      []float32
	samples [][]float32
	conds   []*C
	vaeIn   [][]float32
	onStep  func(step int) // called after each denoiser call (1-based count)
	failAt  int            // denoiser call (1-based) that fails
}

// denoise records one denoiser call (name in calls) and answers out(), or errFake at failAt.
func (f *fakeDenoiser[C]) denoise(name string, sample []float32, t float32, cond *C, out func() []float32) ([]float32, error) {
	f.calls = append(f.calls, name)
	f.ts = append(f.ts, t)
	f.samples = append(f.samples, append([]float32(nil), sample...))
	f.conds = append(f.conds, cond)
	if len(f.ts) == f.failAt {
		return nil, errFake
	}
	o := out()
	if f.onStep != nil {
		f.onStep(len(f.ts))
	}
	return o, nil
}

// vae records a VAE call and answers a 3 x h x w image of tanh of the latents, repeated.
func (f *fakeDenoiser[C]) vae(lat []float32, h, w int) []float32 {
	f.calls = append(f.calls, "vae")
	f.vaeIn = append(f.vaeIn, append([]float32(nil), lat...))
	out := make([]float32, 3*h*w)
	for i := range out {
		out[i] = float32(math.Tanh(float64(lat[i%len(lat)])))
	}
	return out
}

func (f *fakeDevice) Spec() Spec { return f.spec }

func (f *fakeDevice) Encode(_ context.Context, prompts []clip.SDXLInputs) (Embeds, error) {
	f.calls = append(f.calls, "encode")
	f.prompts = append(f.prompts, prompts)
	s := f.spec
	e := Embeds{Batch: len(prompts)}
	for _, p := range prompts {
		for tok := range s.SeqLen {
			for k := range s.HiddenSize {
				e.Hidden = append(e.Hidden, float32(p.Encoder1.IDs[tok]%97)/97+float32(k))
			}
		}
		for k := range s.PooledSize {
			e.Pooled = append(e.Pooled, float32(p.Encoder2.IDs[1]%13)+float32(k))
		}
	}
	return e, nil
}

// fakeNoise is the fake UNet: row b of the output is 0.5*sample + 0.01*(b+1) + 1e-4*t.
func fakeNoise(sample []float32, t float32, elems int) []float32 {
	out := make([]float32, len(sample))
	for i, v := range sample {
		out[i] = 0.5*v + 0.01*float32(i/elems+1) + 1e-4*t
	}
	return out
}

func (f *fakeDevice) UNet(_ context.Context, sample []float32, t float32, cond *Cond) ([]float32, error) {
	return f.denoise("unet", sample, t, cond, func() []float32 { return fakeNoise(sample, t, f.spec.LatentElems()) })
}

func (f *fakeDevice) VAE(_ context.Context, lat []float32) ([]float32, error) {
	return f.vae(lat, f.spec.ImageHeight, f.spec.ImageWidth), nil
}

func newFake(t testing.TB) (*Pipeline, *fakeDevice) {
	t.Helper()
	dev := &fakeDevice{spec: smallSpec}
	p, err := New(dev, testTokenizer(t), SDXLConfig())
	require.NoError(t, err)
	return p, dev
}

func ptr[T any](v T) *T { return &v }

func sequence(n int) []string {
	s := []string{"encode"}
	for range n {
		s = append(s, "unet")
	}
	return append(s, "vae")
}

func TestGuide(t *testing.T) {
	uncond := []float32{0, 1, 2, 3}
	cond := []float32{1, 1, 3, 5}
	// By hand: cfg = u + 2(c-u) = [2 1 4 7]; std(c) = sqrt(11/3), std(cfg) = sqrt(21/3) (unbiased),
	// ratio sqrt(11/21) = 0.7237469; rescaled = cfg*ratio.
	r := math.Sqrt(11.0 / 21.0)
	tests := []struct {
		name           string
		scale, rescale float64
		want           []float64
	}{
		{"scale 1 is cond", 1, 0, []float64{1, 1, 3, 5}},
		{"scale 2", 2, 0, []float64{2, 1, 4, 7}},
		{"scale 0 is uncond", 0, 0, []float64{0, 1, 2, 3}},
		{"scale 7.5", 7.5, 0, []float64{7.5, 1, 9.5, 18}},
		{"rescale 1", 2, 1, []float64{2 * r, 1 * r, 4 * r, 7 * r}},
		{"rescale 0.5", 2, 0.5, []float64{0.5*2*r + 1, 0.5*r + 0.5, 0.5*4*r + 2, 0.5*7*r + 3.5}},
		{"rescale 0.7", 2, 0.7, []float64{0.7*2*r + 0.3*2, 0.7*r + 0.3, 0.7*4*r + 0.3*4, 0.7*7*r + 0.3*7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float32, 4)
			Guide(dst, uncond, cond, tc.scale, tc.rescale)
			for i, w := range tc.want {
				require.InDelta(t, w, dst[i], 2e-6, "element %d: %v", i, dst)
			}
		})
	}
	// rescale 1 makes the result's std equal cond's.
	dst := make([]float32, 4)
	Guide(dst, uncond, cond, 9, 1)
	require.InDelta(t, stddev(cond), stddev(dst), 1e-5)
}

func TestToImage(t *testing.T) {
	// One 1x5 image, planes R, G, B: clamping, NaN, 0 -> 127.5 -> 128 (half to even), 0.75*255 = 191.25.
	pix := []float32{
		-1, 1, 0, 2, float32(math.NaN()),
		-1, -1, 0, -2, 0,
		0, 0, 0, 0, 0.5,
	}
	img, err := ToImage(pix, 1, 5)
	require.NoError(t, err)
	want := [][4]uint8{{0, 0, 128, 255}, {255, 0, 128, 255}, {128, 128, 128, 255}, {255, 0, 128, 255}, {0, 128, 191, 255}}
	for x, w := range want {
		o := img.PixOffset(x, 0)
		require.Equal(t, w[:], img.Pix[o:o+4], "pixel %d", x)
	}
	_, err = ToImage(pix[:14], 1, 5)
	require.Error(t, err)
}

func TestCallSequence(t *testing.T) {
	euler, err := samplers.NewEuler(samplers.SDXLEulerConfig())
	require.NoError(t, err)
	tests := []struct {
		name  string
		req   Request
		sched func() (*samplers.EulerSchedule, error)
		n     int
	}{
		{"1 step", Request{Steps: 1}, func() (*samplers.EulerSchedule, error) { return euler.Schedule(1) }, 1},
		{"5 steps", Request{Steps: 5}, func() (*samplers.EulerSchedule, error) { return euler.Schedule(5) }, 5},
		{"timesteps override", Request{Steps: 30, Timesteps: []float64{999, 800, 500}},
			func() (*samplers.EulerSchedule, error) {
				return euler.ScheduleFromTimesteps([]float64{999, 800, 500})
			}, 3},
		{"sigmas override", Request{Steps: 30, Sigmas: []float64{14.6, 7, 3, 1, 0}},
			func() (*samplers.EulerSchedule, error) {
				return euler.ScheduleFromSigmas([]float64{14.6, 7, 3, 1, 0})
			}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, dev := newFake(t)
			var prog [][2]int
			req := tc.req
			req.Prompt, req.GuidanceScale, req.Seed = "the man", 5, ptr[int64](42)
			img, err := p.Generate(context.Background(), req, func(i, n int) { prog = append(prog, [2]int{i, n}) })
			require.NoError(t, err)
			require.Equal(t, 64, img.Bounds().Dx())
			require.Equal(t, 64, img.Bounds().Dy())
			require.Equal(t, sequence(tc.n), dev.calls)
			want, err := tc.sched()
			require.NoError(t, err)
			require.Equal(t, want.Timesteps, dev.ts)
			require.Len(t, prog, tc.n)
			for i, pr := range prog {
				require.Equal(t, [2]int{i + 1, tc.n}, pr)
			}
			for _, c := range dev.conds {
				require.Same(t, dev.conds[0], c, "one conditioning per request")
			}
		})
	}
}

// TestMatchesReferenceLoop replays diffusers' loop by hand on the fake's noise function and
// checks the VAE input exactly, and the UNet inputs of the first step.
func TestMatchesReferenceLoop(t *testing.T) {
	for _, tc := range []struct {
		name            string
		scale, rescale  float64
		wantBatch, seed int64
	}{
		{"cfg", 5, 0, 2, 7},
		{"cfg rescale", 7.5, 0.7, 2, -3},
		{"no cfg", 1, 0.7, 1, 123},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dev := newFake(t)
			const n = 4
			_, err := p.Generate(context.Background(), Request{Prompt: "a", Steps: n, GuidanceScale: tc.scale,
				GuidanceRescale: tc.rescale, Seed: ptr(tc.seed)}, nil)
			require.NoError(t, err)

			euler, err := samplers.NewEuler(samplers.SDXLEulerConfig())
			require.NoError(t, err)
			sched, err := euler.Schedule(n)
			require.NoError(t, err)
			elems := smallSpec.LatentElems()
			x, err := latents.Randn(context.Background(), uint64(tc.seed), latents.KernelAVX2, 1, 4, 8, 8)
			require.NoError(t, err)
			for i := range x {
				x[i] *= sched.InitNoiseSigma()
			}
			for i := range n {
				in := make([]float32, elems)
				require.NoError(t, sched.ScaleModelInput(in, x, i))
				batch := in
				if tc.wantBatch == 2 {
					batch = append(append([]float32{}, in...), in...)
				}
				require.Equal(t, batch, dev.samples[i], "UNet input of step %d", i)
				out := fakeNoise(batch, sched.Timesteps[i], elems)
				noise := out
				if tc.wantBatch == 2 {
					noise = make([]float32, elems)
					Guide(noise, out[:elems], out[elems:], tc.scale, tc.rescale)
				}
				require.NoError(t, sched.Step(x, nil, noise, x, i))
			}
			for i := range x {
				x[i] /= 0.13025
			}
			require.Equal(t, x, dev.vaeIn[0])
			require.Equal(t, int(tc.wantBatch), dev.conds[0].Batch)
		})
	}
}

func TestConditioning(t *testing.T) {
	tok := testTokenizer(t)
	s := smallSpec
	hid, pool := s.SeqLen*s.HiddenSize, s.PooledSize
	t.Run("no negative prompt: zero negative row", func(t *testing.T) {
		p, dev := newFake(t)
		_, err := p.Generate(context.Background(), Request{Prompt: "the man", Prompt2: "an ant", Steps: 1, GuidanceScale: 5,
			Seed: ptr[int64](1), CropCoordsTopLeft: [2]float64{16, 32}}, nil)
		require.NoError(t, err)
		require.Len(t, dev.prompts, 1)
		require.Equal(t, []clip.SDXLInputs{tok.SDXL("the man", "an ant")}, dev.prompts[0])
		c := dev.conds[0]
		require.Equal(t, 2, c.Batch)
		require.Equal(t, make([]float32, hid), c.Hidden[:hid])
		require.Equal(t, make([]float32, pool), c.Pooled[:pool])
		require.NotEqual(t, make([]float32, hid), c.Hidden[hid:])
		require.Equal(t, []float32{64, 64, 16, 32, 64, 64, 64, 64, 16, 32, 64, 64}, c.TimeIDs)
	})
	t.Run("negative prompts encoded first", func(t *testing.T) {
		p, dev := newFake(t)
		_, err := p.Generate(context.Background(), Request{Prompt: "the man", Steps: 1, GuidanceScale: 5,
			NegativePrompt: ptr("an"), Seed: ptr[int64](1)}, nil)
		require.NoError(t, err)
		require.Equal(t, []clip.SDXLInputs{tok.SDXL("an", "an"), tok.SDXL("the man", "the man")}, dev.prompts[0])
		_, err = p.Generate(context.Background(), Request{Prompt: "the man", Steps: 1, GuidanceScale: 5,
			NegativePrompt: ptr("an"), NegativePrompt2: ptr("the"), Seed: ptr[int64](1)}, nil)
		require.NoError(t, err)
		require.Equal(t, []clip.SDXLInputs{tok.SDXL("an", "the"), tok.SDXL("the man", "the man")}, dev.prompts[1])
	})
	t.Run("empty negative without force zeros", func(t *testing.T) {
		dev := &fakeDevice{spec: smallSpec}
		cfg := SDXLConfig()
		cfg.ForceZerosForEmptyPrompt = false
		p, err := New(dev, tok, cfg)
		require.NoError(t, err)
		_, err = p.Generate(context.Background(), Request{Prompt: "the", Steps: 1, GuidanceScale: 5, Seed: ptr[int64](1)}, nil)
		require.NoError(t, err)
		require.Equal(t, []clip.SDXLInputs{tok.SDXL("", ""), tok.SDXL("the", "the")}, dev.prompts[0])
	})
	t.Run("no guidance: positive only", func(t *testing.T) {
		p, dev := newFake(t)
		_, err := p.Generate(context.Background(), Request{Prompt: "the", Steps: 2, GuidanceScale: 1,
			NegativePrompt: ptr("an"), Seed: ptr[int64](1)}, nil)
		require.NoError(t, err)
		require.Equal(t, []clip.SDXLInputs{tok.SDXL("the", "the")}, dev.prompts[0])
		require.Equal(t, 1, dev.conds[0].Batch)
		require.Len(t, dev.samples[0], smallSpec.LatentElems())
	})
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name string
		req  Request
	}{
		{"timesteps and sigmas", Request{Steps: 2, Timesteps: []float64{900, 500}, Sigmas: []float64{10, 5, 0}}},
		{"no steps", Request{Steps: 0}},
		{"rescale above 1", Request{Steps: 2, GuidanceRescale: 1.5}},
		{"NaN guidance", Request{Steps: 2, GuidanceScale: math.NaN()}},
		{"one sigma", Request{Sigmas: []float64{0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, dev := newFake(t)
			_, err := p.Generate(context.Background(), tc.req, nil)
			require.ErrorIs(t, err, runners.ErrBadRequest)
			require.Empty(t, dev.calls, "no device call for a bad request")
		})
	}
}

func TestCancelWithinOneStep(t *testing.T) {
	for _, at := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("during step %d", at), func(t *testing.T) {
			p, dev := newFake(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dev.onStep = func(step int) {
				if step == at {
					cancel()
				}
			}
			_, err := p.Generate(ctx, Request{Prompt: "a", Steps: 10, GuidanceScale: 5, Seed: ptr[int64](1)}, nil)
			require.ErrorIs(t, err, context.Canceled)
			// The step that saw the cancel finishes; no further UNet step, no VAE.
			require.Equal(t, sequence(at)[:at+1], dev.calls)
		})
	}
	t.Run("before start", func(t *testing.T) {
		p, dev := newFake(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Generate(ctx, Request{Prompt: "a", Steps: 3, GuidanceScale: 5}, nil)
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, dev.calls)
	})
}

func TestDeterministicSeed(t *testing.T) {
	p, _ := newFake(t)
	gen := func(seed *int64) []byte {
		img, err := p.Generate(context.Background(), Request{Prompt: "the man", Steps: 3, GuidanceScale: 5, Seed: seed}, nil)
		require.NoError(t, err)
		return img.Pix
	}
	a, b := gen(ptr[int64](1234)), gen(ptr[int64](1234))
	require.Equal(t, a, b)
	require.NotEqual(t, a, gen(ptr[int64](1235)))
	require.NotEqual(t, gen(nil), gen(nil), "nil seed draws a random seed")
}

func TestRequestFrom(t *testing.T) {
	seed := int64(9)
	r := RequestFrom(&runners.ImageRequest{Prompt: "p", Prompt2: "p2", NegativePrompt2: "n2", NumInferenceSteps: 20,
		Seed: &seed, GuidanceScale: 5, GuidanceRescale: 0.7, CropCoordsTopLeft: [2]float64{1, 2}, Timesteps: []float64{1}})
	require.Nil(t, r.NegativePrompt)
	require.Equal(t, "n2", *r.NegativePrompt2)
	require.Equal(t, Request{Prompt: "p", Prompt2: "p2", NegativePrompt2: r.NegativePrompt2, Steps: 20, Seed: &seed,
		GuidanceScale: 5, GuidanceRescale: 0.7, CropCoordsTopLeft: [2]float64{1, 2}, Timesteps: []float64{1}}, r)
}

func TestNewErrors(t *testing.T) {
	tok := testTokenizer(t)
	_, err := New(nil, tok, SDXLConfig())
	require.Error(t, err)
	_, err = New(&fakeDevice{}, tok, SDXLConfig())
	require.Error(t, err)
	cfg := SDXLConfig()
	cfg.VAEScalingFactor = 0
	_, err = New(&fakeDevice{spec: smallSpec}, tok, cfg)
	require.Error(t, err)
	cfg = SDXLConfig()
	cfg.Scheduler.BetaSchedule = "cosine"
	_, err = New(&fakeDevice{spec: smallSpec}, tok, cfg)
	require.True(t, errors.Is(err, samplers.ErrConfig), "%v", err)
}

func TestDeviceErrorStops(t *testing.T) {
	p, dev := newFake(t)
	dev.failAt = 2
	_, err := p.Generate(context.Background(), Request{Prompt: "a", Steps: 5, GuidanceScale: 5, Seed: ptr[int64](1)}, nil)
	require.ErrorIs(t, err, errFake)
	require.ErrorContains(t, err, "UNet step 2 of 5")
	require.Equal(t, sequence(2)[:3], dev.calls)
}
