/* cutune — export's seed 001 files at the project root (issue 16): the run scripts of phase 3
 * (scripts/caseN/run_kernelK_powercapP.sh, run_layer_caseN.sh, run_all.sh), and kernel_metadata.csv and
 * CMakeLists.txt where seed 001 puts them. Each script calls `cutune energy` for what it names, so the files the
 * seed's users run produce the kernel_outputs/ they know.
 *
 * Ownership: scripts/ carries the export marker and its manifest, as kernels/ does. A root file is cutune's when its
 * first line (the second after a "#!" line) starts with CUT_EXPORT_ROOT_TAG, or, for kernel_metadata.csv, when its
 * first line is export's CSV header; a root file that is not cutune's is never overwritten: the export is refused
 * before anything is written (cut_export_check_root). */
#include "cutune/export.h"
#include "cutune/powercap.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- ownership ---------------------------------------------------------------------------------------------- */

int cut_export_root_file_ours(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char l1[512] = "", l2[512] = "";
    int ok = fgets(l1, sizeof l1, f) != NULL;
    if (ok && !strncmp(l1, "#!", 2) && !fgets(l2, sizeof l2, f))
        l2[0] = '\0';
    fclose(f);
    if (!ok)
        return 0;
    l1[strcspn(l1, "\r\n")] = '\0';
    const size_t tl = strlen(CUT_EXPORT_ROOT_TAG);
    return !strcmp(l1, CUT_EXPORT_CSV_HEADER) || !strncmp(l1, CUT_EXPORT_ROOT_TAG, tl) ||
           (!strncmp(l1, "#!", 2) && !strncmp(l2, CUT_EXPORT_ROOT_TAG, tl));
}

/* Refuses outdir/name when it exists and is not cutune's (or is not a regular file). */
static int check_root_file(const char *outdir, const char *name, cut_err *e)
{
    char path[4096];
    struct stat st;
    if (cut_path_join(path, sizeof path, outdir, name, e) != 0)
        return -1;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : cut_err_set(e, "cannot inspect '%s': %s", path, strerror(errno));
    if (cut_export_root_file_ours(path))
        return 0;
    return cut_err_set(e, "'%s' exists and was not written by cutune export (no \"%s\" line at its top): move it "
                          "away or choose another --outdir; nothing was written",
                       path, CUT_EXPORT_ROOT_TAG);
}

/* The folder label of one workload under scripts/ and kernel_outputs/: "caseN" or the GEMM's name. */
static void conv_label(const cut_export_kernel *k, char *buf, size_t n)
{
    snprintf(buf, n, "case%d", k->case_idx);
}

static void gemm_label(const cut_export_gemm_kernel *k, char *buf, size_t n)
{
    cut_gemm_name(&k->gemm, buf, n);
}

int cut_export_check_root(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                          cut_err *e)
{
    char path[4096], name[256];
    struct stat st;
    if (cut_path_join(path, sizeof path, outdir, "scripts", e) != 0)
        return -1;
    if (lstat(path, &st) == 0 && !cut_export_dir_marked(path))
        return cut_err_set(e, "'%s' exists and was not written by cutune export (no %s file in it): move it away "
                              "or choose another --outdir; nothing was written",
                           path, CUT_EXPORT_MARKER);
    static const char *const fixed[] = {"CMakeLists.txt", "run_all.sh", "kernel_metadata.csv"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(fixed); i++)
        if (check_root_file(outdir, fixed[i], e) != 0)
            return -1;
    for (int i = 0; i < set->n; i++) {
        char label[160];
        conv_label(&set->k[i], label, sizeof label);
        snprintf(name, sizeof name, "run_layer_%s.sh", label);
        if (check_root_file(outdir, name, e) != 0)
            return -1;
    }
    for (int i = 0; i < gemm->n; i++) {
        char label[160];
        gemm_label(&gemm->k[i], label, sizeof label);
        snprintf(name, sizeof name, "run_layer_%s.sh", label);
        if (check_root_file(outdir, name, e) != 0)
            return -1;
    }
    return 0;
}

/* ---- texts -------------------------------------------------------------------------------------------------- */

/* s as one word of bash, in single quotes ('\'' for a quote). */
static void sh_quote(cut_buf *b, const char *s)
{
    cut_buf_append(b, "'", 1);
    for (; *s; s++) {
        if (*s == '\'')
            cut_buf_append(b, "'\\''", 4);
        else
            cut_buf_append(b, s, 1);
    }
    cut_buf_append(b, "'", 1);
}

/* The lines every script starts with: shebang, tag, what it does (comment lines), strict mode, the cd to the
 * project root (up from the script's own folder, so the project can be moved) and $CUTUNE. */
