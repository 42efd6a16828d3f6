/* cutune report — tuningresults/ -> performance/ (one integer GFLOP/s per line, seed 000), then report/: tables
 * against the vendor baseline (stdout and summary.md) and gnuplot plots (include/cutune/report.h). */
#include "cli/args.h"
#include "cli/cli.h"
#include "cutune/gemm_tune.h"
#include "cutune/record.h"
#include "cutune/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: cutune report [--outdir DIR] [--in DIR] [--out DIR] [--baseline FILE] [--no-plots]\n"
    "       cutune report --gemm [--outdir DIR]\n"
    "       cutune report --kernel [--outdir DIR]\n"
    "       cutune report --optimized OPT_DIR\n"
    "  --gemm           the GEMM report: DIR/tuningrecords/gemm_*.json (best simt = generic, best other template =\n"
    "                   template) and DIR/tuningresults/vendor_<gemm>.json ({\"tflops\",\"ms\",\"algo\"}) ->\n"
    "                   DIR/report/gemm.md and DIR/report/gemm.json\n"
    "  --kernel         the user-kernel report: DIR/tuningrecords/kernel_*.json (`tune --kernel`) and their\n"
    "                   DIR/final.jsonl lines -> DIR/report/kernel.md and DIR/report/kernel.json\n"
    "  --optimized D    the optimizer's report: D/summary.json (`cutune optimize --outdir D`) ->\n"
    "                   D/report/optimize.md and D/report/optimize.json\n"
    "  --outdir DIR     where tuningrecords/, final.jsonl and kernel_outputs/ are; report/ goes here (default .)\n"
    "  --in DIR         representatives (default DIR/tuningresults)\n"
    "  --out DIR        GFLOP/s files (default DIR/performance)\n"
    "  --baseline FILE  cuDNN times from `cutune baseline --json FILE` (after DIR/final.jsonl; last line wins)\n"
    "  --no-plots       tables only: no plot data, scripts or images\n";

typedef struct report_args {
    const char *outdir, *in, *out, *baseline, *optimized;
    int plots, help, gemm, kernel;
    char command[1024]; /* the command line, for report/gemm.json */
} report_args;

static int parse_args(int argc, char **argv, report_args *a, cut_err *e)
{
    *a = (report_args){.outdir = ".", .plots = 1};
    for (int i = 1; i < argc; i++) {
        int rc = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            a->help = 1;
        else if (!strcmp(argv[i], "--outdir"))
            rc = cut_arg_str(argc, argv, &i, &a->outdir, e);
        else if (!strcmp(argv[i], "--in"))
            rc = cut_arg_str(argc, argv, &i, &a->in, e);
        else if (!strcmp(argv[i], "--out"))
            rc = cut_arg_str(argc, argv, &i, &a->out, e);
        else if (!strcmp(argv[i], "--baseline"))
            rc = cut_arg_str(argc, argv, &i, &a->baseline, e);
        else if (!strcmp(argv[i], "--no-plots"))
            a->plots = 0;
        else if (!strcmp(argv[i], "--gemm"))
            a->gemm = 1;
        else if (!strcmp(argv[i], "--kernel"))
            a->kernel = 1;
        else if (!strcmp(argv[i], "--optimized"))
            rc = cut_arg_str(argc, argv, &i, &a->optimized, e);
        else
            rc = cut_err_set(e, "unknown option '%s' (see cutune help report)", argv[i]);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* cutune report --gemm: report/gemm.md (also on stdout) and report/gemm.json. */
static int gemm_report(const report_args *a, cut_err *e)
{
    char rec[4096], res[4096], out[4096], md[4096];
    if (cut_path_join(rec, sizeof rec, a->outdir, "tuningrecords", e) != 0 ||
        cut_path_join(res, sizeof res, a->outdir, "tuningresults", e) != 0 ||
        cut_path_join(out, sizeof out, a->outdir, "report", e) != 0 ||
        cut_path_join(md, sizeof md, out, "gemm.md", e) != 0) {
        fprintf(stderr, "cutune report: %s\n", e->msg);
        return CUT_EXIT_USAGE;
    }
    cut_gemm_report_row *rows = NULL;
    int n = cut_gemm_report_collect(rec, res, &rows, e);
    if (n < 0) {
        fprintf(stderr, "cutune report: %s\n", e->msg);
        return CUT_EXIT_USAGE;
    }
    int rc = cut_gemm_report_write(out, a->command, rows, n, e);
    free(rows);
    char *text = NULL;
    size_t len = 0;
    if (rc == 0 && cut_read_file(md, &text, &len, e) == 0)
        fwrite(text, 1, len, stdout);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "cutune report: %s\n", e->msg);
        return CUT_EXIT_FAIL;
    }
    printf("\nwrote %s/gemm.md and %s/gemm.json (%d GEMM%s)\n", out, out, n, n == 1 ? "" : "s");
    return CUT_EXIT_OK;
}

