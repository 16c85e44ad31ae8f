//go:build amd64 && !purego

#include "textflag.h"

// func panel16AVX512(c *float32, ldc int, x *float32, ldx int, byRows int, w *float32, ldw int, k int, rows int)
//
// c (rows x 16, row stride ldc floats) += aᵀ·w for 16 input rows a of k
// terms, read from x p-major, a[i][p] = x[p*ldx+i] (packed: ldx 16), or,
// with byRows 1, row by row, a[i][p] = x[i*ldx+p]; and w (k, 16, row
// stride ldw floats) one weight panel, packed (ldw 16) or in place.
// Sixteen ZMM accumulators hold the 16x16 result; each step of the k loop
// loads one 16-wide row of the panel and does 16 broadcast FMAs against it.
// The weights stream from memory: a prefetch 16 KB ahead into L2 keeps
// about 250 steps of them in flight (2 KB ahead into L1 streamed 17 GB/s
// on one core of an AMD EPYC, 16 KB 21 GB/s; the step 6 % faster).
// Only the first rows (1..16) rows of c are written; all 16 of a are read.
TEXT ·panel16AVX512(SB), NOSPLIT, $8-72
	// Denormals read as zero and results that would be denormal are zero
	// (MXCSR's DAZ and FTZ) while the kernel runs: on Intel CPUs each
	// costs a microcode assist, and training makes enough of them to halve
	// its speed.
	STMXCSR 0(SP)
	MOVL 0(SP), R12
	ORL $0x8040, R12
	MOVL R12, 4(SP)
	LDMXCSR 4(SP)
	MOVQ c+0(FP), AX
	MOVQ ldc+8(FP), R9
	SHLQ $2, R9
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), R8
	SHLQ $2, R8
	MOVQ w+40(FP), SI
	MOVQ ldw+48(FP), R11
	SHLQ $2, R11
	MOVQ k+56(FP), CX
	MOVQ rows+64(FP), R10
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	CMPQ byRows+32(FP), $0
	JNE byrows
loop:
	VMOVUPS (SI), Z16
	PREFETCHT2 16384(SI)
	VFMADD231PS.BCST 0(DI), Z16, Z0
	VFMADD231PS.BCST 4(DI), Z16, Z1
	VFMADD231PS.BCST 8(DI), Z16, Z2
	VFMADD231PS.BCST 12(DI), Z16, Z3
	VFMADD231PS.BCST 16(DI), Z16, Z4
	VFMADD231PS.BCST 20(DI), Z16, Z5
	VFMADD231PS.BCST 24(DI), Z16, Z6
	VFMADD231PS.BCST 28(DI), Z16, Z7
	VFMADD231PS.BCST 32(DI), Z16, Z8
	VFMADD231PS.BCST 36(DI), Z16, Z9
	VFMADD231PS.BCST 40(DI), Z16, Z10
	VFMADD231PS.BCST 44(DI), Z16, Z11
	VFMADD231PS.BCST 48(DI), Z16, Z12
	VFMADD231PS.BCST 52(DI), Z16, Z13
	VFMADD231PS.BCST 56(DI), Z16, Z14
	VFMADD231PS.BCST 60(DI), Z16, Z15
	ADDQ R11, SI
	ADDQ R8, DI
	DECQ CX
	JNZ loop
	JMP store

byrows:
	// Rows 0-7 from DI, 8-15 from DX, at 0-7 row strides (R8 is one).
	LEAQ (R8)(R8*2), R12 // 3
	LEAQ (R8)(R8*4), R13 // 5
	LEAQ (R12)(R8*4), BX // 7
	LEAQ (DI)(R8*8), DX
rowsloop:
	VMOVUPS (SI), Z16
	PREFETCHT2 16384(SI)
	VFMADD231PS.BCST (DI), Z16, Z0
	VFMADD231PS.BCST (DI)(R8*1), Z16, Z1
	VFMADD231PS.BCST (DI)(R8*2), Z16, Z2
	VFMADD231PS.BCST (DI)(R12*1), Z16, Z3
	VFMADD231PS.BCST (DI)(R8*4), Z16, Z4
	VFMADD231PS.BCST (DI)(R13*1), Z16, Z5
	VFMADD231PS.BCST (DI)(R12*2), Z16, Z6
	VFMADD231PS.BCST (DI)(BX*1), Z16, Z7
	VFMADD231PS.BCST (DX), Z16, Z8
	VFMADD231PS.BCST (DX)(R8*1), Z16, Z9
	VFMADD231PS.BCST (DX)(R8*2), Z16, Z10
	VFMADD231PS.BCST (DX)(R12*1), Z16, Z11
	VFMADD231PS.BCST (DX)(R8*4), Z16, Z12
	VFMADD231PS.BCST (DX)(R13*1), Z16, Z13
	VFMADD231PS.BCST (DX)(R12*2), Z16, Z14
	VFMADD231PS.BCST (DX)(BX*1), Z16, Z15
	ADDQ R11, SI
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ rowsloop

