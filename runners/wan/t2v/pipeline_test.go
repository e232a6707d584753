package t2v

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
)

func testTokenizer(t *testing.T) *umt5.Tokenizer {
	t.Helper()
	tok, err := umt5.Load(wangolden.Path(t, "umt5_test.model"))
	require.NoError(t, err)
	return tok
}

func smallSim(t *testing.T) (*Pipeline, *SimDevice) {
	t.Helper()
	sh, err := ShapeFor(17, 64, 48)
	require.NoError(t, err)
	d := NewSimDevice(Spec{Shape: sh, TextLen: umt5.MaxLength, TextDim: 8}, SimLatency{})
	p, err := New(d, testTokenizer(t), Wan22Config())
	require.NoError(t, err)
	return p, d
}

// TestSimCallSequence is the call sequence of a Wan2.2 clip on the simulated device: the
// UMT5 encoder runs twice (prompt and negative prompt: classifier-free guidance), each step
// runs one expert twice (conditional and unconditional) — the high-noise expert while the
// timestep is >= 875, then the low-noise one — and the VAE decodes once; without guidance
// (scale 1) the negative prompt and the unconditional runs are skipped.
func TestSimCallSequence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   Request
		twice bool
	}{
		{"40 steps, guidance 4/3", Request{Prompt: "a cat", Steps: 40, Seed: 1}, true},
		{"4 steps", Request{Prompt: "a cat", NegativePrompt: "blurry", Steps: 4, Seed: 2}, true},
		{"no guidance", Request{Prompt: "a cat", Steps: 6, Seed: 3, Guidance: &Guidance{Scale: 1, Scale2: 1}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, d := smallSim(t)
			done := 0
			frames, err := p.Generate(context.Background(), tc.req, Hooks{Step: func(i, n int) error {
				require.Equal(t, done+1, i)
				require.Equal(t, tc.req.Steps, n)
				done = i
				return nil
			}})
			require.NoError(t, err)
			require.Equal(t, tc.req.Steps, done)
			require.Len(t, frames, 17)
			require.Len(t, frames[0], 64*48*3)
			sched, err := Wan22Config().Sampler.Schedule(tc.req.Steps)
			require.NoError(t, err)
			per := 1
			if tc.twice {
				per = 2
			}
			var experts []int
			var ts []int64
			for _, t := range sched.Timesteps {
				e := HighNoise
				if t < 875 {
					e = LowNoise
				}
				for range per {
					experts = append(experts, e)
					ts = append(ts, t)
				}
			}
			st := d.Stats()
			require.Equal(t, per, st.Encodes)
			require.Equal(t, experts, st.Experts)
			require.Equal(t, ts, st.Timesteps)
			require.Equal(t, 1, st.VAEs)
			require.Positive(t, st.Steps[HighNoise])
			if tc.req.Steps >= 4 {
				require.Positive(t, st.Steps[LowNoise], "the low-noise expert takes the later steps")
			}
		})
	}
}

// TestSimClip: the clip is a deterministic function of prompt, negative prompt, seed, steps
// and guidance, and it moves (frames differ).
func TestSimClip(t *testing.T) {
	p, _ := smallSim(t)
	gen := func(r Request) [][]byte {
		f, err := p.Generate(context.Background(), r, Hooks{})
		require.NoError(t, err)
		return f
	}
	base := Request{Prompt: "a red fox in snow", Steps: 6, Seed: 42}
	a := gen(base)
	require.Equal(t, a, gen(base))
	require.False(t, bytes.Equal(a[0], a[16]), "the picture moves")
	for _, change := range []func(r *Request){
		func(r *Request) { r.Seed = 43 },
		func(r *Request) { r.Prompt = "a blue whale in the sky" },
		func(r *Request) { r.NegativePrompt = "static" },
		func(r *Request) { r.Steps = 7 },
		func(r *Request) { r.Guidance = &Guidance{Scale: 5, Scale2: 2} },
	} {
		o := base
		change(&o)
		require.NotEqual(t, a, gen(o), "%+v reaches the clip", o)
	}
}

