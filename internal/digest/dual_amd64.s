//go:build !purego

#include "textflag.h"

// Two SHA-256 states advanced over the same 64-byte blocks with the SHA
// extensions. The message schedule is computed once and shared; the two
// states' round instructions are independent, so they overlap in the
// pipeline and two hashes cost about 1.4 times one (internal/digest
// BenchmarkWriteBoth).
//
// Registers: X0 message+K (implicit operand of SHA256RNDS2); X1, X2 state a
// as ABEF, CDGH; X9, X10 state b likewise; X3-X6 the schedule's last four
// groups of words; X7 scratch; X8 byte-swap mask; X11-X14 the states at
// the start of the block.

// LOADW loads 16 message bytes at off as four big-endian words.
#define LOADW(off, R) \
	MOVOU off(SI), R; \
	PSHUFB X8, R

// SCHED computes W[t..t+3] into R, which holds W[t-16..t-13], from the
// groups M3 = W[t-12..], M2 = W[t-8..] and M1 = W[t-4..].
#define SCHED(R, M3, M2, M1) \
	SHA256MSG1 M3, R; \
	MOVO M1, X7; \
	PALIGNR $4, M2, X7; \
	PADDD X7, R; \
	SHA256MSG2 M1, R

// ROUNDS4 runs four rounds of both states on the words in R and the
// constants at koff.
#define ROUNDS4(koff, R) \
	MOVO R, X0; \
	PADDD koff(AX), X0; \
	SHA256RNDS2 X0, X1, X2; \
	SHA256RNDS2 X0, X9, X10; \
	PSHUFD $0x0e, X0, X0; \
	SHA256RNDS2 X0, X2, X1; \
	SHA256RNDS2 X0, X10, X9

// TOSHA turns h[0..7] at P into ABEF (S0) and CDGH (S1).
#define TOSHA(P, S0, S1) \
	MOVOU (P), S0; \
	MOVOU 16(P), S1; \
	PSHUFD $0xb1, S0, S0; \
	PSHUFD $0x1b, S1, S1; \
	MOVO S0, X7; \
	PALIGNR $8, S1, S0; \
	PBLENDW $0xf0, X7, S1

// FROMSHA stores ABEF (S0) and CDGH (S1) back as h[0..7] at P.
#define FROMSHA(P, S0, S1) \
	PSHUFD $0x1b, S0, S0; \
	PSHUFD $0xb1, S1, S1; \
	MOVO S0, X7; \
	PBLENDW $0xf0, S1, S0; \
	PALIGNR $8, X7, S1; \
	MOVOU S0, (P); \
	MOVOU S1, 16(P)

// func blockDual(a, b *[8]uint32, p []byte)
TEXT ·blockDual(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), DI
	MOVQ b+8(FP), BX
	MOVQ p_base+16(FP), SI
	MOVQ p_len+24(FP), DX
	SHRQ $6, DX
	SHLQ $6, DX
	JZ   done
	ADDQ SI, DX
	TOSHA(DI, X1, X2)
	TOSHA(BX, X9, X10)
	MOVOU flipMask<>(SB), X8
	LEAQ  k256<>(SB), AX

block:
	MOVO X1, X11
	MOVO X2, X12
	MOVO X9, X13
	MOVO X10, X14

	LOADW(0, X3)
	ROUNDS4(0, X3)
	LOADW(16, X4)
	ROUNDS4(16, X4)
	LOADW(32, X5)
	ROUNDS4(32, X5)
	LOADW(48, X6)
	ROUNDS4(48, X6)

	SCHED(X3, X4, X5, X6)
	ROUNDS4(64, X3)
	SCHED(X4, X5, X6, X3)
	ROUNDS4(80, X4)
	SCHED(X5, X6, X3, X4)
	ROUNDS4(96, X5)
	SCHED(X6, X3, X4, X5)
	ROUNDS4(112, X6)

	SCHED(X3, X4, X5, X6)
	ROUNDS4(128, X3)
	SCHED(X4, X5, X6, X3)
	ROUNDS4(144, X4)
	SCHED(X5, X6, X3, X4)
	ROUNDS4(160, X5)
	SCHED(X6, X3, X4, X5)
	ROUNDS4(176, X6)

	SCHED(X3, X4, X5, X6)
	ROUNDS4(192, X3)
	SCHED(X4, X5, X6, X3)
	ROUNDS4(208, X4)
	SCHED(X5, X6, X3, X4)
	ROUNDS4(224, X5)
	SCHED(X6, X3, X4, X5)
	ROUNDS4(240, X6)

	PADDD X11, X1
	PADDD X12, X2
	PADDD X13, X9
	PADDD X14, X10

	ADDQ $64, SI
	CMPQ SI, DX
	JB   block

	FROMSHA(DI, X1, X2)
	FROMSHA(BX, X9, X10)