store:
	VADDPS (AX), Z0, Z0
	VMOVUPS Z0, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z1, Z1
	VMOVUPS Z1, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z2, Z2
	VMOVUPS Z2, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z3, Z3
	VMOVUPS Z3, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z4, Z4
	VMOVUPS Z4, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z5, Z5
	VMOVUPS Z5, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z6, Z6
	VMOVUPS Z6, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z7, Z7
	VMOVUPS Z7, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z8, Z8
	VMOVUPS Z8, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z9, Z9
	VMOVUPS Z9, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z10, Z10
	VMOVUPS Z10, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z11, Z11
	VMOVUPS Z11, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z12, Z12
	VMOVUPS Z12, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z13, Z13
	VMOVUPS Z13, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z14, Z14
	VMOVUPS Z14, (AX)
	DECQ R10
	JZ done
	ADDQ R9, AX
	VADDPS (AX), Z15, Z15
	VMOVUPS Z15, (AX)
done:
	LDMXCSR 0(SP)
	VZEROUPPER
	RET

// func packRowsAVX512(xp *float32, in *float32, ld int, k int, nr int)
//
// xp (k, 16) gets the first k columns of nr (1..16) rows of in (row stride
// ld floats) p-major, zeros in the other row slots: xp[p*16+i] =
// in[i*ld+p]; k >= 1.
// Sixteen columns at a time: the rows' 64 bytes are loaded into Z0-Z15
// (masked at the end of a row), transposed 16x16 in registers through
// Z16-Z31 (pairs of floats, then of doubles, then 128-bit lanes twice), and
// stored as sixteen whole 64-byte rows of xp.
TEXT ·packRowsAVX512(SB), NOSPLIT, $0-40
	MOVQ xp+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8 // row stride, bytes
	MOVQ k+24(FP), R11
	MOVQ nr+32(FP), R9
block:
	MOVQ R11, BX // columns in this block: min(k left, 16)
	CMPQ BX, $16
	JLE lanes
	MOVQ $16, BX
lanes:
	MOVL $16, CX
	SUBL BX, CX
	MOVL $0xffff, AX
	SHRL CX, AX
	KMOVW AX, K1
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ SI, AX
	MOVQ R9, DX
	VMOVUPS.Z (AX), K1, Z0
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z1
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z2
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z3
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z4
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z5
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z6
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z7
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z8
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z9
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z10
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z11
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z12
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z13
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z14
	DECQ DX
	JZ loaded
	ADDQ R8, AX
	VMOVUPS.Z (AX), K1, Z15
