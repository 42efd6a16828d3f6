/* cutune — export: tuningresults/ -> kernels/ (seed 001 phase 2). Loading checks everything and generates every
 * kernel in memory first, so a refused export writes nothing. */
#include "cutune/export.h"
#include "cutune/log.h"
#include "cutune/record.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cut_export_set_free(cut_export_set *set)
{
    if (!set)
        return;
    for (int i = 0; i < set->n; i++)
        cut_kernel_src_free(&set->k[i].ks);
    free(set->k);
    memset(set, 0, sizeof *set);
}

int cut_export_knobs(const cut_sched *s, char *buf, size_t n)
{
    const cut_template *t = cut_template_get(s->tpl);
    size_t used = 0;
    if (n == 0)
        return -1;
    buf[0] = '\0';
    for (int i = 0; t && i < t->nknobs; i++) {
        int k = snprintf(buf + used, n - used, "%s%s=%d", i ? ";" : "", t->knob_names[i], s->k[i]);
        if (k < 0 || (size_t)k >= n - used)
            return -1;
        used += (size_t)k;
    }
    return (int)used;
}

void cut_export_csv_row(cut_buf *b, const cut_export_kernel *k)
{
    const cut_conv *c = &k->conv;
    const cut_template *t = cut_template_get(k->sched.tpl);
    char knobs[512];
    if (cut_export_knobs(&k->sched, knobs, sizeof knobs) < 0)
        knobs[0] = '\0'; /* 16 knobs of short names always fit; an empty cell beats a cut one */
    /* Fields are numbers, a template name and k=v;k=v: none holds a comma or a quote, so no quoting is needed. */
    cut_buf_printf(b, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%s,%u,%u,%u,%u,%u,%u,%u,%.9g,%.9g\n", k->case_idx,
                   k->kernel_id, c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad,
                   t ? t->name : "unknown", knobs, k->ks.grid[0], k->ks.grid[1], k->ks.grid[2], k->ks.block[0],
                   k->ks.block[1], k->ks.block[2], k->ks.smem_dynamic, k->tuned_ms, k->tuned_gflops);
}

/* ---- loading ------------------------------------------------------------------------------------------------ */

/* 1-based line number of byte offset off in text (messages name lines as an editor shows them). */
static int line_of(const char *text, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off; i++)
        line += text[i] == '\n';
    return line;
}

static void set_push(cut_export_set *set, int *cap, const cut_export_kernel *k)
{
    if (set->n == *cap) {
        *cap = *cap ? *cap * 2 : 32;
        set->k = cut_xrealloc(set->k, (size_t)*cap * sizeof *set->k);
    }
    set->k[set->n++] = *k;
}

/* Checks record r (line `line` of path) and generates its kernel into *out. Returns 1 when r is a failed or
 * unmeasured trial (left out), 2 for a kernel the launchers cannot run (left out with a warning), 0 when *out is
 * filled, -1 when the export must be refused. */
