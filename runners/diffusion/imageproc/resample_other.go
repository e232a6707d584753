//go:build !amd64 || purego

package imageproc

// hasSIMD is false where there are no SIMD kernels: the portable path runs.
var hasSIMD = false

func vertAVX2(_, _ *uint8, _ *int, _ *int32, _, _ int) { panic("imageproc: no SIMD kernels") }

func horizAVX2(_, _, _, _ *uint8, _ *int, _ *int32, _, _, _ int) {
	panic("imageproc: no SIMD kernels")
}

func lutAVX2(_ *float32, _ *uint8, _ *float32, _ int) { panic("imageproc: no SIMD kernels") }
