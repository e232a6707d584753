package diffusionpipeline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// pooledFake is a fake SDXL device whose UNet output depends on the row's conditioning
// (its first pooled value), not on the row's position in the batch: splitting the guidance
// batch must then not change the result.
type pooledFake struct{ fakeDevice }

func (f *pooledFake) UNet(_ context.Context, sample []float32, t float32, cond *Cond) ([]float32, error) {
	f.calls = append(f.calls, "unet")
	f.conds = append(f.conds, cond)
	f.samples = append(f.samples, append([]float32(nil), sample...))
	if len(f.conds) == f.failAt {
		return nil, errFake
	}
	elems, pooled := f.spec.LatentElems(), f.spec.PooledSize
	out := make([]float32, len(sample))
	for i, v := range sample {
		out[i] = 0.5*v + 1e-3*cond.Pooled[(i/elems)*pooled] + 1e-4*t
	}
	return out, nil
}

func TestCFGSplit(t *testing.T) {
	tok := testTokenizer(t)
	req := Request{Prompt: "the man", NegativePrompt: ptr("an ant"), Steps: 4, GuidanceScale: 5, GuidanceRescale: 0.5, Seed: ptr[int64](9)}

	whole := &pooledFake{fakeDevice{spec: smallSpec}}
	p, err := New(whole, tok, SDXLConfig())
	require.NoError(t, err)
	want, err := p.Generate(context.Background(), req, nil)
	require.NoError(t, err)

	a, b := &pooledFake{fakeDevice{spec: smallSpec}}, &pooledFake{fakeDevice{spec: smallSpec}}
	split, err := NewCFGSplit(a, b)
	require.NoError(t, err)
	p, err = New(split, tok, SDXLConfig())
	require.NoError(t, err)
	got, err := p.Generate(context.Background(), req, nil)
	require.NoError(t, err)
	require.Equal(t, want.Pix, got.Pix, "the split gives the same image")
	require.Equal(t, whole.vaeIn, a.vaeIn)

	require.Equal(t, sequence(4), a.calls, "encoders, the unconditional halves and the VAE on the first device")
	require.Equal(t, []string{"unet", "unet", "unet", "unet"}, b.calls, "only the conditional halves on the second")
	elems := smallSpec.LatentElems()
	full := whole.conds[0]
	for i := range 4 {
		ca, cb := a.conds[i], b.conds[i]
		require.Same(t, a.conds[0], ca, "one conditioning per request and device")
		require.Same(t, b.conds[0], cb)
		require.Equal(t, 1, ca.Batch)
		require.Equal(t, full.Hidden[:len(full.Hidden)/2], ca.Hidden)
		require.Equal(t, full.Hidden[len(full.Hidden)/2:], cb.Hidden)
		require.Equal(t, full.Pooled[smallSpec.PooledSize:], cb.Pooled)
		require.Equal(t, full.TimeIDs[6:], cb.TimeIDs)
		require.Equal(t, whole.samples[i][:elems], a.samples[i])
		require.Equal(t, whole.samples[i][elems:], b.samples[i])
	}

	// Without guidance the step runs on the first device only.
	a.calls, b.calls = nil, nil
	_, err = p.Generate(context.Background(), Request{Prompt: "a", Steps: 2, GuidanceScale: 1, Seed: ptr[int64](1)}, nil)
	require.NoError(t, err)
	require.Equal(t, sequence(2), a.calls)
	require.Empty(t, b.calls)

	// A failing half fails the step.
	b.failAt = len(b.conds) + 2
	_, err = p.Generate(context.Background(), Request{Prompt: "a", Steps: 4, GuidanceScale: 5, Seed: ptr[int64](1)}, nil)
	require.ErrorIs(t, err, errFake)
	require.ErrorContains(t, err, "UNet step 2 of 4")

	_, err = NewCFGSplit(a, &pooledFake{fakeDevice{spec: Spec{LatentChannels: 4, LatentHeight: 16, LatentWidth: 16}}})
	require.Error(t, err)
	_, err = NewCFGSplit(nil, a)
	require.Error(t, err)
}

// pooledSD3Fake is pooledFake for SD3.5.
type pooledSD3Fake struct{ fakeSD3 }

func (f *pooledSD3Fake) Transformer(_ context.Context, sample []float32, t float32, cond *SD3Cond) ([]float32, error) {
	f.calls = append(f.calls, "transformer")
	f.conds = append(f.conds, cond)
	elems, pooled := f.spec.LatentElems(), f.spec.PooledSize
	out := make([]float32, len(sample))
	for i, v := range sample {
		out[i] = 0.3*v - 1e-3*cond.Pooled[(i/elems)*pooled] + 1e-4*t
	}
	return out, nil
}

func TestSD3CFGSplit(t *testing.T) {
	tok := testTokenizer(t)
	req := SD3Request{Prompt: "the man", NegativePrompt: "an ant", Steps: 3, GuidanceScale: 3.5, Seed: ptr[int64](9)}
	whole := &pooledSD3Fake{fakeSD3{spec: smallSD3Spec}}
	p, err := NewSD3(whole, tok, &fakeT5{}, SD35Config())
	require.NoError(t, err)
	want, err := p.Generate(context.Background(), req, Hooks{})
	require.NoError(t, err)

	a, b := &pooledSD3Fake{fakeSD3{spec: smallSD3Spec}}, &pooledSD3Fake{fakeSD3{spec: smallSD3Spec}}
	split, err := NewSD3CFGSplit(a, b)
	require.NoError(t, err)
	p, err = NewSD3(split, tok, &fakeT5{}, SD35Config())
	require.NoError(t, err)
	got, err := p.Generate(context.Background(), req, Hooks{})
	require.NoError(t, err)
	require.Equal(t, want.Pix, got.Pix)
	require.Equal(t, sd3Sequence(3), a.calls)
	require.Equal(t, []string{"transformer", "transformer", "transformer"}, b.calls)
	full := whole.conds[0]
	require.Equal(t, full.Hidden[len(full.Hidden)/2:], b.conds[0].Hidden)
	require.Equal(t, full.Pooled[:smallSD3Spec.PooledSize], a.conds[0].Pooled)
}