loaded:
	// Z16-Z31: 2x2 blocks of floats
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29
	VUNPCKLPS Z15, Z14, Z30
	VUNPCKHPS Z15, Z14, Z31
	// Z0-Z15: 4x4 blocks
	VUNPCKLPD Z18, Z16, Z0
	VUNPCKHPD Z18, Z16, Z1
	VUNPCKLPD Z19, Z17, Z2
	VUNPCKHPD Z19, Z17, Z3
	VUNPCKLPD Z22, Z20, Z4
	VUNPCKHPD Z22, Z20, Z5
	VUNPCKLPD Z23, Z21, Z6
	VUNPCKHPD Z23, Z21, Z7
	VUNPCKLPD Z26, Z24, Z8
	VUNPCKHPD Z26, Z24, Z9
	VUNPCKLPD Z27, Z25, Z10
	VUNPCKHPD Z27, Z25, Z11
	VUNPCKLPD Z30, Z28, Z12
	VUNPCKHPD Z30, Z28, Z13
	VUNPCKLPD Z31, Z29, Z14
	VUNPCKHPD Z31, Z29, Z15
	// Z16-Z31: 128-bit lanes of row pairs four apart
	VSHUFF32X4 $0x88, Z4, Z0, Z16
	VSHUFF32X4 $0xdd, Z4, Z0, Z20
	VSHUFF32X4 $0x88, Z5, Z1, Z17
	VSHUFF32X4 $0xdd, Z5, Z1, Z21
	VSHUFF32X4 $0x88, Z6, Z2, Z18
	VSHUFF32X4 $0xdd, Z6, Z2, Z22
	VSHUFF32X4 $0x88, Z7, Z3, Z19
	VSHUFF32X4 $0xdd, Z7, Z3, Z23
	VSHUFF32X4 $0x88, Z12, Z8, Z24
	VSHUFF32X4 $0xdd, Z12, Z8, Z28
	VSHUFF32X4 $0x88, Z13, Z9, Z25
	VSHUFF32X4 $0xdd, Z13, Z9, Z29
	VSHUFF32X4 $0x88, Z14, Z10, Z26
	VSHUFF32X4 $0xdd, Z14, Z10, Z30
	VSHUFF32X4 $0x88, Z15, Z11, Z27
	VSHUFF32X4 $0xdd, Z15, Z11, Z31
	// Z0-Z15: and across the halves; Zc is column c
	VSHUFF32X4 $0x88, Z24, Z16, Z0
	VSHUFF32X4 $0xdd, Z24, Z16, Z8
	VSHUFF32X4 $0x88, Z25, Z17, Z1
	VSHUFF32X4 $0xdd, Z25, Z17, Z9
	VSHUFF32X4 $0x88, Z26, Z18, Z2
	VSHUFF32X4 $0xdd, Z26, Z18, Z10
	VSHUFF32X4 $0x88, Z27, Z19, Z3
	VSHUFF32X4 $0xdd, Z27, Z19, Z11
	VSHUFF32X4 $0x88, Z28, Z20, Z4
	VSHUFF32X4 $0xdd, Z28, Z20, Z12
	VSHUFF32X4 $0x88, Z29, Z21, Z5
	VSHUFF32X4 $0xdd, Z29, Z21, Z13
	VSHUFF32X4 $0x88, Z30, Z22, Z6
	VSHUFF32X4 $0xdd, Z30, Z22, Z14
	VSHUFF32X4 $0x88, Z31, Z23, Z7
	VSHUFF32X4 $0xdd, Z31, Z23, Z15
	MOVQ BX, DX
	VMOVUPS Z0, 0(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z1, 64(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z2, 128(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z3, 192(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z4, 256(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z5, 320(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z6, 384(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z7, 448(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z8, 512(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z9, 576(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z10, 640(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z11, 704(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z12, 768(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z13, 832(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z14, 896(DI)
	DECQ DX
	JZ stored
	VMOVUPS Z15, 960(DI)
stored:
	ADDQ $64, SI
	ADDQ $1024, DI
	SUBQ BX, R11
	JNZ block
	VZEROUPPER
	RET

// func packColsAVX512(dst *float32, src *float32, ld int, cols int, k int)
//
// dst (k, 16) gets cols (1..16) values from each of k rows of src (row
// stride ld floats), zeros in the other slots: dst[p*16+j] = src[p*ld+j].
TEXT ·packColsAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ cols+24(FP), CX
	MOVQ k+32(FP), DX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
copyrow:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS Z0, (DI)
	ADDQ R8, SI
	ADDQ $64, DI
	DECQ DX
	JNZ copyrow
	VZEROUPPER
	RET

// ROW16 adds the 16 sums of one row, in two YMM registers, to the row of c
// at AX.
#define ROW16(lo, hi) VADDPS (AX), lo, lo; VADDPS 32(AX), hi, hi; VMOVUPS lo, (AX); VMOVUPS hi, 32(AX)

// ZERO4 clears four accumulators.
#define ZERO4(a, b, c, d) VXORPS a, a, a; VXORPS b, b, b; VXORPS c, c, c; VXORPS d, d, d

// TERM broadcasts the packed input at off(x) and adds its products with
// the panel's row (Y12, Y13) to one row's sums.
#define TERM(x, off, lo, hi) VBROADCASTSS off(x), Y14; VFMADD231PS Y14, Y12, lo; VFMADD231PS Y14, Y13, hi

// func panel16AVX2(c *float32, ldc int, xp *float32, w *float32, ldw int, k int, rows int)
//
// panel16AVX512 for CPUs with AVX2 and FMA but not AVX-512, to the bit:
// each element of c gets the FMA chain of its k terms in order from zero,
// then one add, with denormals read and written as zero. Sixteen YMM
// registers hold 6 rows of the 16-wide result at a time (12 accumulators,
// the panel's row in two halves, a broadcast), so 16 rows take three
// passes over the panel: rows 0-5, 6-11, and 12-15 in a 4-row loop. The
// panel is prefetched 16 KB ahead, as the AVX-512 kernel does.
TEXT ·panel16AVX2(SB), NOSPLIT, $8-56
	STMXCSR 0(SP)
	MOVL 0(SP), R12
	ORL $0x8040, R12
	MOVL R12, 4(SP)
	LDMXCSR 4(SP)
	MOVQ c+0(FP), AX
	MOVQ ldc+8(FP), R9
	SHLQ $2, R9
	MOVQ xp+16(FP), DI
	MOVQ ldw+32(FP), R11
	SHLQ $2, R11
	MOVQ rows+48(FP), R10

group:
	CMPQ R10, $4
	JLE group4
	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y4, Y5, Y6, Y7)
	ZERO4(Y8, Y9, Y10, Y11)
	MOVQ w+24(FP), SI
	MOVQ DI, BX
	MOVQ k+40(FP), CX

loop6:
	VMOVUPS (SI), Y12
	VMOVUPS 32(SI), Y13
	PREFETCHT2 16384(SI)
	TERM(BX, 0, Y0, Y1)
	TERM(BX, 4, Y2, Y3)
	TERM(BX, 8, Y4, Y5)
	TERM(BX, 12, Y6, Y7)
	TERM(BX, 16, Y8, Y9)
	TERM(BX, 20, Y10, Y11)
	ADDQ R11, SI
	ADDQ $64, BX
	DECQ CX
	JNZ loop6

	// More than 4 rows remain: the first five are there.
	ROW16(Y0, Y1)
	ADDQ R9, AX
	ROW16(Y2, Y3)
	ADDQ R9, AX
	ROW16(Y4, Y5)
	ADDQ R9, AX
	ROW16(Y6, Y7)
	ADDQ R9, AX
	ROW16(Y8, Y9)
	SUBQ $5, R10
	JZ done
	ADDQ R9, AX
	ROW16(Y10, Y11)
	DECQ R10
	JZ done
	ADDQ R9, AX
	ADDQ $24, DI
	JMP group

group4:
	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y4, Y5, Y6, Y7)
	MOVQ w+24(FP), SI
	MOVQ k+40(FP), CX

loop4:
	VMOVUPS (SI), Y12
	VMOVUPS 32(SI), Y13
	PREFETCHT2 16384(SI)
	TERM(DI, 0, Y0, Y1)
	TERM(DI, 4, Y2, Y3)
	TERM(DI, 8, Y4, Y5)
	TERM(DI, 12, Y6, Y7)
	ADDQ R11, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop4

	ROW16(Y0, Y1)
	DECQ R10
	JZ done
	ADDQ R9, AX
	ROW16(Y2, Y3)
	DECQ R10
	JZ done
	ADDQ R9, AX
	ROW16(Y4, Y5)
	DECQ R10
	JZ done
	ADDQ R9, AX
	ROW16(Y6, Y7)

done:
	LDMXCSR 0(SP)
	VZEROUPPER
	RET

// func packRows8AVX2(xp *float32, in *float32, ld int, blocks int)
//
// packRowsAVX512's work for 8 rows and 8*blocks columns with AVX2: the
// 8x8 block of rows 0-7 (row stride ld floats) and columns 8b..8b+7 is
// transposed in registers (pairs, then quadruples, then 128-bit lanes) and
// stored as the first 8 slots of xp's rows 8b..8b+7 (row stride 16 floats):
// xp[p*16+i] = in[i*ld+p].
TEXT ·packRows8AVX2(SB), NOSPLIT, $0-32
	MOVQ xp+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9  // 3 rows
	LEAQ (R8)(R8*4), R10 // 5 rows
	LEAQ (R9)(R8*4), R11 // 7 rows
	MOVQ blocks+24(FP), CX

block8:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (SI)(R8*4), Y4
	VMOVUPS (SI)(R10*1), Y5
	VMOVUPS (SI)(R9*2), Y6
	VMOVUPS (SI)(R11*1), Y7
	VUNPCKLPS Y1, Y0, Y8  // r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5]
	VUNPCKHPS Y1, Y0, Y9  // r0[2] r1[2] r0[3] r1[3] | ...
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0 // r0..r3 of columns 0 | 4
	VSHUFPS $0xEE, Y10, Y8, Y1 // columns 1 | 5
	VSHUFPS $0x44, Y11, Y9, Y2 // columns 2 | 6
	VSHUFPS $0xEE, Y11, Y9, Y3 // columns 3 | 7
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 64(DI)
	VMOVUPS Y10, 128(DI)
	VMOVUPS Y11, 192(DI)
	VMOVUPS Y12, 256(DI)
	VMOVUPS Y13, 320(DI)
	VMOVUPS Y14, 384(DI)
	VMOVUPS Y15, 448(DI)
	ADDQ $32, SI
	ADDQ $512, DI
	DECQ CX
	JNZ block8
	VZEROUPPER
	RET

// func packCols16AVX2(dst *float32, src *float32, ld int, k int)
//
// packColsAVX512 for 16 columns with AVX2: dst[p*16+j] = src[p*ld+j].
TEXT ·packCols16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ k+24(FP), CX
copy16:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ R8, SI
	ADDQ $64, DI
	DECQ CX
	JNZ copy16
	VZEROUPPER
	RET
