package samplers

import (
	"math"
	"math/big"
)

// The helpers below spell out torch/numpy rounding: every float32 operation is rounded to
// float32 on its own (explicit conversions stop the compiler from fusing multiply-adds).

// torchLinspace32 is torch.linspace(start, end, steps, dtype=float32) on CPU as torch 1.13's
// AVX2 kernel computes it (the build the golden data came from): the ends are rounded to
// float32 and step = (end-start)/(steps-1) in float32. The output is made in blocks of 8: a
// block's base is start + step*idx in the first half and end - step*(steps-1-idx) in the
// second, each a fused multiply-add (GCC contracts it), and the block holds base + j*step for
// j = 0..7, rounded separately. The tail after the last full 16 is base values only.
// Newer torch versions compute every value as a base; values then differ by at most an ulp.
func torchLinspace32(start, end float64, steps int) []float32 {
	out := make([]float32, steps)
	if steps == 1 {
		out[0] = float32(start)
		return out
	}
	s, e := float32(start), float32(end)
	step := float32(float32(e-s) / float32(steps-1))
	half := steps / 2
	base := func(idx int) float32 {
		if idx < half {
			return fma32(step, float32(idx), s)
		}
		return fma32(-step, float32(steps-idx-1), e)
	}
	vec := steps / 16 * 16
	for idx := 0; idx < vec; idx += 8 {
		b := base(idx)
		for j := 0; j < 8; j++ {
			out[idx+j] = b + float32(float32(j)*step)
		}
	}
	for idx := vec; idx < steps; idx++ {
		out[idx] = base(idx)
	}
	return out
}

// fma32 is a*b+c rounded once to float32.
func fma32(a, b, c float32) float32 {
	var x, y big.Float
	x.SetPrec(128).SetFloat64(float64(a))
	y.SetPrec(128).SetFloat64(float64(b))
	x.Mul(&x, &y)
	y.SetFloat64(float64(c))
	x.Add(&x, &y)
	f, _ := x.Float32()
	return f
}

// numpyLinspace is numpy.linspace(start, stop, num) in float64: i*step + start, with the
// last value set to stop.
func numpyLinspace(start, stop float64, num int) []float64 {
	out := make([]float64, num)
	if num == 1 {
		out[0] = start
		return out
	}
	step := (stop - start) / float64(num-1)
	for i := range out {
		out[i] = float64(float64(i)*step) + start
	}
	out[num-1] = stop
	return out
}

// numpyInterp is numpy.interp(x, arange(len(fp)), fp) in float64.
func numpyInterp(x float64, fp []float32) float64 {
	n := len(fp)
	switch {
	case math.IsNaN(x):
		return x
	case x <= 0:
		return float64(fp[0])
	case x >= float64(n-1):
		return float64(fp[n-1])
	}
	j := int(math.Floor(x))
	if x == float64(j) {
		return float64(fp[j])
	}
	slope := (float64(fp[j+1]) - float64(fp[j])) / 1.0
	r := float64(slope*(x-float64(j))) + float64(fp[j])
	if math.IsNaN(r) {
		r = float64(slope*(x-float64(j+1))) + float64(fp[j+1])
	}
	return r
}

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }
