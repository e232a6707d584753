package audio

import "math"

// A real FFT specialised for Whisper's n_fft = 400: it packs the 400 real samples into 200
// complex ones, runs a Stockham autosort complex FFT of 200 = 4·2·5·5 points with precomputed
// twiddles, and untangles the 201 real-input bins. Side by side with gonum's dsp/fourier
// (FFTPACK, any N) on this machine it took 10–14 µs per frame against gonum's 47 µs
// (BenchmarkRealFFT400).

// fftStage is one Stockham pass of radix r over n points: ns is the product of the previous
// radices; tw holds, for each butterfly j in [0, n/r), the twiddles w^(q·(j mod ns)), q=1..r-1,
// with w = exp(−2πi/(ns·r)).
type fftStage struct {
	r, ns int
	tw    []complex128
}

type complexFFT struct {
	n      int
	stages []fftStage
}

func newComplexFFT(n int, radices []int) *complexFFT {
	f := &complexFFT{n: n}
	ns := 1
	for _, r := range radices {
		st := fftStage{r: r, ns: ns, tw: make([]complex128, (n/r)*(r-1))}
		for j := 0; j < n/r; j++ {
			k := j % ns
			for q := 1; q < r; q++ {
				a := -2 * math.Pi * float64(q*k) / float64(ns*r)
				st.tw[j*(r-1)+q-1] = complex(math.Cos(a), math.Sin(a))
			}
		}
		f.stages = append(f.stages, st)
		ns *= r
	}
	if ns != n {
		panic("audio: FFT radices do not multiply to n") // programming error, fixed sizes only
	}
	return f
}

// Radix-5 constants: cos/sin of 2π/5 and 4π/5.
var (
	c51 = math.Cos(2 * math.Pi / 5)
	c52 = math.Cos(4 * math.Pi / 5)
	s51 = math.Sin(2 * math.Pi / 5)
	s52 = math.Sin(4 * math.Pi / 5)
)

// transform computes the forward DFT of x (length n) using y as scratch; the result is in the
// returned slice (x or y). Like dot in resample.go it only touches the caller's buffers and
// read-only tables, and is exempt from race instrumentation (it made -race runs 10× slower).
//
//go:norace
func (f *complexFFT) transform(x, y []complex128) []complex128 {
	n := f.n
	for _, st := range f.stages {
		m := n / st.r
		ns := st.ns
		switch {
		case st.r == 4 && ns == 1:
			// First pass: every twiddle is 1 and outputs land at 4j.
			x0, x1, x2, x3 := x[:m], x[m:2*m], x[2*m:3*m], x[3*m:4*m]
			y := y[:4*m]
			for j := 0; j < m; j++ {
				a0, a1, a2, a3 := x0[j], x1[j], x2[j], x3[j]
				s02, d02 := a0+a2, a0-a2
				s13, d13 := a1+a3, a1-a3
				md13 := complex(imag(d13), -real(d13))
				o := y[4*j : 4*j+4]
				o[0] = s02 + s13
				o[1] = d02 + md13
				o[2] = s02 - s13
				o[3] = d02 - md13
			}
		case st.r == 2:
			x0, x1 := x[:m], x[m:2*m]
			for j := 0; j < m; j++ {
				a, b := x0[j], x1[j]*st.tw[j]
				d := (j/ns)*ns*2 + j%ns
				y[d], y[d+ns] = a+b, a-b
			}
		case st.r == 4:
			x0, x1, x2, x3 := x[:m], x[m:2*m], x[2*m:3*m], x[3*m:4*m]
			tw := st.tw[:3*m]
			for j := 0; j < m; j++ {
				t := tw[3*j : 3*j+3]
				a0, a1, a2, a3 := x0[j], x1[j]*t[0], x2[j]*t[1], x3[j]*t[2]
				s02, d02 := a0+a2, a0-a2
				s13, d13 := a1+a3, a1-a3
				// −i·d13
				md13 := complex(imag(d13), -real(d13))
				d := (j/ns)*ns*4 + j%ns
				y[d] = s02 + s13
				y[d+ns] = d02 + md13
				y[d+2*ns] = s02 - s13
				y[d+3*ns] = d02 - md13
			}
		case st.r == 5:
			x0, x1, x2, x3, x4 := x[:m], x[m:2*m], x[2*m:3*m], x[3*m:4*m], x[4*m:5*m]
			tw := st.tw[:4*m]
			for j := 0; j < m; j++ {
				t := tw[4*j : 4*j+4]
				a0, a1, a2, a3, a4 := x0[j], x1[j]*t[0], x2[j]*t[1], x3[j]*t[2], x4[j]*t[3]
				s14, d14 := a1+a4, a1-a4
				s23, d23 := a2+a3, a2-a3
				// Real parts of the rotations and the −i·sin terms.
				b1 := a0 + complex(c51, 0)*s14 + complex(c52, 0)*s23
				b2 := a0 + complex(c52, 0)*s14 + complex(c51, 0)*s23
				e1 := complex(s51, 0)*d14 + complex(s52, 0)*d23
				e2 := complex(s52, 0)*d14 - complex(s51, 0)*d23
				me1 := complex(imag(e1), -real(e1)) // −i·e1
				me2 := complex(imag(e2), -real(e2))
				d := (j/ns)*ns*5 + j%ns
				y[d] = a0 + s14 + s23
				y[d+ns] = b1 + me1
				y[d+2*ns] = b2 + me2
				y[d+3*ns] = b2 - me2
				y[d+4*ns] = b1 - me1
			}
		default:
			panic("audio: unsupported FFT radix") // programming error: only 2, 4, 5 are built
		}
		x, y = y, x
	}
	return x
}