static void script_head(cut_buf *b, const char *what, const char *up, const cut_export_run_opts *ro)
{
    cut_buf_printf(b,
                   "#!/usr/bin/env bash\n"
                   "%s %s — do not edit: cutune export rewrites it, cutune clean removes it.\n"
                   "%s"
                   "# Arguments are passed on to cutune energy, e.g. --allow-power-cap (sets the caps: root; the\n"
                   "# limit is restored after), --test, --backend emu. CUTUNE=/path/to/cutune picks another binary.\n"
                   "set -euo pipefail\n"
                   "cd \"$(dirname \"${BASH_SOURCE[0]}\")%s\"\n"
                   "CUTUNE=${CUTUNE:-",
                   CUT_EXPORT_ROOT_TAG, CUTUNE_VERSION, what, up);
    sh_quote(b, ro && ro->cutune_exe && *ro->cutune_exe ? ro->cutune_exe : "cutune");
    cut_buf_printf(b, "}\n");
}

/* " --results '<dir>'" when the scripts must name the results folder. */
static void results_arg(cut_buf *b, const cut_export_run_opts *ro)
{
    if (ro && ro->results && *ro->results) {
        cut_buf_printf(b, " --results ");
        sh_quote(b, ro->results);
    }
}

/* scripts/<label>/run_kernelK_powercapP.sh; sel is "--case N" or "--gemm G". */
static void kernel_script(cut_buf *b, const char *label, const char *sel, int kernel, int p,
                          const cut_export_run_opts *ro)
{
    char what[1024];
    snprintf(what, sizeof what,
             "# Seed 001 phase 3: %s, kernel %d at power cap %d of the GPU model's %d (1 = lowest; cutune energy\n"
             "# --detect lists them) -> kernel_outputs/%s/powercap%d/output_kernel%d.txt; results.csv keeps the\n"
             "# other kernels' rows and all.csv is rebuilt.\n",
             label, kernel, p, CUT_POWERCAP_PER_MODEL, label, p, kernel);
    script_head(b, what, "/../..", ro);
    cut_buf_printf(b, "exec \"$CUTUNE\" energy --outdir .");
    results_arg(b, ro);
    cut_buf_printf(b, " %s --kernel %d --power-cap-index %d \"$@\"\n", sel, kernel, p);
}

/* run_layer_<label>.sh: every kernel of the workload, one cutune energy call (one cap change) per cap. */
static void layer_script(cut_buf *b, const char *label, const char *sel, int nkernels,
                         const cut_export_run_opts *ro)
{
    char what[1024];
    snprintf(what, sizeof what,
             "# Seed 001 phase 3: every kernel of %s (%d kernel(s)) at each of the %d power caps, one cutune energy\n"
             "# call per cap (as scripts/%s/run_kernelK_powercapP.sh for every K and P, with fewer cap changes)\n"
             "# -> kernel_outputs/%s/.\n",
             label, nkernels, CUT_POWERCAP_PER_MODEL, label, label);
    script_head(b, what, "", ro);
    cut_buf_printf(b, "for p in");
    for (int p = 1; p <= CUT_POWERCAP_PER_MODEL; p++)
        cut_buf_printf(b, " %d", p);
    cut_buf_printf(b, "; do\n  \"$CUTUNE\" energy --outdir .");
    results_arg(b, ro);
    cut_buf_printf(b, " %s --power-cap-index \"$p\" \"$@\"\ndone\n", sel);
}

static void cmake_root_text(cut_buf *b, const cut_export_set *set, const char *arch)
{
    cut_buf_printf(b,
                   "%s %s — do not edit: cutune export rewrites it, cutune clean removes it.\n"
                   "# Seed 001's build configuration at the project root; the exported project is kernels/:\n"
                   "#   cmake -S . -B build && cmake --build build -j && build/kernels/%s\n"
                   "cmake_minimum_required(VERSION 3.18)\n"
                   "set(CMAKE_CUDA_ARCHITECTURES %s CACHE STRING \"CUDA architectures to build for\")\n"
                   "project(cutune_export LANGUAGES CUDA CXX)\n"
                   "if(NOT CMAKE_BUILD_TYPE)\n"
                   "  set(CMAKE_BUILD_TYPE Release)\n"
                   "endif()\n"
                   "add_subdirectory(kernels)\n",
                   CUT_EXPORT_ROOT_TAG, CUTUNE_VERSION, set->n ? "driver" : "gemm/gemm_driver", arch);
}

/* ---- writing ------------------------------------------------------------------------------------------------ */

static int write_script(const char *path, const cut_buf *b, cut_err *e)
{
    if (cut_write_file_atomic(path, b->data, b->len, e) != 0)
        return -1;
    if (chmod(path, 0755) != 0)
        return cut_err_set(e, "cannot make '%s' executable: %s", path, strerror(errno));
    return 0;
}

/* One workload's scripts: scripts/<label>/run_kernelK_powercapP.sh for its kernels, and run_layer_<label>.sh. */
static int write_workload(const char *outdir, const char *label, const char *sel, const int *kernels, int n,
                          const cut_export_run_opts *ro, cut_err *e)
{
    char dir[4096], path[4400];
    if (snprintf(dir, sizeof dir, "%s/scripts/%s", outdir, label) >= (int)sizeof dir)
        return cut_err_set(e, "path too long: '%s'", outdir);
    if (cut_mkdirs(dir, e) != 0)
        return -1;
    cut_buf b;
    cut_buf_init(&b);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++)
        for (int p = 1; rc == 0 && p <= CUT_POWERCAP_PER_MODEL; p++) {
            b.len = 0;
            kernel_script(&b, label, sel, kernels[i], p, ro);
            snprintf(path, sizeof path, "%s/run_kernel%d_powercap%d.sh", dir, kernels[i], p);
            rc = write_script(path, &b, e);
        }
    if (rc == 0) {
        b.len = 0;
        layer_script(&b, label, sel, n, ro);
        snprintf(path, sizeof path, "%s/run_layer_%s.sh", outdir, label);
        rc = write_script(path, &b, e);
    }
    cut_buf_free(&b);
    return rc;
}