// TestSimCancel: a cancelled context stops before the next step; a hook's error stops too.
func TestSimCancel(t *testing.T) {
	p, d := smallSim(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := p.Generate(ctx, Request{Prompt: "x", Steps: 10}, Hooks{Step: func(i, _ int) error {
		if i == 3 {
			cancel()
		}
		return nil
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "before step 4 of 10")
	require.Equal(t, 6, len(d.Stats().Experts), "three steps of two runs")
	stop := errors.New("stop")
	_, err = p.Generate(context.Background(), Request{Prompt: "x", Steps: 10}, Hooks{Step: func(int, int) error { return stop }})
	require.ErrorIs(t, err, stop)
}

func TestRequestRefused(t *testing.T) {
	p, _ := smallSim(t)
	_, err := p.Generate(context.Background(), Request{Prompt: "x", Steps: 0}, Hooks{})
	require.ErrorIs(t, err, ErrRequest)
	require.ErrorContains(t, err, "num_inference_steps")
	for _, c := range [][3]int{{0, 480, 832}, {81, 8, 832}, {81, 480, -1}} {
		_, err := ShapeFor(c[0], c[1], c[2])
		require.ErrorIs(t, err, ErrRequest, "%v", c)
	}
	sh, err := ShapeFor(81, 480, 832)
	require.NoError(t, err)
	_, err = New(NewSimDevice(Spec{Shape: sh, TextLen: 226, TextDim: 8}, SimLatency{}), testTokenizer(t), Wan22Config())
	require.ErrorContains(t, err, "the text encoder takes 226")
}

func TestToFrames(t *testing.T) {
	// 3 channels x 2 frames x 1x2 pixels: -1 -> 0, 1 -> 255, 0 -> 128 (127.5 rounds to even), clamp.
	v := []float32{-1, 1, 0, 3, -1, 1, 0, -3, 0.5, 0.5, 0.5, 0.5}
	f, err := ToFrames(v, 2, 1, 2)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{0, 0, 191, 255, 255, 191}, {128, 128, 191, 255, 0, 191}}, f)
	_, err = ToFrames(v, 3, 1, 2)
	require.ErrorContains(t, err, "12 values")
}

// idsDevice records the ids of every Encode call.
type idsDevice struct {
	*SimDevice
	ids [][]int
}

func (d *idsDevice) Encode(ctx context.Context, ids, mask []int) ([]float32, error) {
	d.ids = append(d.ids, append([]int(nil), ids...))
	return d.SimDevice.Encode(ctx, ids, mask)
}

// TestHEADSampling: Wan22Config samples as tt-metal's WanPipeline, which HEAD's runners build
// (catalogue.Wan22Sampling): flow_shift 12 (2 steps: t 999 and 923, both >= 875), a 2-step
// run's second step on the low-noise expert (warmup_t2) but not a 3-step run's, and Wan's
// default negative prompt encoded when the request has none (HEAD passes negative_prompts only
// when non-empty); a request's own negative prompt is encoded as sent. Without the rule and
// the default (diffusers' behaviour) a 2-step run stays on the high-noise expert and "" is
// encoded.
func TestHEADSampling(t *testing.T) {
	tok := testTokenizer(t)
	def := Wan22Config()
	diffusers := def
	diffusers.TwoStepLowNoise, diffusers.DefaultNegativePrompt = false, ""
	for _, tc := range []struct {
		name      string
		cfg       Config
		steps     int
		negative  string
		timesteps []int64
		experts   []int
		encoded   string
	}{
		{"2 steps", def, 2, "", []int64{999, 923}, []int{HighNoise, HighNoise, LowNoise, LowNoise}, catalogue.Wan22Sampling.DefaultNegativePrompt},
		{"2 steps, own negative prompt", def, 2, "blurry", []int64{999, 923}, []int{HighNoise, HighNoise, LowNoise, LowNoise}, "blurry"},
		{"3 steps", def, 3, "", []int64{999, 960, 857},
			[]int{HighNoise, HighNoise, HighNoise, HighNoise, LowNoise, LowNoise}, catalogue.Wan22Sampling.DefaultNegativePrompt},
		{"2 steps, diffusers", diffusers, 2, "", []int64{999, 923}, []int{HighNoise, HighNoise, HighNoise, HighNoise}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh, err := ShapeFor(17, 64, 48)
			require.NoError(t, err)
			d := &idsDevice{SimDevice: NewSimDevice(Spec{Shape: sh, TextLen: umt5.MaxLength, TextDim: 8}, SimLatency{})}
			p, err := New(d, tok, tc.cfg)
			require.NoError(t, err)
			_, err = p.Generate(context.Background(), Request{Prompt: "a cat", NegativePrompt: tc.negative, Steps: tc.steps, Seed: 1}, Hooks{})
			require.NoError(t, err)
			st := d.Stats()
			var ts []int64
			for _, x := range tc.timesteps {
				ts = append(ts, x, x)
			}
			require.Equal(t, ts, st.Timesteps)
			require.Equal(t, tc.experts, st.Experts)
			require.Len(t, d.ids, 2)
			require.Equal(t, tok.Encode(tc.encoded).IDs, d.ids[1], "the negative prompt encoded")
			require.NotEqual(t, tok.Encode("").IDs, tok.Encode(catalogue.Wan22Sampling.DefaultNegativePrompt).IDs)
		})
	}
}
