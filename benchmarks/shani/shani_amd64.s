//go:build !purego

#include "textflag.h"

// Each loop runs 8 instructions, in 1, 2 or 4 independent dependency
// chains. The operands never matter: only the timing is measured.

// func addChain(n int)
TEXT ·addChain(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
loop:
	ADDQ BX, AX
	ADDQ AX, BX
	ADDQ BX, AX
	ADDQ AX, BX
	ADDQ BX, AX
	ADDQ AX, BX
	ADDQ BX, AX
	ADDQ AX, BX
	DECQ CX
	JNZ  loop
	RET

// func rounds1(n int)
TEXT ·rounds1(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
loop:
	SHA256RNDS2 X0, X1, X2
	SHA256RNDS2 X0, X2, X1
	SHA256RNDS2 X0, X1, X2
	SHA256RNDS2 X0, X2, X1
	SHA256RNDS2 X0, X1, X2
	SHA256RNDS2 X0, X2, X1
	SHA256RNDS2 X0, X1, X2
	SHA256RNDS2 X0, X2, X1
	DECQ CX
	JNZ  loop
	RET

// func rounds2(n int)
TEXT ·rounds2(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
loop:
	SHA256RNDS2 X0, X1, X2
	SHA256RNDS2 X0, X3, X4
	SHA256RNDS2 X0, X2, X1
	SHA256RNDS2 X0, X4, X3
	SHA256RNDS2 X0, X1, X2
	SHA256RNDS2 X0, X3, X4
	SHA256RNDS2 X0, X2, X1
	SHA256RNDS2 X0, X4, X3
	DECQ CX
	JNZ  loop
	RET

// func rounds4(n int)
TEXT ·rounds4(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
loop:
	SHA256RNDS2 X0, X1, X2
	SHA256RNDS2 X0, X3, X4
	SHA256RNDS2 X0, X5, X6
	SHA256RNDS2 X0, X7, X8
	SHA256RNDS2 X0, X2, X1
	SHA256RNDS2 X0, X4, X3
	SHA256RNDS2 X0, X6, X5
	SHA256RNDS2 X0, X8, X7
	DECQ CX
	JNZ  loop
	RET