/* cutune report --kernel / --optimized: the table on stdout, report/kernel.* or report/optimize.* written. */
static int kernel_report(const report_args *a, cut_err *e)
{
    cut_buf md;
    cut_buf_init(&md);
    const char *dir = a->optimized ? a->optimized : a->outdir;
    int rc = a->optimized ? cut_opt_report(dir, a->command, &md, e) : cut_kernel_report(dir, a->command, &md, e);
    if (rc == 0)
        fwrite(md.data, 1, md.len, stdout);
    cut_buf_free(&md);
    if (rc != 0) {
        fprintf(stderr, "cutune report: %s\n", e->msg);
        return CUT_EXIT_USAGE;
    }
    printf("\nwrote %s/report/%s.md and %s.json\n", dir, a->optimized ? "optimize" : "kernel",
           a->optimized ? "optimize" : "kernel");
    return CUT_EXIT_OK;
}

/* The tables on stdout and in report/, then the plots. */
static int write_report(const report_args *a, const char *in, cut_err *e)
{
    cut_report r;
    if (cut_report_load(a->outdir, in, a->baseline, &r, e) != 0) {
        cut_report_free(&r);
        fprintf(stderr, "cutune report: %s\n", e->msg);
        return CUT_EXIT_USAGE;
    }
    cut_buf b;
    cut_buf_init(&b);
    cut_report_summary_md(&b, &r);
    fwrite(b.data, 1, b.len, stdout);
    cut_buf_free(&b);
    cut_report_out out;
    int rc = cut_report_write(&r, a->outdir, a->plots, &out, e);
    cut_report_free(&r);
    if (rc != 0) {
        fprintf(stderr, "cutune report: %s\n", e->msg);
        return CUT_EXIT_FAIL;
    }
    printf("\nwrote %s/report/summary.md\n", a->outdir);
    if (a->plots && !out.gnuplot)
        printf("gnuplot not found: wrote %d scripts under %s/report; render them there with `gnuplot FILE.gp`\n",
               out.scripts, a->outdir);
    else if (a->plots)
        printf("rendered %d plot(s) to PNG and SVG under %s/report\n", out.rendered, a->outdir);
    return CUT_EXIT_OK;
}

int cut_cmd_report(int argc, char **argv)
{
    report_args a;
    cut_err e = {{0}};
    char in[4096], out[4096];
    if (parse_args(argc, argv, &a, &e) != 0) {
        fprintf(stderr, "cutune report: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    if (a.help) {
        fputs(usage, stdout);
        return CUT_EXIT_OK;
    }
    snprintf(a.command, sizeof a.command, "cutune");
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(a.command);
        snprintf(a.command + l, sizeof a.command - l, " %s", argv[i]);
    }
    if (a.gemm + a.kernel + (a.optimized != NULL) > 1) {
        fprintf(stderr, "cutune report: --gemm, --kernel and --optimized are separate reports: give one\n");
        return CUT_EXIT_USAGE;
    }
    if (a.gemm)
        return gemm_report(&a, &e);
    if (a.kernel || a.optimized)
        return kernel_report(&a, &e);
    if (cut_path_join(in, sizeof in, a.outdir, "tuningresults", &e) != 0 ||
        cut_path_join(out, sizeof out, a.outdir, "performance", &e) != 0) {
        fprintf(stderr, "cutune report: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    int n = cut_report_perf_dir(a.in ? a.in : in, a.out ? a.out : out, &e);
    if (n < 0) {
        fprintf(stderr, "cutune report: %s\n", e.msg);
        return CUT_EXIT_USAGE;
    }
    printf("wrote %d file(s) to %s\n", n, a.out ? a.out : out);
    char rec_dir[4096];
    if (cut_path_join(rec_dir, sizeof rec_dir, a.outdir, "tuningrecords", &e) == 0 && !cut_path_exists(rec_dir)) {
        /* Representatives without their trial logs: the performance files are the whole report (as before). */
        printf("no trial logs in %s: tables and plots skipped\n", rec_dir);
        return CUT_EXIT_OK;
    }
    return write_report(&a, a.in ? a.in : in, &e);
}
