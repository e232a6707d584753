package latents

import "math"

// This file evaluates, one lane at a time, the float32 polynomial log and sincos that torch's
// AVX2 normal fill uses (avx_mathfun.h, after Cephes and Julien Pommier's sse_mathfun,
// zlib licence), operation by operation. torch's build lets GCC contract a multiply whose
// result only feeds an add into one fused multiply-add; fma32 marks exactly those places.

// Cephes constants, rounded to float32 as the C source declares them.
const (
	cephesSQRTHF = float32(0.707106781186547524)
	logP0        = float32(7.0376836292e-2)
	logP1        = float32(-1.1514610310e-1)
	logP2        = float32(1.1676998740e-1)
	logP3        = float32(-1.2420140846e-1)
	logP4        = float32(1.4249322787e-1)
	logP5        = float32(-1.6668057665e-1)
	logP6        = float32(2.0000714765e-1)
	logP7        = float32(-2.4999993993e-1)
	logP8        = float32(3.3333331174e-1)
	logQ1        = float32(-2.12194440e-4)
	logQ2        = float32(0.693359375)

	minusDP1 = float32(-0.78515625)
	minusDP2 = float32(-2.4187564849853515625e-4)
	minusDP3 = float32(-3.77489497744594108e-8)
	sinP0    = float32(-1.9515295891e-4)
	sinP1    = float32(8.3321608736e-3)
	sinP2    = float32(-1.6666654611e-1)
	cosP0    = float32(2.443315711809948e-005)
	cosP1    = float32(-1.388731625493765e-003)
	cosP2    = float32(4.166664568298827e-002)
	fourOvPi = float32(1.27323954473516)

	minNormPos = 0x00800000
)

// fma32 is a*b+c rounded once to float32 (the VFMADD instruction). The product is exact in
// float64, so s = a*b+c rounded to float64 rounds correctly to float32 unless s lands
// exactly on a float32 rounding midpoint; only then is the rounding error of s consulted.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 24+24 bits
	cc := float64(c)
	s := p + cc
	if bits := math.Float64bits(s); bits&(1<<29-1) != 1<<28 && math.Abs(s) >= 0x1p-126 {
		return float32(s)
	}
	// Two-sum error of s: p + cc = s + e exactly.
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	r := float32(s)
	if e == 0 || float64(r) == s {
		return r
	}
	lo, hi := r, r
	if float64(r) < s {
		hi = math.Nextafter32(r, float32(math.Inf(1)))
	} else {
		lo = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	if s != (float64(lo)+float64(hi))/2 {
		return r
	}
	if e > 0 {
		return hi
	}
	return lo
}

// log256 is log256_ps for one lane: NaN for x <= 0.
func log256(x float32) float32 {
	if !(x > 0) {
		return float32(math.NaN())
	}
	bits := math.Float32bits(x)
	if bits < minNormPos {
		bits = minNormPos
	}
	e := float32(int32(bits>>23)-0x7f) + 1
	x = math.Float32frombits(bits&^0x7f800000 | 0x3f000000) // mantissa in [0.5, 1)
	if x < cephesSQRTHF {
		e--
		x = (x - 1) + x
	} else {
		x = (x - 1) + 0
	}
	z := x * x
	y := fma32(logP0, x, logP1)
	y = fma32(y, x, logP2)
	y = fma32(y, x, logP3)
	y = fma32(y, x, logP4)
	y = fma32(y, x, logP5)
	y = fma32(y, x, logP6)
	y = fma32(y, x, logP7)
	y = fma32(y, x, logP8)
	y = float32(y * x)
	y = fma32(y, z, float32(e*logQ1))
	y = y - z*0.5 // exact product: fused or not, the same
	x = x + y
	return x + e*logQ2 // e*logQ2 is exact
}

// sincos256 is sincos256_ps for one lane.
func sincos256(x float32) (sin, cos float32) {
	signSin := math.Float32bits(x) & 0x80000000
	x = float32(math.Abs(float64(x)))
	j := int32(x * fourOvPi) // truncation, as cvttps
	j = (j + 1) &^ 1
	y := float32(j)
	swapSin := uint32(j&4) << 29
	polySin := j&2 == 0 // true: the sine polynomial gives sin
	x = fma32(y, minusDP1, x)
	x = fma32(y, minusDP2, x)
	x = fma32(y, minusDP3, x)
	signCos := uint32(^(j-2)&4) << 29
	signSin ^= swapSin

	z := x * x
	yc := fma32(cosP0, z, cosP1)
	yc = fma32(yc, z, cosP2)
	yc = yc * z
	yc = fma32(yc, z, -(z * 0.5))
	yc = yc + 1

	ys := fma32(sinP0, z, sinP1)
	ys = fma32(ys, z, sinP2)
	ys = ys * z
	ys = fma32(ys, x, x)

	// The lanes are selected by masking and adding, so a -0 result comes out as +0.
	var s, c float32
	if polySin {
		s, c = ys+0, yc+0
	} else {
		s, c = yc+0, ys+0
	}
	return math.Float32frombits(math.Float32bits(s) ^ signSin), math.Float32frombits(math.Float32bits(c) ^ signCos)
}