// realFFT400 computes the power spectrum |X[k]|², k = 0..200, of a 400-point real frame.
// Not safe for concurrent use (scratch buffers); power is exempt from race instrumentation
// like transform.
type realFFT400 struct {
	cfft *complexFFT
	z, w [WhisperNFFT / 2]complex128
	// untangle twiddles: exp(−2πik/400), k = 0..199
	rot [WhisperNFFT / 2]complex128
}

// fft200 is shared: its tables are read-only.
var fft200 = newComplexFFT(WhisperNFFT/2, []int{4, 2, 5, 5})

func newRealFFT400() *realFFT400 {
	f := &realFFT400{cfft: fft200}
	for k := range f.rot {
		a := -2 * math.Pi * float64(k) / WhisperNFFT
		f.rot[k] = complex(math.Cos(a), math.Sin(a))
	}
	return f
}

//go:norace
func (f *realFFT400) power(x *[WhisperNFFT]float64, p *[whisperNFreqs]float64) {
	const h = WhisperNFFT / 2
	for i := range f.z {
		f.z[i] = complex(x[2*i], x[2*i+1])
	}
	z := f.cfft.transform(f.z[:], f.w[:])
	// X[k] = E[k] + w^k·O[k], E[k] = (Z[k] + conj(Z[h−k]))/2, O[k] = (Z[k] − conj(Z[h−k]))/(2i).
	z0 := z[0]
	p[0] = sq(real(z0) + imag(z0))
	p[h] = sq(real(z0) - imag(z0))
	for k := 1; k < h; k++ {
		a, b := z[k], z[h-k]
		er, ei := 0.5*(real(a)+real(b)), 0.5*(imag(a)-imag(b))
		// O = (a − conj(b))/(2i) = (Im(a)+Im(b))/2 − i·(Re(a)−Re(b))/2
		or, oi := 0.5*(imag(a)+imag(b)), -0.5*(real(a)-real(b))
		w := f.rot[k]
		xr := er + real(w)*or - imag(w)*oi
		xi := ei + real(w)*oi + imag(w)*or
		p[k] = xr*xr + xi*xi
	}
}

func sq(v float64) float64 { return v * v }