done:
	RET

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// flipMask byte-swaps each 32-bit word.
DATA flipMask<>+0(SB)/8, $0x0405060700010203
DATA flipMask<>+8(SB)/8, $0x0c0d0e0f08090a0b
GLOBL flipMask<>(SB), RODATA|NOPTR, $16

// k256 holds the 64 round constants of FIPS 180-4 §4.2.2.
DATA k256<>+0(SB)/4, $0x428a2f98
DATA k256<>+4(SB)/4, $0x71374491
DATA k256<>+8(SB)/4, $0xb5c0fbcf
DATA k256<>+12(SB)/4, $0xe9b5dba5
DATA k256<>+16(SB)/4, $0x3956c25b
DATA k256<>+20(SB)/4, $0x59f111f1
DATA k256<>+24(SB)/4, $0x923f82a4
DATA k256<>+28(SB)/4, $0xab1c5ed5
DATA k256<>+32(SB)/4, $0xd807aa98
DATA k256<>+36(SB)/4, $0x12835b01
DATA k256<>+40(SB)/4, $0x243185be
DATA k256<>+44(SB)/4, $0x550c7dc3
DATA k256<>+48(SB)/4, $0x72be5d74
DATA k256<>+52(SB)/4, $0x80deb1fe
DATA k256<>+56(SB)/4, $0x9bdc06a7
DATA k256<>+60(SB)/4, $0xc19bf174
DATA k256<>+64(SB)/4, $0xe49b69c1
DATA k256<>+68(SB)/4, $0xefbe4786
DATA k256<>+72(SB)/4, $0x0fc19dc6
DATA k256<>+76(SB)/4, $0x240ca1cc
DATA k256<>+80(SB)/4, $0x2de92c6f
DATA k256<>+84(SB)/4, $0x4a7484aa
DATA k256<>+88(SB)/4, $0x5cb0a9dc
DATA k256<>+92(SB)/4, $0x76f988da
DATA k256<>+96(SB)/4, $0x983e5152
DATA k256<>+100(SB)/4, $0xa831c66d
DATA k256<>+104(SB)/4, $0xb00327c8
DATA k256<>+108(SB)/4, $0xbf597fc7
DATA k256<>+112(SB)/4, $0xc6e00bf3
DATA k256<>+116(SB)/4, $0xd5a79147
DATA k256<>+120(SB)/4, $0x06ca6351
DATA k256<>+124(SB)/4, $0x14292967
DATA k256<>+128(SB)/4, $0x27b70a85
DATA k256<>+132(SB)/4, $0x2e1b2138
DATA k256<>+136(SB)/4, $0x4d2c6dfc
DATA k256<>+140(SB)/4, $0x53380d13
DATA k256<>+144(SB)/4, $0x650a7354
DATA k256<>+148(SB)/4, $0x766a0abb
DATA k256<>+152(SB)/4, $0x81c2c92e
DATA k256<>+156(SB)/4, $0x92722c85
DATA k256<>+160(SB)/4, $0xa2bfe8a1
DATA k256<>+164(SB)/4, $0xa81a664b
DATA k256<>+168(SB)/4, $0xc24b8b70
DATA k256<>+172(SB)/4, $0xc76c51a3
DATA k256<>+176(SB)/4, $0xd192e819
DATA k256<>+180(SB)/4, $0xd6990624
DATA k256<>+184(SB)/4, $0xf40e3585
DATA k256<>+188(SB)/4, $0x106aa070
DATA k256<>+192(SB)/4, $0x19a4c116
DATA k256<>+196(SB)/4, $0x1e376c08
DATA k256<>+200(SB)/4, $0x2748774c
DATA k256<>+204(SB)/4, $0x34b0bcb5
DATA k256<>+208(SB)/4, $0x391c0cb3
DATA k256<>+212(SB)/4, $0x4ed8aa4a
DATA k256<>+216(SB)/4, $0x5b9cca4f
DATA k256<>+220(SB)/4, $0x682e6ff3
DATA k256<>+224(SB)/4, $0x748f82ee
DATA k256<>+228(SB)/4, $0x78a5636f
DATA k256<>+232(SB)/4, $0x84c87814
DATA k256<>+236(SB)/4, $0x8cc70208
DATA k256<>+240(SB)/4, $0x90befffa
DATA k256<>+244(SB)/4, $0xa4506ceb
DATA k256<>+248(SB)/4, $0xbef9a3f7
DATA k256<>+252(SB)/4, $0xc67178f2
GLOBL k256<>(SB), RODATA|NOPTR, $256