int cut_export_is_layer_script(const char *name)
{
    const size_t len = strlen(name);
    return len > 13 && !strncmp(name, "run_layer_", 10) && !strcmp(name + len - 3, ".sh");
}

/* Removes outdir's run_layer_*.sh files that an earlier export wrote (a re-export writes the current ones). */
static void remove_old_layers(const char *outdir)
{
    DIR *d = opendir(outdir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!cut_export_is_layer_script(de->d_name))
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", outdir, de->d_name);
        if (cut_export_root_file_ours(path))
            remove(path);
    }
    closedir(d);
}

/* The scripts of every conv case and GEMM (each workload's kernels are consecutive in its set). */
static int write_all_scripts(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                             const cut_export_run_opts *ro, cut_buf *all, cut_err *e)
{
    int *ids = cut_xcalloc((size_t)(set->n + gemm->n + 1), sizeof *ids);
    int rc = 0;
    for (int i = 0; rc == 0 && i < set->n;) {
        int j = i, n = 0;
        char label[160], sel[64];
        for (; j < set->n && set->k[j].case_idx == set->k[i].case_idx; j++)
            ids[n++] = set->k[j].kernel_id;
        conv_label(&set->k[i], label, sizeof label);
        snprintf(sel, sizeof sel, "--case %d", set->k[i].case_idx);
        rc = write_workload(outdir, label, sel, ids, n, ro, e);
        cut_buf_printf(all, "bash ./run_layer_%s.sh \"$@\"\n", label);
        i = j;
    }
    for (int i = 0; rc == 0 && i < gemm->n;) {
        int j = i, n = 0;
        char label[160], sel[64];
        for (; j < gemm->n && gemm->k[j].gemm_id == gemm->k[i].gemm_id; j++)
            ids[n++] = gemm->k[j].kernel_id;
        gemm_label(&gemm->k[i], label, sizeof label);
        snprintf(sel, sizeof sel, "--gemm %d", gemm->k[i].gemm_id);
        rc = write_workload(outdir, label, sel, ids, n, ro, e);
        cut_buf_printf(all, "bash ./run_layer_%s.sh \"$@\"\n", label);
        i = j;
    }
    free(ids);
    return rc;
}

int cut_export_write_scripts(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                             const char *arch, const cut_export_run_opts *ro, cut_err *e)
{
    char sdir[4096], path[4400];
    if (cut_path_join(sdir, sizeof sdir, outdir, "scripts", e) != 0 || cut_export_reset_dir(sdir, e) != 0)
        return -1;
    remove_old_layers(outdir);
    cut_buf all, b;
    cut_buf_init(&all);
    cut_buf_init(&b);
    script_head(&all,
                "# Seed 001 phase 3: every exported workload's kernels at each power cap (its run_layer_*.sh),\n"
                "# into kernel_outputs/.\n",
                "", ro);
    cut_buf_printf(&all, "export CUTUNE\n");
    int rc = write_all_scripts(set, gemm, outdir, ro, &all, e);
    if (rc == 0)
        rc = cut_export_seal_dir(sdir, e);
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/run_all.sh", outdir);
        rc = write_script(path, &all, e);
    }
    if (rc == 0) {
        cmake_root_text(&b, set, arch);
        snprintf(path, sizeof path, "%s/CMakeLists.txt", outdir);
        rc = cut_write_file_atomic(path, b.data, b.len, e);
    }
    snprintf(path, sizeof path, "%s/kernel_metadata.csv", outdir);
    if (rc == 0 && set->n > 0) { /* the same CSV as kernels/kernel_metadata.csv */
        b.len = 0;
        cut_buf_printf(&b, "%s\n", CUT_EXPORT_CSV_HEADER);
        for (int i = 0; i < set->n; i++)
            cut_export_csv_row(&b, &set->k[i]);
        rc = cut_write_file_atomic(path, b.data, b.len, e);
    } else if (rc == 0 && cut_export_root_file_ours(path)) {
        remove(path); /* an earlier export's conv kernels, gone from this one */
    }
    cut_buf_free(&all);
    cut_buf_free(&b);
    return rc;
}

int cut_export_write_project(const cut_export_set *set, const cut_export_gemm_set *gemm, const char *outdir,
                             const char *arch, const cut_export_run_opts *ro, cut_err *e)
{
    if (cut_export_check_root(set, gemm, outdir, e) != 0 || cut_export_write_all(set, gemm, outdir, arch, e) != 0)
        return -1;
    return cut_export_write_scripts(set, gemm, outdir, arch, ro, e);
}
