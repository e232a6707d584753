//go:build !purego

#include "textflag.h"

// The AVX2 kernels of resample_simd.go: Pillow's 8-bit fixed-point sums in 32-bit lanes
// (VPMULLD/VPADDD wrap as Pillow's int32 arithmetic does), clipped as clip8 by an arithmetic
// shift and two saturating packs. Row pointers and windows are checked by the Go callers.

// func vertAVX2(dst, src *uint8, offs *int, k *int32, n, width int)
// dst[x] = clip8(half + sum_i src[offs[i]+x]*k[i]) for x < width (a multiple of 8).
TEXT ·vertAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), R8
	MOVQ k+24(FP), R9
	MOVQ n+32(FP), R10
	MOVQ width+40(FP), R11
	MOVL $0x200000, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
	XORQ BX, BX

block32:
	LEAQ 32(BX), AX
	CMPQ AX, R11
	JA block8
	VMOVDQA Y8, Y0
	VMOVDQA Y8, Y1
	VMOVDQA Y8, Y2
	VMOVDQA Y8, Y3
	XORQ CX, CX

tap32:
	MOVQ (R8)(CX*8), DX
	ADDQ SI, DX
	ADDQ BX, DX
	VPBROADCASTD (R9)(CX*4), Y4
	VPMOVZXBD (DX), Y5
	VPMOVZXBD 8(DX), Y6
	VPMOVZXBD 16(DX), Y7
	VPMOVZXBD 24(DX), Y9
	VPMULLD Y4, Y5, Y5
	VPMULLD Y4, Y6, Y6
	VPMULLD Y4, Y7, Y7
	VPMULLD Y4, Y9, Y9
	VPADDD Y5, Y0, Y0
	VPADDD Y6, Y1, Y1
	VPADDD Y7, Y2, Y2
	VPADDD Y9, Y3, Y3
	INCQ CX
	CMPQ CX, R10
	JB tap32

	VPSRAD $22, Y0, Y0
	VPSRAD $22, Y1, Y1
	VPSRAD $22, Y2, Y2
	VPSRAD $22, Y3, Y3
	VEXTRACTI128 $1, Y0, X4
	VEXTRACTI128 $1, Y1, X5
	VEXTRACTI128 $1, Y2, X6
	VEXTRACTI128 $1, Y3, X7
	VPACKSSDW X4, X0, X0
	VPACKSSDW X5, X1, X1
	VPACKSSDW X6, X2, X2
	VPACKSSDW X7, X3, X3
	VPACKUSWB X1, X0, X0
	VPACKUSWB X3, X2, X2
	VMOVDQU X0, (DI)(BX*1)
	VMOVDQU X2, 16(DI)(BX*1)
	ADDQ $32, BX
	JMP block32

block8:
	LEAQ 8(BX), AX
	CMPQ AX, R11
	JA done
	VMOVDQA Y8, Y0
	XORQ CX, CX

tap8:
	MOVQ (R8)(CX*8), DX
	ADDQ SI, DX
	VPBROADCASTD (R9)(CX*4), Y4
	VPMOVZXBD (DX)(BX*1), Y5
	VPMULLD Y4, Y5, Y5
	VPADDD Y5, Y0, Y0
	INCQ CX
	CMPQ CX, R10
	JB tap8

	VPSRAD $22, Y0, Y0
	VEXTRACTI128 $1, Y0, X4
	VPACKSSDW X4, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVQ X0, (DI)(BX*1)
	ADDQ $8, BX
	JMP block8

done:
	VZEROUPPER
	RET

// func horizAVX2(dst0, dst1, src0, src1 *uint8, starts *int, k *int32, iters, ow, bpp int)
// Two rows: output pixel x reads 8*iters bytes of each row from byte offset starts[x], against
// 8*iters int32 weights from k[x*8*iters]. bpp 4: 4-byte pixels, two taps per 8 bytes, each
// weight stored four times; dst[4x+c] = clip8(half + sum over the taps). bpp 1: eight 1-byte
// taps per 8 bytes; dst[x] = clip8(half + sum).
TEXT ·horizAVX2(SB), NOSPLIT, $0-72
	MOVQ dst0+0(FP), DI
	MOVQ dst1+8(FP), R13
	MOVQ src0+16(FP), SI
	MOVQ src1+24(FP), R12
	MOVQ starts+32(FP), R8
	MOVQ k+40(FP), R9
	MOVQ iters+48(FP), R10
	MOVQ ow+56(FP), R11
	SUBQ SI, R12
	MOVL $0x200000, AX
	VMOVD AX, X8
	VPBROADCASTD X8, X8
	XORQ BX, BX

hx:
	CMPQ BX, R11
	JAE hdone
	MOVQ (R8)(BX*8), DX
	ADDQ SI, DX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	MOVQ R10, CX

htap:
	VMOVDQU (R9), Y3
	VPMOVZXBD (DX), Y2
	VPMOVZXBD (DX)(R12*1), Y4
	VPMULLD Y3, Y2, Y2
	VPMULLD Y3, Y4, Y4
	VPADDD Y2, Y0, Y0
	VPADDD Y4, Y1, Y1
	ADDQ $8, DX
	ADDQ $32, R9
	DECQ CX
	JNZ htap

	CMPQ bpp+64(FP), $4
	JNE hgray
	VEXTRACTI128 $1, Y0, X2
	VEXTRACTI128 $1, Y1, X4
	VPADDD X2, X0, X0
	VPADDD X4, X1, X1
	VPADDD X8, X0, X0
	VPADDD X8, X1, X1
	VPSRAD $22, X0, X0
	VPSRAD $22, X1, X1
	VPACKSSDW X1, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVD X0, (DI)(BX*4)
	VPEXTRD $1, X0, (R13)(BX*4)
	INCQ BX
	JMP hx

hgray:
	VPHADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X2
	VPADDD X2, X0, X0
	VPHADDD X0, X0, X0
	VPADDD X8, X0, X0
	VPSRAD $22, X0, X0
	VPACKSSDW X0, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVD X0, AX
	MOVB AX, (DI)(BX*1)
	SHRL $8, AX
	MOVB AX, (R13)(BX*1)
	INCQ BX
	JMP hx

hdone:
	VZEROUPPER
	RET

// func lutAVX2(dst *float32, src *uint8, table *float32, n int)
// dst[i] = table[src[i]] for i < n (a multiple of 8), eight lookups per gather.
TEXT ·lutAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ table+16(FP), R8
	MOVQ n+24(FP), CX
	XORQ BX, BX

lut1:
	CMPQ BX, CX
	JAE lut1done
	VPMOVZXBD (SI)(BX*1), Y1
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDD Y2, (R8)(Y1*4), Y0
	VMOVDQU Y0, (DI)(BX*4)
	ADDQ $8, BX
	JMP lut1

lut1done:
	VZEROUPPER
	RET