static int load_record(const char *path, int line, int case_idx, const cut_conv *file_conv, const cut_record *r,
                       int kernel_id, cut_export_kernel *out, cut_err *e)
{
    char shape[256], desc[512];
    cut_conv_name(file_conv, shape, sizeof shape);
    if (!cut_conv_equal(&r->conv, file_conv) || r->case_idx != case_idx)
        return cut_err_set(e, "%s line %d: its workload (case %d) is not the file name's case %d %s", path, line,
                           r->case_idx, case_idx, shape);
    if (r->status != CUT_ST_OK || !isfinite(r->median_ms) || !(r->median_ms > 0))
        return 1;
    cut_devlimits lim;
    cut_devlimits_sm90(&lim); /* records carry no device limits; the tuned GPUs (H100/H200) have these */
    cut_sched_describe(&r->sched, desc, sizeof desc);
    cut_err why = {{0}};
    if (cut_sched_check(&r->conv, &r->sched, &lim, &why) != 0)
        return cut_err_set(e, "%s line %d: schedule '%s' is invalid for %s: %s", path, line, desc, shape, why.msg);
    char entry[CUT_ENTRY_LEN];
    snprintf(entry, sizeof entry, "cut_conv2d_case%d_k%d", case_idx, kernel_id);
    memset(out, 0, sizeof *out);
    if (cut_codegen_conv_named(&r->conv, &r->sched, entry, &out->ks, &why) != 0) {
        cut_kernel_src_free(&out->ks);
        return cut_err_set(e, "%s line %d: cannot generate schedule '%s': %s", path, line, desc, why.msg);
    }
    if (out->ks.ntma != 0 || out->ks.arch_a) { /* wgmma_conv: left out, the case's other kernels still export */
        cut_kernel_src_free(&out->ks);
        cut_log(CUT_LOG_WARN, "cutune export: %s line %d: schedule '%s' left out: it takes its weights as a TMA map "
                              "and needs sm_90a, while the conv export's launchers pass device pointers and build "
                              "for sm_90\n", path, line, desc);
        return 2;
    }
    out->case_idx = case_idx;
    out->kernel_id = kernel_id;
    out->conv = r->conv;
    out->sched = r->sched;
    out->tuned_ms = r->median_ms;
    out->tuned_gflops = r->gflops;
    return 0;
}

/* Adds the kernels of one results file. */
static int load_file(const char *path, int case_idx, const cut_conv *conv, cut_export_set *set, int *cap,
                     cut_err *e)
{
    cut_records_file f;
    if (cut_records_read(path, &f, e) != 0) {
        cut_records_file_free(&f);
        return cut_err_wrap(e, "malformed results file");
    }
    int rc = 0;
    if (f.partial) /* sample writes whole files atomically: a line without '\n' is damage, not a running writer */
        rc = cut_err_set(e, "%s: the last line is incomplete (no newline); run cutune sample again", path);
    for (int i = 0; rc == 0 && i < f.n; i++) {
        cut_export_kernel k;
        int st = load_record(path, line_of(f.text, f.line_off[i]), case_idx, conv, &f.recs[i], i + 1, &k, e);
        if (st < 0)
            rc = -1;
        else if (st == 2)
            set->unexportable++;
        else if (st > 0)
            set->skipped++;
        else
            set_push(set, cap, &k);
    }
    cut_records_file_free(&f);
    return rc;
}

static int cmp_kernel(const void *pa, const void *pb)
{
    const cut_export_kernel *a = pa, *b = pb;
    if (a->case_idx != b->case_idx)
        return a->case_idx < b->case_idx ? -1 : 1;
    return (a->kernel_id > b->kernel_id) - (a->kernel_id < b->kernel_id);
}

/* Refuses two results files of the same case: their kernels would share kernels/caseN/. */
static int check_unique_cases(char **names, const int *idx, int n, cut_err *e)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (idx[i] == idx[j])
                return cut_err_set(e, "two results files are case %d ('%s' and '%s'): export one workload list per "
                                      "folder",
                                   idx[i], names[i], names[j]);
    return 0;
}

