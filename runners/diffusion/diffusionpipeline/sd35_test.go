package diffusionpipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/samplers"
)

var smallSD3Spec = SD3Spec{LatentChannels: 16, LatentHeight: 8, LatentWidth: 8, CLIPSeqLen: clip.ContextLength,
	CLIPHidden: 24, PooledSize: 24, T5SeqLen: T5SeqLen, JointDim: 32, ImageHeight: 64, ImageWidth: 64}

// fakeT5 tokenizes by words: each word's length+2 as its id, then </s> (1), padded with 0.
type fakeT5 struct{ texts []string }

func (f *fakeT5) T5IDs(text string, maxLen int) []int {
	f.texts = append(f.texts, text)
	ids := make([]int, maxLen)
	n := 0
	for _, w := range strings.Fields(text) {
		if n == maxLen-1 {
			break
		}
		ids[n] = len(w) + 2
		n++
	}
	ids[n] = 1
	return ids
}

// fakeSD3 records the calls and computes simple deterministic outputs from its inputs.
type fakeSD3 struct {
	spec    SD3Spec
	prompts [][]SD3Inputs
	fakeDenoiser[SD3Cond]
}

func (f *fakeSD3) Spec() SD3Spec { return f.spec }

func (f *fakeSD3) Encode(_ context.Context, prompts []SD3Inputs) (SD3Embeds, error) {
	f.calls = append(f.calls, "encode")
	f.prompts = append(f.prompts, prompts)
	s := f.spec
	e := SD3Embeds{Batch: len(prompts)}
	for _, p := range prompts {
		for tok := range s.CLIPSeqLen {
			for k := range s.CLIPHidden {
				e.CLIPHidden = append(e.CLIPHidden, float32(p.CLIP.Encoder1.IDs[tok]%97)/97+float32(k))
			}
		}
		for k := range s.PooledSize {
			e.Pooled = append(e.Pooled, float32(p.CLIP.Encoder2.IDs[1]%13)+float32(k))
		}
		if p.T5 != nil {
			for tok := range s.T5SeqLen {
				for k := range s.JointDim {
					e.T5Hidden = append(e.T5Hidden, float32(p.T5[tok])+float32(k)/100)
				}
			}
		}
	}
	return e, nil
}

// fakeVelocity is the fake transformer: row b of the output is 0.3*sample - 0.02*(b+1) + 1e-4*t.
func fakeVelocity(sample []float32, t float32, elems int) []float32 {
	out := make([]float32, len(sample))
	for i, v := range sample {
		out[i] = 0.3*v - 0.02*float32(i/elems+1) + 1e-4*t
	}
	return out
}

func (f *fakeSD3) Transformer(_ context.Context, sample []float32, t float32, cond *SD3Cond) ([]float32, error) {
	return f.denoise("transformer", sample, t, cond, func() []float32 { return fakeVelocity(sample, t, f.spec.LatentElems()) })
}

func (f *fakeSD3) VAE(_ context.Context, lat []float32) ([]float32, error) {
	return f.vae(lat, f.spec.ImageHeight, f.spec.ImageWidth), nil
}

func newFakeSD3(t testing.TB, t5 T5Tokenizer) (*SD3Pipeline, *fakeSD3) {
	t.Helper()
	dev := &fakeSD3{spec: smallSD3Spec}
	p, err := NewSD3(dev, testTokenizer(t), t5, SD35Config())
	require.NoError(t, err)
	return p, dev
}

func sd3Sequence(n int) []string {
	s := []string{"encode"}
	for range n {
		s = append(s, "transformer")
	}
	return append(s, "vae")
}

