/* cutune — export of tuned GEMMs: tuningresults/gemm_*.json -> kernels/gemm/ (a stand-alone CUDA project with a
 * launcher per kernel and one measurement driver). Loading checks every line and generates every kernel in memory
 * first, so a refused export writes nothing. */
#include "cutune/export.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cut_export_gemm_set_free(cut_export_gemm_set *set)
{
    if (!set)
        return;
    for (int i = 0; i < set->n; i++)
        cut_kernel_src_free(&set->k[i].ks);
    free(set->k);
    memset(set, 0, sizeof *set);
}

/* 0 when the launcher can launch k's kernel: its arguments are A, B (or two TMA maps over them, 3-D for a batch), C
 * and, when the GEMM reads C, Cin, and its grid is within CUDA's limits; else -1 with a sentence. */
static int launchable(const cut_export_gemm_kernel *k, cut_err *e)
{
    const cut_kernel_src *ks = &k->ks;
    const int cin = cut_gemm_cin_buf(&k->gemm) >= 0;
    if (ks->ntma != 0 && ks->ntma != 2)
        return cut_err_set(e, "the kernel takes %d TMA maps; the launcher encodes none or two (A and B)", ks->ntma);
    for (int i = 0; i < ks->ntma; i++)
        if (ks->tma[i].planes != (cut_gemm_batch(&k->gemm) > 1 ? (unsigned long long)cut_gemm_batch(&k->gemm) : 0))
            return cut_err_set(e, "TMA map %d holds %llu planes for a batch of %d: the launcher encodes one plane a "
                                  "matrix", i, ks->tma[i].planes, cut_gemm_batch(&k->gemm));
    if (ks->extra_bufs != cin)
        return cut_err_set(e, "the kernel takes %d argument(s) after C, where the launcher passes %s", ks->extra_bufs,
                           cin ? "Cin (beta != 0)" : "none (beta 0)");
    if (ks->grid[0] < 1 || ks->grid[0] > 2147483647u || ks->grid[1] < 1 || ks->grid[1] > 65535u || ks->grid[2] < 1 ||
        ks->grid[2] > 65535u)
        return cut_err_set(e, "its grid (%u, %u, %u) is past CUDA's limits (x < 2^31, y and z <= 65535)", ks->grid[0],
                           ks->grid[1], ks->grid[2]);
    return 0;
}

/* Checks record r (line `line` of path) and generates its kernel into k. 0: exported; 1: an unmeasured or failed
 * trial (skipped); -1: refused with e. */
static int load_record(const char *path, int line, int gemm_id, const cut_gemm_record *r, cut_export_gemm_kernel *k,
                       cut_err *e)
{
    memset(k, 0, sizeof *k);
    if (r->status != CUT_ST_OK || !(r->median_ms > 0))
        return 1;
    char want[128];
    cut_gemm_name(&r->gemm, want, sizeof want);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, want, strlen(want)) != 0 || strcmp(base + strlen(want), ".json") != 0)
        return cut_err_set(e, "%s line %d: the record's GEMM is %s, not the file's", path, line, want);
    cut_devlimits lim;
    cut_devlimits_sm90(&lim);
    cut_err why = {{0}};
    if (cut_gemm_sched_check(&r->gemm, &r->sched, &lim, &why) != 0)
        return cut_err_set(e, "%s line %d: the schedule is not valid for %s: %s", path, line, want, why.msg);
    k->gemm = r->gemm;
    k->gemm_id = gemm_id;
    k->kernel_id = line;
    k->sched = r->sched;
    k->tuned_ms = r->median_ms;
    k->tuned_tflops = r->gflops / 1000.0;
    char entry[CUT_ENTRY_LEN];
    snprintf(entry, sizeof entry, "cut_gemm%d_k%d", gemm_id, line);
    if (cut_codegen_gemm(&r->gemm, &r->sched, &k->ks, &why) != 0 ||
        cut_codegen_rename_entry(&k->ks, entry, &why) != 0) {
        cut_kernel_src_free(&k->ks);
        return cut_err_set(e, "%s line %d: code generation failed: %s", path, line, why.msg);
    }
    if (launchable(k, &why) != 0) {
        cut_kernel_src_free(&k->ks);
        return cut_err_set(e, "%s line %d: %s cannot be exported: %s", path, line, want, why.msg);
    }
    return 0;
}

