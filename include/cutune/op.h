/* cutune — every op's templates in one registry, tagged by op (issue 14).
 *
 * Each op keeps its templates with its code (Conv2D: space.h, its direct, implicit-GEMM and Winograd templates;
 * GEMM: gemm_space.h, simt, mma and wgmma; a user kernel spec: one template, the spec's own tunables). This registry
 * lists them all, each tagged by its op with its index in the op's own registry (cut_sched.tpl), its name and its
 * knobs, so that what works on any schedule (its record JSON, its description, a template named on the command line)
 * looks templates up in one place and never through another op's registry. */
#ifndef CUTUNE_OP_H
#define CUTUNE_OP_H

#include "cutune/common.h"
#include "cutune/space.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cut_op_kind { CUT_OP_CONV2D, CUT_OP_GEMM, CUT_OP_KERNEL, CUT_OP_COUNT } cut_op_kind;
/* "conv2d", "gemm", "kernel" ("?" outside the enum). */
const char *cut_op_name(cut_op_kind op);

typedef struct cut_tpl_info {
    cut_op_kind op;
    int index;        /* the template's index in its op's registry: cut_sched.tpl of its schedules */
    const char *name; /* "direct", "wgmma", "spec" */
    int nknobs;       /* 0 for the kernel op: a spec's knobs are its own tunables (kspec.h) */
} cut_tpl_info;

/* Every template: Conv2D's in registry order, then GEMM's, then the kernel op's one. */
int cut_tpl_count(void);
/* NULL outside [0, cut_tpl_count()). */
const cut_tpl_info *cut_tpl_at(int i);
/* The template of op at index (cut_sched.tpl), or NULL. */
const cut_tpl_info *cut_tpl_of(cut_op_kind op, int index);
/* The template of op named name, or NULL (a name of another op's template is not found). */
const cut_tpl_info *cut_tpl_find(cut_op_kind op, const char *name);
/* Knob i's name ("bm"), "?" outside [0, t->nknobs). */
const char *cut_tpl_knob(const cut_tpl_info *t, int i);

/* A schedule of op as the JSON object its record holds: {"tpl":"<name>","<knob>":<value>,...} with the knobs in
 * index order, into buf (n bytes, NUL-terminated). Its length, or -1 (an unknown template, too small a buffer). */
int cut_tpl_sched_json(cut_op_kind op, const cut_sched *s, char *buf, size_t n);
/* "<name> <knob>=<value> ..." ("<unknown template 7>" for an index outside op's registry). */
void cut_tpl_sched_describe(cut_op_kind op, const cut_sched *s, char *buf, size_t n);

#ifdef __cplusplus
}
#endif

#endif