func TestSD3CallSequence(t *testing.T) {
	flow, err := samplers.NewFlowMatch(samplers.SD35FlowMatchConfig())
	require.NoError(t, err)
	tests := []struct {
		name  string
		req   SD3Request
		sched func() (*samplers.FlowSchedule, error)
	}{
		{"1 step", SD3Request{Steps: 1}, func() (*samplers.FlowSchedule, error) { return flow.Schedule(1) }},
		{"28 steps", SD3Request{Steps: 28}, func() (*samplers.FlowSchedule, error) { return flow.Schedule(28) }},
		{"sigmas override", SD3Request{Steps: 30, Sigmas: []float64{1, 0.75, 0.5, 0.25}},
			func() (*samplers.FlowSchedule, error) {
				return flow.ScheduleFromSigmas([]float64{1, 0.75, 0.5, 0.25})
			}},
		{"timesteps override", SD3Request{Steps: 30, Timesteps: []float64{1000, 500}},
			func() (*samplers.FlowSchedule, error) { return flow.ScheduleFromTimesteps([]float64{1000, 500}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, dev := newFakeSD3(t, &fakeT5{})
			want, err := tc.sched()
			require.NoError(t, err)
			n := want.Len()
			var steps [][2]int
			req := tc.req
			req.Prompt, req.GuidanceScale, req.Seed = "the man", 3.5, ptr[int64](42)
			img, err := p.Generate(context.Background(), req, Hooks{Step: func(i, total int, _ func() []float32) error {
				steps = append(steps, [2]int{i, total})
				return nil
			}})
			require.NoError(t, err)
			require.Equal(t, 64, img.Bounds().Dx())
			require.Equal(t, sd3Sequence(n), dev.calls, "encoders once, transformer N times, VAE once")
			require.Equal(t, want.Timesteps, dev.ts)
			require.Len(t, steps, n)
			for i, s := range steps {
				require.Equal(t, [2]int{i + 1, n}, s)
			}
			for _, c := range dev.conds {
				require.Same(t, dev.conds[0], c, "one conditioning per request")
			}
		})
	}
}

// TestSD3MatchesReferenceLoop replays StableDiffusion3Pipeline's loop by hand on the fake's
// velocity and checks the transformer inputs and the VAE input exactly.
func TestSD3MatchesReferenceLoop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		scale     float64
		wantBatch int
		seed      int64
	}{
		{"cfg 3.5", 3.5, 2, 7},
		{"cfg 7", 7, 2, -3},
		{"no cfg", 1, 1, 123},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dev := newFakeSD3(t, &fakeT5{})
			const n = 5
			_, err := p.Generate(context.Background(), SD3Request{Prompt: "a", Steps: n, GuidanceScale: tc.scale, Seed: ptr(tc.seed)}, Hooks{})
			require.NoError(t, err)

			flow, err := samplers.NewFlowMatch(samplers.SD35FlowMatchConfig())
			require.NoError(t, err)
			sched, err := flow.Schedule(n)
			require.NoError(t, err)
			elems := smallSD3Spec.LatentElems()
			x, err := latents.Randn(context.Background(), uint64(tc.seed), latents.KernelAVX2, 1, 16, 8, 8)
			require.NoError(t, err)
			for i := range n {
				batch := append([]float32{}, x...)
				if tc.wantBatch == 2 {
					batch = append(batch, x...)
				}
				require.Equal(t, batch, dev.samples[i], "transformer input of step %d", i)
				out := fakeVelocity(batch, sched.Timesteps[i], elems)
				v := out
				if tc.wantBatch == 2 {
					v = make([]float32, elems)
					for k := range v {
						v[k] = out[k] + float32(tc.scale)*(out[elems+k]-out[k])
					}
				}
				require.NoError(t, sched.Step(x, v, x, i))
			}
			for i := range x {
				x[i] = x[i]/1.5305 + 0.0609
			}
			require.Equal(t, x, dev.vaeIn[0])
			require.Equal(t, tc.wantBatch, dev.conds[0].Batch)
		})
	}
}