int cut_export_load_conv(const char *results_dir, int allow_empty, cut_export_set *set, cut_err *e)
{
    memset(set, 0, sizeof *set);
    struct stat st;
    if (stat(results_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cut_err_set(e, "there is no tuning results folder '%s' (run cutune tune or cutune sample first)",
                           results_dir);
    char **names;
    int n;
    if (cut_records_dir_list(results_dir, ".json", &names, &n, e) != 0)
        return -1;
    int *idx = cut_xcalloc((size_t)(n ? n : 1), sizeof *idx);
    cut_conv *convs = cut_xcalloc((size_t)(n ? n : 1), sizeof *convs);
    int rc = 0, cap = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        cut_err why = {{0}};
        if (cut_conv_parse_case_name(names[i], &idx[i], &convs[i], &why) != 0)
            rc = cut_err_set(e, "'%s' in %s is not a results file (caseN_conv2d_N_..._padding_P.json): %s", names[i],
                             results_dir, why.msg);
    }
    if (rc == 0)
        rc = check_unique_cases(names, idx, n, e);
    for (int i = 0; rc == 0 && i < n; i++) {
        char path[4096];
        rc = cut_path_join(path, sizeof path, results_dir, names[i], e);
        if (rc == 0)
            rc = load_file(path, idx[i], &convs[i], set, &cap, e);
    }
    if (rc == 0 && set->n == 0 && set->unexportable > 0 && !allow_empty)
        rc = cut_err_set(e, "the tuning results folder '%s' holds only wgmma_conv kernels (%d), which the export "
                            "cannot launch yet (a TMA map of the weights, sm_90a)",
                         results_dir, set->unexportable);
    else if (rc == 0 && set->n == 0 && !allow_empty)
        rc = cut_err_set(e, "the tuning results folder '%s' has no measured kernels (%d results file(s)); run cutune "
                            "tune or cutune sample first",
                         results_dir, n);
    if (rc == 0 && set->n > 0)
        qsort(set->k, (size_t)set->n, sizeof *set->k, cmp_kernel);
    free(idx);
    free(convs);
    cut_records_names_free(names, n);
    return rc;
}

int cut_export_load(const char *results_dir, cut_export_set *set, cut_err *e)
{
    return cut_export_load_conv(results_dir, 0, set, e);
}

/* ---- writing ------------------------------------------------------------------------------------------------ */

static int write_text(const char *dir, const char *name, const char *text, size_t len, cut_err *e)
{
    char path[4096];
    if (cut_path_join(path, sizeof path, dir, name, e) != 0)
        return -1;
    return cut_write_file_atomic(path, text ? text : "", len, e);
}

/* Makes dir/kernels a folder of cutune's: what an earlier export wrote there is removed (a user's file beside it
 * stays), a folder cutune did not make is refused. */
static int prepare_kernels_dir(const char *kdir, cut_err *e)
{
    struct stat st;
    if (lstat(kdir, &st) == 0) {
        if (!cut_export_dir_marked(kdir))
            return cut_err_set(e, "'%s' exists and was not written by cutune export (no %s file in it): move it "
                                  "away or choose another --outdir",
                               kdir, CUT_EXPORT_MARKER);
    } else if (errno != ENOENT) {
        return cut_err_set(e, "cannot inspect '%s': %s", kdir, strerror(errno));
    }
    return cut_export_reset_dir(kdir, e);
}

static int write_kernel(const char *kdir, const cut_export_kernel *k, cut_err *e)
{
    char cdir[4096], name[64];
    if (snprintf(cdir, sizeof cdir, "%s/case%d", kdir, k->case_idx) >= (int)sizeof cdir)
        return cut_err_set(e, "path too long: '%s'", kdir);
    if (cut_mkdirs(cdir, e) != 0)
        return -1;
    char ns[64], guard[64], banner[512], *header = NULL;
    cut_export_kernel_names(k, ns, sizeof ns, guard, sizeof guard);
    snprintf(banner, sizeof banner,
             "Generated by cutune %s — do not edit. kernels/case%d/kernel%d.cuh: the kernel cutune measured,\n"
             "as a header any translation unit can include beside others: guarded, its code in namespace %s,\n"
             "its macros undefined at the end (a caller's of the same names restored). Launch it with\n"
             "launch_case%d_k%d (kernel%d.cu, declared in ../cutune_kernels.h).",
             CUTUNE_VERSION, k->case_idx, k->kernel_id, ns, k->case_idx, k->kernel_id, k->kernel_id);
    const int split = cut_export_workspace_bytes(k) > 0;
    cut_export_wrap_header(k->ks.src, ns, guard, banner,
                           split ? "// split-K: the workspace is the launcher's arguments, one per stream\n"
                                   "#define CUT_WS_PARAM 1\n"
                                 : NULL,
                           &header);
    snprintf(name, sizeof name, "kernel%d.cuh", k->kernel_id);
    int wrc = write_text(cdir, name, header, strlen(header), e);
    free(header);
    if (wrc != 0)
        return -1;
    cut_buf b;
    cut_buf_init(&b);
    cut_export_wrapper_text(&b, k);
    snprintf(name, sizeof name, "kernel%d.cu", k->kernel_id);
    int rc = write_text(cdir, name, b.data, b.len, e);
    cut_buf_free(&b);
    return rc;
}

/* CMAKE_CUDA_ARCHITECTURES value: digits with an optional feature suffix ("90", "90a", "100f"). */
static int arch_ok(const char *arch)
{
    size_t i = 0;
    while (arch[i] >= '0' && arch[i] <= '9')
        i++;
    if (i == 0 || i > 4)
        return 0;
    return arch[i] == '\0' || ((arch[i] == 'a' || arch[i] == 'f') && arch[i + 1] == '\0');
}

int cut_export_write(const cut_export_set *set, const char *outdir, const char *arch, cut_err *e)
{
    const cut_export_gemm_set none = {0};
    if (set->n == 0)
        return cut_err_set(e, "nothing to export");
    return cut_export_write_all(set, &none, outdir, arch, e);
}

int cut_export_write_all(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                         const char *arch, cut_err *e)
{
    if (!arch_ok(arch))
        return cut_err_set(e, "'%s' is not a CUDA architecture number such as 90 or 90a", arch);
    if (set->n == 0 && gemm->n == 0)
        return cut_err_set(e, "nothing to export: no measured conv or GEMM kernel");
    char kdir[4096];
    if (cut_mkdirs(outdir, e) != 0 || cut_path_join(kdir, sizeof kdir, outdir, "kernels", e) != 0 ||
        prepare_kernels_dir(kdir, e) != 0)
        return -1;
    for (int i = 0; i < set->n; i++)
        if (write_kernel(kdir, &set->k[i], e) != 0)
            return -1;
    if (cut_export_gemm_write(gemm, kdir, arch, e) != 0)
        return -1;
    cut_buf drv, cmk, csv;
    cut_buf_init(&drv);
    cut_buf_init(&cmk);
    cut_buf_init(&csv);
    int rc = 0;
    {
        cut_buf h;
        cut_buf_init(&h);
        cut_export_api_header_text(&h, set, gemm);
        rc = write_text(kdir, "cutune_kernels.h", h.data, h.len, e);
        cut_buf_free(&h);
    }
    if (rc == 0 && set->n > 0) {
        cut_buf rt;
        cut_buf_init(&rt);
        cut_export_runtime_text(&rt);
        rc = write_text(kdir, "cutune_runtime.cu", rt.data, rt.len, e);
        cut_buf_free(&rt);
    }
    if (rc == 0 && set->n > 0) {
        cut_export_driver_text(&drv, set);
        cut_export_cmake_text(&cmk, set, arch);
        cut_buf_printf(&csv, "%s\n", CUT_EXPORT_CSV_HEADER);
        for (int i = 0; i < set->n; i++)
            cut_export_csv_row(&csv, &set->k[i]);
        if (rc == 0)
            rc = write_text(kdir, "driver.cu", drv.data, drv.len, e);
        if (rc == 0)
            rc = write_text(kdir, "kernel_metadata.csv", csv.data, csv.len, e);
    } else if (rc == 0) {
        cut_buf_printf(&cmk, "# Generated by cutune %s — do not edit. The exported kernels' projects:\n"
                             "#   cmake -S kernels -B build && cmake --build build -j\n"
                             "cmake_minimum_required(VERSION 3.18)\n"
                             "project(cutune_kernels LANGUAGES CUDA CXX)\n", CUTUNE_VERSION);
    }
    if (gemm->n > 0)
        cut_buf_printf(&cmk, "add_subdirectory(gemm) # the tuned GEMMs: gemm_driver\n");
    if (rc == 0)
        rc = write_text(kdir, "CMakeLists.txt", cmk.data, cmk.len, e);
    if (rc == 0) /* the manifest: every file written here is cutune's, and only those go on a re-export or clean */
        rc = cut_export_seal_dir(kdir, e);
    cut_buf_free(&drv);
    cut_buf_free(&cmk);
    cut_buf_free(&csv);
    return rc;
}
