/* cutune — the wgmma GEMM's persistent kernels (knob pp; src/ops/gemm/wgmma_persist.c explains them). */
#ifndef CUTUNE_GEMM_WGMMA_PERSIST_H
#define CUTUNE_GEMM_WGMMA_PERSIST_H

#include "codegen/emit.h"

/* The kernel's persistent #defines for pp (1 cooperative, 2 ping-pong): PERSIST, TILES_X (tiles_x: a plane's output
 * tiles), USERS, FIRST_J, J_STEP, QS and, for ping-pong, ROW0, TURN and LOOP_ISSUED; before the common head
 * (cut_wgmma_text_head). */
void cut_wgmma_persist_defines(cut_buf *b, int pp, unsigned tiles_x);
/* The kernel after LOAD_A, LOAD_B and RELEASE: tile_of, the head, the producer, and a consumer's tile loop up to its
 * main loop (cut_wgmma_text_consumer_loop follows). */
extern const char cut_wgmma_persist_head[];
/* After the main loop: the last stage's release (WAITD 1; ping-pong has passed its turn on inside the loop's text,
 * LOOP_ISSUED). The epilogue (the plain kernel's, on this tile's m0, n0 and plane) follows. */
extern const char cut_wgmma_persist_mid[];
/* The tile loop's, the consumer's and the kernel's ends. */
extern const char cut_wgmma_persist_end[];

#endif