func TestSD3Conditioning(t *testing.T) {
	tok := testTokenizer(t)
	s := smallSD3Spec
	tests := []struct {
		name             string
		req              SD3Request
		noT5             bool
		wantPos, wantNeg [3]string // CLIP-L, CLIP-G, T5 prompts
		wantBatch        int
		wantT5Texts      []string
		wantZeroT5       bool
	}{
		{name: "prompt_2 and prompt_3 default to prompt", req: SD3Request{Prompt: "the man", GuidanceScale: 3.5},
			wantPos: [3]string{"the man", "the man", "the man"}, wantNeg: [3]string{"", "", ""}, wantBatch: 2,
			wantT5Texts: []string{"the man", ""}},
		{name: "all prompts given", req: SD3Request{Prompt: "the", Prompt2: "an ant", Prompt3: "the man", NegativePrompt: "ant",
			NegativePrompt2: "man", NegativePrompt3: "the ant", GuidanceScale: 5},
			wantPos: [3]string{"the", "an ant", "the man"}, wantNeg: [3]string{"ant", "man", "the ant"}, wantBatch: 2,
			wantT5Texts: []string{"the man", "the ant"}},
		{name: "negative_prompt_2/3 default to negative_prompt", req: SD3Request{Prompt: "the", NegativePrompt: "ant", GuidanceScale: 5},
			wantPos: [3]string{"the", "the", "the"}, wantNeg: [3]string{"ant", "ant", "ant"}, wantBatch: 2,
			wantT5Texts: []string{"the", "ant"}},
		{name: "no guidance encodes the prompt only", req: SD3Request{Prompt: "the", NegativePrompt: "ant", GuidanceScale: 1},
			wantPos: [3]string{"the", "the", "the"}, wantBatch: 1, wantT5Texts: []string{"the"}},
		{name: "no T5: zero T5 embeddings", req: SD3Request{Prompt: "the", GuidanceScale: 5}, noT5: true,
			wantPos: [3]string{"the", "the", "the"}, wantNeg: [3]string{"", "", ""}, wantBatch: 2, wantZeroT5: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := &fakeSD3{spec: s}
			t5 := &fakeT5{}
			var t5tok T5Tokenizer = t5
			if tc.noT5 {
				t5tok = nil
			}
			p, err := NewSD3(dev, tok, t5tok, SD35Config())
			require.NoError(t, err)
			req := tc.req
			req.Steps, req.Seed = 2, ptr[int64](1)
			_, err = p.Generate(context.Background(), req, Hooks{})
			require.NoError(t, err)
			require.Len(t, dev.prompts, 1)
			got := dev.prompts[0]
			require.Len(t, got, tc.wantBatch)
			check := func(in SD3Inputs, want [3]string) {
				require.Equal(t, tok.SDXL(want[0], want[1]), in.CLIP)
				if tc.noT5 {
					require.Nil(t, in.T5)
				} else {
					require.Equal(t, (&fakeT5{}).T5IDs(want[2], T5SeqLen), in.T5)
				}
			}
			check(got[len(got)-1], tc.wantPos)
			if tc.wantBatch == 2 {
				check(got[0], tc.wantNeg)
			}
			if !tc.noT5 {
				require.ElementsMatch(t, tc.wantT5Texts, t5.texts)
			}
			// Joint conditioning: CLIP states zero-padded to JointDim, then T5's states.
			c := dev.conds[0]
			require.Equal(t, tc.wantBatch, c.Batch)
			joint := s.JointSeqLen() * s.JointDim
			require.Len(t, c.Hidden, tc.wantBatch*joint)
			require.Len(t, c.Pooled, tc.wantBatch*s.PooledSize)
			var emb SD3Embeds
			emb, err = (&fakeSD3{spec: s}).Encode(context.Background(), got)
			require.NoError(t, err)
			for r := range tc.wantBatch {
				row := c.Hidden[r*joint : (r+1)*joint]
				for tok := range s.CLIPSeqLen {
					clipRow := emb.CLIPHidden[(r*s.CLIPSeqLen+tok)*s.CLIPHidden : (r*s.CLIPSeqLen+tok+1)*s.CLIPHidden]
					require.Equal(t, clipRow, row[tok*s.JointDim:tok*s.JointDim+s.CLIPHidden])
					require.Equal(t, make([]float32, s.JointDim-s.CLIPHidden), row[tok*s.JointDim+s.CLIPHidden:(tok+1)*s.JointDim])
				}
				t5part := row[s.CLIPSeqLen*s.JointDim:]
				if tc.wantZeroT5 {
					require.Equal(t, make([]float32, s.T5SeqLen*s.JointDim), t5part)
				} else {
					require.Equal(t, emb.T5Hidden[r*s.T5SeqLen*s.JointDim:(r+1)*s.T5SeqLen*s.JointDim], t5part)
				}
			}
			require.Equal(t, emb.Pooled, c.Pooled)
		})
	}
}

