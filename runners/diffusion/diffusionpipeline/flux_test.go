package diffusionpipeline

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/samplers"
)

// smallFluxSpec is the test programs' (testdata/smallflux) FLUX.1-dev size.
var smallFluxSpec = FluxSpec{LatentChannels: 16, LatentHeight: 8, LatentWidth: 8, CLIPSeqLen: clip.ContextLength,
	PooledSize: 8, T5SeqLen: 12, JointDim: 32, Guidance: true, ImageHeight: 64, ImageWidth: 64}

// fakeFlux records the calls; its velocity is 0.25*x + 0.01*t, its encoders a function of
// the ids.
type fakeFlux struct {
	spec   FluxSpec
	calls  []string
	inputs []FluxInputs
	ts     []float32
	first  []float32
	conds  []*FluxCond
	vaeIn  []float32
	failAt int
}

func (f *fakeFlux) Spec() FluxSpec { return f.spec }

func (f *fakeFlux) Encode(_ context.Context, in FluxInputs) (FluxEmbeds, error) {
	f.calls = append(f.calls, "encode")
	f.inputs = append(f.inputs, in)
	e := FluxEmbeds{Pooled: make([]float32, f.spec.PooledSize), T5Hidden: make([]float32, f.spec.T5SeqLen*f.spec.JointDim)}
	for i := range e.Pooled {
		e.Pooled[i] = float32(in.CLIP[i%len(in.CLIP)])
	}
	for i := range e.T5Hidden {
		e.T5Hidden[i] = float32(in.T5[i%len(in.T5)])
	}
	return e, nil
}

func (f *fakeFlux) Transformer(_ context.Context, x []float32, t float32, cond *FluxCond) ([]float32, error) {
	f.calls = append(f.calls, "transformer")
	if len(f.ts) == 0 {
		f.first = append([]float32(nil), x...)
	}
	f.ts = append(f.ts, t)
	f.conds = append(f.conds, cond)
	if f.failAt > 0 && len(f.ts) == f.failAt {
		return nil, errors.New("device lost")
	}
	v := make([]float32, len(x))
	for i := range x {
		v[i] = 0.25*x[i] + 0.01*t
	}
	return v, nil
}

func (f *fakeFlux) VAE(_ context.Context, lat []float32) ([]float32, error) {
	f.calls = append(f.calls, "vae")
	f.vaeIn = append([]float32(nil), lat...)
	return make([]float32, 3*f.spec.ImageHeight*f.spec.ImageWidth), nil
}

func newFakeFlux(t *testing.T, v FluxVariant) (*FluxPipeline, *fakeFlux, *fakeT5) {
	t.Helper()
	spec := smallFluxSpec
	if v == FluxSchnell {
		spec.Guidance, spec.T5SeqLen = false, 6
	}
	dev, t5 := &fakeFlux{spec: spec}, &fakeT5{}
	p, err := NewFlux(dev, testTokenizer(t), t5, v.Config())
	require.NoError(t, err)
	return p, dev, t5
}

