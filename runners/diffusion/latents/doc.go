// Package latents draws the initial diffusion latents from a seed exactly as the Python
// server does with torch's CPU generator: torch.manual_seed(seed) followed by
// torch.randn(shape, dtype=float32). It reimplements torch's mt19937 engine, its uniform
// floats (24 random bits / 2^24) and its CPU normal fill for float32 tensors: all uniforms
// first, then Box-Muller over blocks of 16 (first 8 give the radii, last 8 the angles), the
// last 16 redrawn when the size is not a multiple of 16.
//
// torch picks the Box-Muller arithmetic by CPU capability. On x86-64 with AVX2 (every
// current server) it is the AVX2 kernel with polynomial float32 log and sincos
// (KernelAVX2); without AVX2 it is the scalar kernel using the C library's logf/cosf/sinf
// (KernelDefault). Tensors under 16 elements use a third, double-precision path.
package latents