/* Loads one results file of GEMM gemm_id into set (capacity *cap). A malformed or partial line refuses. */
static int load_file(const char *path, int gemm_id, cut_export_gemm_set *set, int *cap, cut_err *e)
{
    cut_gemm_record *recs = NULL;
    int n = 0, partial = 0, bad = 0;
    char note[256] = "";
    if (cut_gemm_records_load(path, &recs, &n, &partial, &bad, note, sizeof note, e) != 0)
        return -1;
    int rc = 0;
    if (partial || bad)
        rc = cut_err_set(e, "%s: %s", path, bad ? note : "the last line is incomplete");
    for (int i = 0; rc == 0 && i < n; i++) {
        cut_export_gemm_kernel k;
        int st = load_record(path, i + 1, gemm_id, &recs[i], &k, e);
        if (st < 0)
            rc = -1;
        else if (st == 1)
            set->skipped++;
        else {
            if (set->n == *cap) {
                *cap = *cap ? 2 * *cap : 8;
                set->k = cut_xrealloc(set->k, (size_t)*cap * sizeof *set->k);
            }
            set->k[set->n++] = k;
        }
    }
    free(recs);
    return rc;
}

int cut_export_gemm_load(const char *results_dir, cut_export_gemm_set *set, cut_err *e)
{
    memset(set, 0, sizeof *set);
    struct stat st;
    if (stat(results_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cut_err_set(e, "there is no tuning results folder '%s' (run cutune tune or cutune sample first)",
                           results_dir);
    char **names;
    int n;
    if (cut_gemm_records_dir_list(results_dir, &names, &n, e) != 0)
        return -1;
    int rc = 0, cap = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        char path[4096];
        rc = cut_path_join(path, sizeof path, results_dir, names[i], e);
        if (rc == 0)
            rc = load_file(path, i + 1, set, &cap, e);
    }
    cut_records_names_free(names, n);
    return rc;
}

/* ---- writing ------------------------------------------------------------------------------------------------ */

static int write_text(const char *dir, const char *name, const cut_buf *b, cut_err *e)
{
    char path[4096];
    if (cut_path_join(path, sizeof path, dir, name, e) != 0)
        return -1;
    return cut_write_file_atomic(path, b->data ? b->data : "", b->len, e);
}

/* Writes kernel k into gdir/<gemm name>/kernelK.{cuh,cu}. */
static int write_kernel(const char *gdir, const cut_export_gemm_kernel *k, cut_err *e)
{
    char name[128], dir[4096], file[64];
    cut_gemm_name(&k->gemm, name, sizeof name);
    if (cut_path_join(dir, sizeof dir, gdir, name, e) != 0 || cut_mkdirs(dir, e) != 0)
        return -1;
    char ns[64], guard[64], banner[1024], what[128], *header = NULL;
    snprintf(ns, sizeof ns, "cut_gemm%d_k%d", k->gemm_id, k->kernel_id);
    snprintf(guard, sizeof guard, "CUTUNE_GEMM%d_K%d_CUH", k->gemm_id, k->kernel_id);
    snprintf(banner, sizeof banner,
             "Generated by cutune %s — do not edit. kernels/gemm/%s/kernel%d.cuh: the kernel cutune measured,\n"
             "as a header any translation unit can include beside others: guarded, its code in namespace %s,\n"
             "its macros undefined at the end (a caller's of the same names restored). Launch it with\n"
             "launch_gemm%d_k%d (kernel%d.cu, declared in ../../cutune_kernels.h).",
             CUTUNE_VERSION, name, k->kernel_id, ns, k->gemm_id, k->kernel_id, k->kernel_id);
    const size_t len = strlen(banner);
    if (cut_export_gemm_module_state(k, what, sizeof what))
        snprintf(banner + len, sizeof banner - len,
                 "\nOne launch at a time: this split-K kernel keeps %s\n"
                 "in module variables (each launch leaves them as it found them); two launches in flight at once\n"
                 "(two streams, two host threads) corrupt each other's results.",
                 what);
    cut_export_wrap_header(k->ks.src, ns, guard, banner, NULL, &header);
    cut_buf b = {.data = header, .len = strlen(header)};
    snprintf(file, sizeof file, "kernel%d.cuh", k->kernel_id);
    int rc = write_text(dir, file, &b, e);
    free(header);
    cut_buf_init(&b);
    cut_export_gemm_launcher_text(&b, k);
    snprintf(file, sizeof file, "kernel%d.cu", k->kernel_id);
    if (rc == 0)
        rc = write_text(dir, file, &b, e);
    cut_buf_free(&b);
    return rc;
}

int cut_export_gemm_write(const cut_export_gemm_set *set, const char *kdir, const char *arch, cut_err *e)
{
    if (set->n == 0)
        return 0;
    char gdir[4096];
    if (cut_path_join(gdir, sizeof gdir, kdir, "gemm", e) != 0 || cut_mkdirs(gdir, e) != 0)
        return -1;
    for (int i = 0; i < set->n; i++)
        if (write_kernel(gdir, &set->k[i], e) != 0)
            return -1;
    cut_buf drv, cmk, csv;
    cut_buf_init(&drv);
    cut_buf_init(&cmk);
    cut_buf_init(&csv);
    cut_export_gemm_driver_text(&drv, set);
    cut_export_gemm_cmake_text(&cmk, set, arch);
    cut_buf_printf(&csv, "%s\n", CUT_EXPORT_GEMM_CSV_HEADER);
    for (int i = 0; i < set->n; i++) {
        const cut_export_gemm_kernel *k = &set->k[i];
        char knobs[512];
        cut_gemm_sched_describe(&k->sched, knobs, sizeof knobs);
        char *kn = strchr(knobs, ' '); /* after the template's name */
        kn = kn ? kn + 1 : knobs + strlen(knobs);
        for (char *p = kn; *p; p++)
            *p = *p == ' ' ? ';' : *p;
        const cut_gemm_template *t = cut_gemm_template_get(k->sched.tpl);
        cut_buf_printf(&csv, "%d,%d,%d,%d,%d,%s,%s,%s,\"%s\",%u,%u,%u,%u,%u,%u,%u,%.17g,%.17g,%d,%.17g,%.17g\n",
                       k->gemm_id, k->kernel_id, k->gemm.m, k->gemm.n, k->gemm.k, cut_gemm_layout_name(k->gemm.layout),
                       cut_dtype_name(k->gemm.dtype), t ? t->name : "?", kn, k->ks.grid[0], k->ks.grid[1],
                       k->ks.grid[2], k->ks.block[0], k->ks.block[1], k->ks.block[2], k->ks.smem_dynamic, k->tuned_ms,
                       k->tuned_tflops, cut_gemm_batch(&k->gemm), cut_gemm_alpha(&k->gemm), cut_gemm_beta(&k->gemm));
    }
    int rc = write_text(gdir, "driver.cu", &drv, e);
    if (rc == 0)
        rc = write_text(gdir, "CMakeLists.txt", &cmk, e);
    if (rc == 0)
        rc = write_text(gdir, "gemm_metadata.csv", &csv, e);
    cut_buf_free(&drv);
    cut_buf_free(&cmk);
    cut_buf_free(&csv);
    return rc;
}
