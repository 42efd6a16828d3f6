/* cutune — a kernel spec's entry point and its parameters, the parser's part (internal; src/ops/kernel/kentry.c). */
#ifndef CUTUNE_KERNEL_KENTRY_H
#define CUTUNE_KERNEL_KENTRY_H

#include "cutune/kspec.h"

/* The entry (and the reference kernel's) defined in the source: a __global__ function for CUDA, a @triton.jit one for
 * Triton. 0, or -1 with a sentence naming the field ("entry: no __global__ function 'k' defined in the source"). */
int cut_ks_check_entry(const cut_kspec *k, cut_err *e);
/* A CUDA entry's parameter types against the spec's args: a pointer for each buffer, of its dtype where the type
 * names one, a scalar of its dtype; types it cannot read (templates, typedefs) pass. 0, or -1 with a sentence. */
int cut_ks_check_param_types(const cut_kspec *k, cut_err *e);

#endif