func TestSD3CancelWithinOneStep(t *testing.T) {
	for _, at := range []int{1, 4, 10} {
		t.Run(fmt.Sprintf("during step %d", at), func(t *testing.T) {
			p, dev := newFakeSD3(t, &fakeT5{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dev.onStep = func(step int) {
				if step == at {
					cancel()
				}
			}
			_, err := p.Generate(ctx, SD3Request{Prompt: "a", Steps: 10, GuidanceScale: 3.5, Seed: ptr[int64](1)}, Hooks{})
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, sd3Sequence(at)[:at+1], dev.calls, "the step that saw the cancel finishes; no other")
		})
	}
}

func TestSD3HookStopsAndDenoises(t *testing.T) {
	p, dev := newFakeSD3(t, &fakeT5{})
	stop := errors.New("client gone")
	var x0s [][]float32
	_, err := p.Generate(context.Background(), SD3Request{Prompt: "a", Steps: 6, GuidanceScale: 1, Seed: ptr[int64](5)},
		Hooks{Step: func(i, _ int, denoised func() []float32) error {
			x0s = append(x0s, append([]float32(nil), denoised()...))
			if i == 2 {
				return stop
			}
			return nil
		}})
	require.ErrorIs(t, err, stop)
	require.Equal(t, sd3Sequence(2)[:3], dev.calls)
	// x0 after step 1 is x_0 - sigma_0 * v_0.
	flow, err := samplers.NewFlowMatch(samplers.SD35FlowMatchConfig())
	require.NoError(t, err)
	sched, err := flow.Schedule(6)
	require.NoError(t, err)
	x, err := latents.Randn(context.Background(), 5, latents.KernelAVX2, 1, 16, 8, 8)
	require.NoError(t, err)
	v := fakeVelocity(x, sched.Timesteps[0], len(x))
	for k := range x {
		require.InDelta(t, x[k]-sched.Sigmas[0]*v[k], x0s[0][k], 1e-5)
	}
}

func TestSD3BadRequests(t *testing.T) {
	tests := []struct {
		name string
		req  SD3Request
	}{
		{"both schedules", SD3Request{Timesteps: []float64{900}, Sigmas: []float64{0.5}}},
		{"zero steps", SD3Request{Steps: 0}},
		{"NaN guidance", SD3Request{Steps: 2, GuidanceScale: math.NaN()}},
		{"NaN sigma", SD3Request{Sigmas: []float64{math.NaN()}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, dev := newFakeSD3(t, nil)
			_, err := p.Generate(context.Background(), tc.req, Hooks{})
			require.ErrorIs(t, err, runners.ErrBadRequest)
			require.Empty(t, dev.calls, "no device call for a bad request")
		})
	}
}

func TestSD3DeviceErrorStops(t *testing.T) {
	p, dev := newFakeSD3(t, nil)
	dev.failAt = 2
	_, err := p.Generate(context.Background(), SD3Request{Prompt: "a", Steps: 5, GuidanceScale: 3.5}, Hooks{})
	require.ErrorIs(t, err, errFake)
	require.ErrorContains(t, err, "transformer step 2 of 5")
	require.Equal(t, sd3Sequence(2)[:3], dev.calls)
}

func TestNewSD3Errors(t *testing.T) {
	tok := testTokenizer(t)
	_, err := NewSD3(nil, tok, nil, SD35Config())
	require.Error(t, err)
	cfg := SD35Config()
	cfg.VAEScalingFactor = 0
	_, err = NewSD3(&fakeSD3{spec: smallSD3Spec}, tok, nil, cfg)
	require.Error(t, err)
	bad := smallSD3Spec
	bad.JointDim = 8 // below the CLIP width
	_, err = NewSD3(&fakeSD3{spec: bad}, tok, nil, SD35Config())
	require.Error(t, err)
}
