/* cutune — Conv2D workloads: shapes, validation, built-in lists, file names (seed 000/001). */
#ifndef CUTUNE_WORKLOAD_H
#define CUTUNE_WORKLOAD_H

#include "cutune/common.h"
#include "cutune/half.h"
#include "cutune/work.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tensor layouts of a convolution. NCHW: input [N][CI][H][W], weights [CO][CI][KH][KW], output [N][CO][OH][OW].
 * NHWC: input [N][H][W][CI], weights [CO][KH][KW][CI] (cuDNN's KRSC, channels innermost like the input), output
 * [N][OH][OW][CO]. */
typedef enum cut_conv_layout { CUT_NCHW = 0, CUT_NHWC, CUT_LAYOUT_COUNT } cut_conv_layout;
/* "NCHW", "NHWC" ("?" outside the enum). */
const char *cut_conv_layout_name(cut_conv_layout l);
/* Case-insensitive "nchw" or "nhwc"; anything else is an error naming both. */
int cut_conv_layout_parse(const char *s, cut_conv_layout *l, cut_err *e);

/* An optional epilogue fused after the convolution: y = conv + bias[co] (bias: CO values in the inputs' dtype),
 * then max(y, 0) for bias_relu; computed in fp32 and rounded once to the output type. */
typedef enum cut_conv_epilogue { CUT_EPI_NONE = 0, CUT_EPI_BIAS, CUT_EPI_BIAS_RELU, CUT_EPI_COUNT } cut_conv_epilogue;
/* "none", "bias", "bias_relu" ("?" outside the enum). */
const char *cut_conv_epilogue_name(cut_conv_epilogue x);
/* Case-insensitive one of those names; anything else is an error naming them. */
int cut_conv_epilogue_parse(const char *s, cut_conv_epilogue *x, cut_err *e);

/* A convolution with square stride and symmetric zero padding. Format as the seeds: [N, H, W, CO, CI, KH, KW,
 * stride, pad]. dtype: the inputs' type (fp32: FMA on CUDA cores, as every earlier version; tf32: fp32 storage
 * rounded to tf32 by the tensor cores; fp16, bf16: 16-bit storage), always accumulated in fp32; the output is fp16
 * or bf16 for those, fp32 otherwise. Both new fields are 0 (fp32, NCHW) in a zero-initialised or positional
 * initialiser of the nine sizes, so older code and records keep their meaning. */
typedef struct cut_conv {
    int n, h, w, co, ci, kh, kw, stride, pad;
    cut_dtype dtype;        /* CUT_DT_FP32 (default), CUT_DT_TF32, CUT_DT_FP16, CUT_DT_BF16 */
    cut_conv_layout layout; /* CUT_NCHW (default), CUT_NHWC */
    cut_conv_epilogue epilogue; /* CUT_EPI_NONE (default): the bias and ReLU (tensor-core template only) */
} cut_conv;

/* Storage types of the inputs (in, w) and of the output: 16-bit for fp16/bf16, f32 otherwise. */
cut_elem cut_conv_in_elem(const cut_conv *c);
cut_elem cut_conv_out_elem(const cut_conv *c);
/* 1 for the default dtype, layout and epilogue (fp32, NCHW, none): names, records and kernels as before issue 20. */
int cut_conv_is_default(const cut_conv *c);

static inline int cut_conv_oh(const cut_conv *c) { return (c->h + 2 * c->pad - c->kh) / c->stride + 1; }
static inline int cut_conv_ow(const cut_conv *c) { return (c->w + 2 * c->pad - c->kw) / c->stride + 1; }
/* FLOPs = 2 * N * OH * OW * CO * CI * KH * KW. */
double cut_conv_flops(const cut_conv *c);
/* The least DRAM traffic of one launch: input and weights read once, output written once, each in its storage
 * type (bytes). */
double cut_conv_bytes(const cut_conv *c);
/* GFLOP/s of a run taking ms milliseconds: flops / (ms * 1e6). 0 when ms is not positive (not measured). */
double cut_conv_gflops(const cut_conv *c, double ms);
/* Element counts of input, weight and output tensors. */
size_t cut_conv_in_elems(const cut_conv *c);
size_t cut_conv_w_elems(const cut_conv *c);
size_t cut_conv_out_elems(const cut_conv *c);

/* Rejects zero/negative sizes, stride 0, negative padding, a kernel larger than the padded input, output size <= 0,
 * tensors of 2^31 or more elements; the sentence names the field and its value. */
int cut_conv_validate(const cut_conv *c, cut_err *e);
/* 1 when a and b are the same workload (the nine sizes, the dtype and the layout equal). */
int cut_conv_equal(const cut_conv *a, const cut_conv *b);
/* Parses "N,H,W,CO,CI,KH,KW,stride,pad" (also with [ ] and spaces). Validates. */
int cut_conv_parse(const char *s, cut_conv *c, cut_err *e);
/* "conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1", followed by "_dtype_fp16" when the dtype
 * is not fp32, "_layout_NHWC" when the layout is not NCHW and "_epi_bias_relu" (or "_epi_bias") with an epilogue. */
void cut_conv_name(const cut_conv *c, char *buf, size_t n);
/* "case{idx}_" + cut_conv_name(), idx 1-based (seed 001 naming). */
void cut_conv_case_name(const cut_conv *c, int idx, char *buf, size_t n);
/* Parses a case file name (with or without directory and .json/.csv suffix) back into idx and shape, dtype,
 * layout and epilogue (the defaults when the name has no _dtype_ / _layout_ / _epi_ part). */
int cut_conv_parse_case_name(const char *name, int *idx, cut_conv *c, cut_err *e);

/* A named list of cases (seed001, resnet18, yolov3, or a file). */
typedef struct cut_conv_list {
    char name[64];
    int count;
    cut_conv *cases; /* owned */
} cut_conv_list;

/* Loads a built-in list by name from dir (workloads/NAME.txt), or a path to such a file (a name with '/' or
 * ending in .txt). Besides seed001/resnet18/yolov3, any other dir/NAME.txt is found by its name (e.g. tiny).
 * File format: one case per line "[N,H,W,CO,CI,KH,KW,s,p]" (brackets optional), '#' comments.
 * Unknown name: error listing the known ones. Caller frees with cut_conv_list_free. */
int cut_conv_list_load(const char *name_or_path, const char *dir, cut_conv_list *out, cut_err *e);
void cut_conv_list_free(cut_conv_list *l);
/* Names of the built-in lists ("seed001", "resnet18", "yolov3"); returns their count. Static storage. */
int cut_conv_list_names(const char *const **names);
/* Directory holding the built-in lists: $CUTUNE_WORKLOADS, else the one baked in at build time. */
const char *cut_workloads_dir(void);

/* ---- reference and tolerances (src/ops/conv2d/reference.c) ---- */

/* Double-precision CPU reference convolution (multi-threaded) of float inputs in c's layout (16-bit inputs: their
 * values, already rounded). out has cut_conv_out_elems elements in c's layout. */
void cut_conv_reference(const cut_conv *c, const float *in, const float *w, double *out);
/* c's epilogue over a reference out (cut_conv_out_elems, c's layout): out + bias[co] (CO floats), then ReLU for
 * bias_relu; nothing for none. */
void cut_conv_reference_epilogue(const cut_conv *c, const float *bias, double *out);
/* Tolerance of c's dtype with reduction length K = CI*KH*KW (reference.c derives each): fp32 FMA, tf32 (input
 * rounding in the tensor cores), fp16/bf16 (exact products, output rounding). */
void cut_conv_tolerance(const cut_conv *c, double *atol, double *rtol);
/* cut_conv_tolerance with atol and rtol multiplied by scale: the factor of an algorithm whose fp32 rounding is not
 * that of a sum of products (cut_kernel_src.tol_scale, set by the code generator). scale <= 1 (0 included) or
 * not finite: no change, so that no template gets a tighter or a NaN tolerance by accident. */
void cut_conv_tolerance_scaled(const cut_conv *c, double scale, double *atol, double *rtol);
/* The measured factor of Winograd F(m x m, 3x3) in fp32: 1 for m = 2, 4 for m = 4 (check.c has the numbers). */
double cut_tolerance_scale_winograd(int m);


/* ---- the work to measure (src/ops/conv2d/work.c) ---- */

/* The work of c (work.h): buffers "in" and "w" (two input sets from seed: cut_work_pair, in c's layout, stored as
 * cut_conv_in_elem: fp16/bf16 values rounded to nearest even), "out" (cut_conv_out_elem) with each set's
 * reference (cut_conv_reference over the stored values, rounded to the output type), CLOSE with
 * cut_conv_tolerance, op CONV, the shape's FLOPs. Owns its data (cut_work_free). -1 for an invalid shape. */
int cut_conv_work(const cut_conv *c, uint64_t seed, cut_work *w, cut_err *e);
/* The op descriptor of c (11 parameters: the nine sizes, dtype, layout), and back (checked: a CONV op of 11
 * parameters, or 9 of an older peer meaning fp32 NCHW, that form a valid workload). */
void cut_conv_work_op(const cut_conv *c, cut_work_op *op);
int cut_conv_of_work_op(const cut_work_op *op, cut_conv *c, cut_err *e);

#ifdef __cplusplus
}
#endif

#endif