// TestFluxPipeline: the encoders once (CLIP on the prompt, T5 on prompt_2), the transformer
// once per step with timestep/1000, the embedded guidance and the position ids, seeded
// latents packed in, Euler steps with the shifted schedule, unpacked and unscaled latents into
// the VAE once.
func TestFluxPipeline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v        FluxVariant
		req      FluxRequest
		guidance float32
		t5Text   string
	}{
		{"dev default guidance", FluxDev, FluxRequest{Prompt: "the man", Steps: 4, Seed: ptr[int64](7)}, 3.5, "the man"},
		{"dev guidance and prompt_2", FluxDev, FluxRequest{Prompt: "the", Prompt2: "an ant", Steps: 3, GuidanceScale: 5, Seed: ptr[int64](8)}, 5, "an ant"},
		{"dev custom sigmas", FluxDev, FluxRequest{Prompt: "the", Sigmas: []float64{1, 0.7, 0.2}, Seed: ptr[int64](9)}, 3.5, "the"},
		{"schnell", FluxSchnell, FluxRequest{Prompt: "the man", Steps: 4, Seed: ptr[int64](1)}, 0, "the man"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dev, t5 := newFakeFlux(t, tc.v)
			s := dev.spec
			hooked := 0
			_, err := p.Generate(context.Background(), tc.req, Hooks{Step: func(i, n int, denoised func() []float32) error {
				hooked = i
				require.Len(t, denoised(), s.LatentElems())
				return nil
			}})
			require.NoError(t, err)
			flow, err := samplers.NewFlowMatch(tc.v.Config().Scheduler)
			require.NoError(t, err)
			mu := flow.Mu(s.ImageSeqLen())
			require.Equal(t, mu, p.Mu())
			sig := tc.req.Sigmas
			if sig == nil {
				sig, err = samplers.FluxSigmas(tc.req.Steps)
				require.NoError(t, err)
			}
			sched, err := flow.ScheduleFromSigmasMu(sig, mu)
			require.NoError(t, err)
			n := sched.Len()
			require.Equal(t, n, hooked)
			want := []string{"encode"}
			for range n {
				want = append(want, "transformer")
			}
			require.Equal(t, append(want, "vae"), dev.calls)
			require.Equal(t, []string{tc.t5Text}, t5.texts)
			require.Len(t, dev.inputs[0].T5, s.T5SeqLen)
			require.Equal(t, testTokenizer(t).SDXL(tc.req.Prompt, "").Encoder1.IDs, dev.inputs[0].CLIP)
			for i, ts := range dev.ts {
				require.Equal(t, sched.Timesteps[i]/1000, ts, "step %d: the transformer's timestep is t/1000", i)
				require.Same(t, dev.conds[0], dev.conds[i])
			}
			c := dev.conds[0]
			require.Equal(t, tc.guidance, c.Guidance)
			require.Equal(t, make([]float32, s.T5SeqLen*3), c.TxtIDs)
			require.Equal(t, LatentImageIDs(s.LatentHeight, s.LatentWidth), c.ImgIDs)
			require.Len(t, c.Hidden, s.T5SeqLen*s.JointDim)
			require.Len(t, c.Pooled, s.PooledSize)

			// The same maths by hand: seeded latents, packed, Euler steps, unpacked, unscaled.
			raw, err := latents.Randn(context.Background(), uint64(*tc.req.Seed), latents.KernelAVX2, 1, 16, 8, 8)
			require.NoError(t, err)
			x := make([]float32, len(raw))
			require.NoError(t, PackLatents(x, raw, 16, 8, 8))
			require.Equal(t, x, dev.first)
			for i := range n {
				v := make([]float32, len(x))
				for k := range x {
					v[k] = 0.25*x[k] + 0.01*(sched.Timesteps[i]/1000)
				}
				require.NoError(t, sched.Step(x, v, x, i))
			}
			require.NoError(t, UnpackLatents(raw, x, 16, 8, 8))
			cfg := tc.v.Config()
			for k := range raw {
				raw[k] = raw[k]/cfg.VAEScalingFactor + cfg.VAEShiftFactor
			}
			require.Equal(t, raw, dev.vaeIn)
		})
	}
}

func TestFluxPipelineRefuses(t *testing.T) {
	ctx := context.Background()
	dev, _, _ := newFakeFlux(t, FluxDev)
	schnell, sdev, _ := newFakeFlux(t, FluxSchnell)
	for _, c := range []struct {
		p   *FluxPipeline
		req FluxRequest
		msg string
	}{
		{schnell, FluxRequest{Prompt: "x", Steps: 4, GuidanceScale: 3.5}, "guidance-distilled"},
		{dev, FluxRequest{Prompt: "x", Steps: 4, GuidanceScale: -1}, "guidance_scale"},
		{dev, FluxRequest{Prompt: "x", Steps: 0}, "steps"},
		{dev, FluxRequest{Prompt: "x", Sigmas: []float64{1, 0.5, math.NaN()}}, "sigma"},
	} {
		_, err := c.p.Generate(ctx, c.req, Hooks{})
		require.ErrorIs(t, err, runners.ErrBadRequest, "%+v", c.req)
		require.ErrorContains(t, err, c.msg)
	}
	require.Empty(t, sdev.calls, "refused before the device")

	p, fd, _ := newFakeFlux(t, FluxDev)
	fd.failAt = 2
	_, err := p.Generate(ctx, FluxRequest{Prompt: "x", Steps: 4, Seed: ptr[int64](1)}, Hooks{})
	require.ErrorContains(t, err, "transformer step 2 of 4: device lost")

	cctx, cancel := context.WithCancel(ctx)
	p, fd, _ = newFakeFlux(t, FluxDev)
	_, err = p.Generate(cctx, FluxRequest{Prompt: "x", Steps: 6, Seed: ptr[int64](1)}, Hooks{Step: func(i, _ int, _ func() []float32) error {
		if i == 2 {
			cancel()
		}
		return nil
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []string{"encode", "transformer", "transformer"}, fd.calls)

	// A dev configuration on schnell-shaped programs (no guidance input) is refused.
	_, err = NewFlux(&fakeFlux{spec: func() FluxSpec { s := smallFluxSpec; s.Guidance = false; return s }()}, testTokenizer(t), &fakeT5{}, FluxDevConfig())
	require.ErrorContains(t, err, "guidance input")
	_, err = NewFlux(&fakeFlux{spec: smallFluxSpec}, testTokenizer(t), nil, FluxDevConfig())
	require.Error(t, err)
}
