/* cutune — per-template emitters (internal). Each appends the kernel text after the banner and fills the launch
 * configuration of out (grid, block, entry, smem). */
#ifndef CUTUNE_CODEGEN_EMIT_H
#define CUTUNE_CODEGEN_EMIT_H

#include "cutune/codegen.h"
#include "cutune/util.h"

void cut_emit_banner(cut_buf *b, const cut_conv *c, const cut_sched *s);
/* The launch configuration every conv template shares: entry cut_conv2d, a 1-D block, static shared memory only,
 * no inline PTX. */
void cut_emit_launch(cut_kernel_src *out, const unsigned grid[3], int threads);
int cut_emit_direct(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);
int cut_emit_igemm(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);
int cut_emit_winograd(cut_buf *b, const cut_conv *c, const cut_sched *s, cut_kernel_src *out, cut_err *e);

#endif
