//go:build !purego

package imageproc

import "golang.org/x/sys/cpu"

// hasSIMD turns on the AVX2 kernels (resample_amd64.s); tests turn it off to check the
// portable path against the same references.
var hasSIMD = cpu.X86.HasAVX2

//go:noescape
func vertAVX2(dst, src *uint8, offs *int, k *int32, n, width int)

//go:noescape
func horizAVX2(dst0, dst1, src0, src1 *uint8, starts *int, k *int32, iters, ow, bpp int)

//go:noescape
func lutAVX2(dst *float32, src *uint8, table *float32, n int)
