package latents

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Kernel selects which of torch's CPU normal-fill kernels to reproduce.
type Kernel int

const (
	// KernelAVX2 is torch's normal_fill_AVX2 (CPU capability AVX2 or AVX512: the default
	// on x86-64 servers). Reproduced bit for bit.
	KernelAVX2 Kernel = iota
	// KernelDefault is torch's scalar normal_fill (ATEN_CPU_CAPABILITY=default, or CPUs
	// without AVX2, e.g. aarch64). Its logf/cosf/sinf come from the C library (glibc),
	// which this package approximates with Go's float64 maths: outputs agree with torch's to
	// within 3 ulp (measured on the goldens), not bit for bit. Tensors under 16 elements
	// are bit-exact.
	KernelDefault
)

// Errors returned by this package.
var (
	// ErrShape means a shape with a non-positive or too large element count.
	ErrShape = errors.New("latents: invalid shape")
	// ErrKernel means an unknown Kernel value.
	ErrKernel = errors.New("latents: unknown kernel")
)

// maxElements bounds one tensor (4 GiB of float32).
const maxElements = 1 << 30

// Generator is torch's CPU generator after torch.manual_seed(seed). It is not safe for
// concurrent use; draws advance it like torch's.
type Generator struct {
	mt     *mt19937
	kernel Kernel
	// cached second normal of the double-precision path (torch's next_double_normal_sample).
	nextDouble    float64
	hasNextDouble bool
}

// NewGenerator is torch.manual_seed(seed) on the CPU generator (only the low 32 bits of
// the seed matter to mt19937, as in torch), using the given normal-fill kernel.
func NewGenerator(seed uint64, kernel Kernel) (*Generator, error) {
	if kernel != KernelAVX2 && kernel != KernelDefault {
		return nil, fmt.Errorf("%w: %d", ErrKernel, kernel)
	}
	return &Generator{mt: newMT19937(seed), kernel: kernel}, nil
}

// Randn is torch.manual_seed(seed); torch.randn(shape) (float32, C order), e.g. shape
// {1, 4, 128, 128} for SDXL at 1024x1024 or {1, 16, 128, 128} for SD3.5. ctx is checked
// between blocks of work.
func Randn(ctx context.Context, seed uint64, kernel Kernel, shape ...int) ([]float32, error) {
	g, err := NewGenerator(seed, kernel)
	if err != nil {
		return nil, err
	}
	n, err := numel(shape)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := g.FillNormal(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

func numel(shape []int) (int, error) {
	if len(shape) == 0 {
		return 0, fmt.Errorf("%w: empty shape", ErrShape)
	}
	n := 1
	for _, d := range shape {
		if d <= 0 || n > maxElements/d {
			return 0, fmt.Errorf("%w: %v", ErrShape, shape)
		}
		n *= d
	}
	return n, nil
}

// uniform32 is at::uniform_real_distribution<float>(0, 1): 24 random bits / 2^24.
func (g *Generator) uniform32() float32 {
	return float32(g.mt.uint32()&(1<<24-1)) * (1.0 / (1 << 24))
}

// uniform64 is at::uniform_real_distribution<double>(0, 1): 53 random bits of a 64-bit
// draw / 2^53.
func (g *Generator) uniform64() float64 {
	return float64(g.mt.uint64()&(1<<53-1)) * (1.0 / (1 << 53))
}

// FillNormal fills out with standard normal float32 values as torch's normal_(0, 1) /
// randn does on a contiguous float32 tensor of len(out) elements.
func (g *Generator) FillNormal(ctx context.Context, out []float32) error {
	n := len(out)
	if n == 0 {
		return nil
	}
	if n < 16 {
		for i := range out {
			out[i] = float32(g.normalDouble())
		}
		return nil
	}
	for i := range out {
		out[i] = g.uniform32()
	}
	const checkEvery = 1 << 14
	for i := 0; i+16 <= n; i += 16 {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("latents: %w", err)
			}
		}
		g.boxMuller16(out[i : i+16])
	}
	if n%16 != 0 {
		tail := out[n-16:]
		for i := range tail {
			tail[i] = g.uniform32()
		}
		g.boxMuller16(tail)
	}
	return nil
}

// twoPi32 is 2.0f * pi<double> rounded to float32, as _mm256_set1_ps receives it.
var twoPi32 = float32(2.0 * math.Pi)

// boxMuller16 turns 16 uniforms into 16 normals: u1 = 1 - d[j] and u2 = d[j+8] give
// d[j] = r*cos(theta) and d[j+8] = r*sin(theta) for j = 0..7.
func (g *Generator) boxMuller16(d []float32) {
	for j := 0; j < 8; j++ {
		u1 := 1 - d[j]
		u2 := d[j+8]
		if g.kernel == KernelAVX2 {
			radius := float32(math.Sqrt(float64(-2 * log256(u1))))
			sin, cos := sincos256(twoPi32 * u2)
			// _mm256_fmadd_ps(n, std=1, mean=0) is n + 0.
			d[j] = float32(radius*cos) + 0
			d[j+8] = float32(radius*sin) + 0
			continue
		}
		radius := float32(math.Sqrt(float64(-2 * float32(math.Log(float64(u1))))))
		theta := float32(2.0 * math.Pi * float64(u2)) // computed in double, stored as float
		d[j] = float32(radius*float32(math.Cos(float64(theta)))) + 0
		d[j+8] = float32(radius*float32(math.Sin(float64(theta)))) + 0
	}
}

// normalDouble is at::normal_distribution<double>(0, 1) with the generator's cached second
// value: Box-Muller on two 53-bit uniforms, sin half kept for the next call.
func (g *Generator) normalDouble() float64 {
	if g.hasNextDouble {
		g.hasNextDouble = false
		return g.nextDouble
	}
	u1 := g.uniform64()
	u2 := g.uniform64()
	r := math.Sqrt(-2 * math.Log1p(-u2))
	theta := 2 * math.Pi * u1
	g.nextDouble, g.hasNextDouble = r*math.Sin(theta), true
	return r * math.Cos(theta)
}
