/* cutune — export of optimized kernels: helpers shared by the generated texts (export_kernel_text.c). */
#ifndef CUTUNE_POST_EXPORT_KERNEL_INT_H
#define CUTUNE_POST_EXPORT_KERNEL_INT_H

#include "cutune/export.h"

extern const char *const cut_xo_role_names[CUT_XO_ROLES]; /* "baseline", "best", "reference" */

/* The C++ type of a dtype in the generated code ("float", "__half", "int32_t", ...). */
const char *cut_xo_ctype(cut_elem d);
/* The driver's dtype enumerator ("DT_F32", ...). */
const char *cut_xo_dt_enum(cut_elem d);
/* What args[a] of spec k is: 0 an input, 1 an output, 2 a scalar (*idx: its index among them); -1 if none. */
int cut_xo_arg_kind(const cut_kspec *k, int a, int *idx);
/* The launchers' parameter list for k's args: "const float *x, float *y, int32_t cols". */
void cut_xo_params(cut_buf *b, const cut_kspec *k);
/* "BLOCK=64, VEC=4" ("no tunables" when k has none). */
void cut_xo_tunables(cut_buf *b, const cut_kspec *k, const long long *vals);

#endif
