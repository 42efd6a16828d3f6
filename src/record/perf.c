/* cutune — performance report (seed 000): for each tuningresults/ JSON file, performance/<same name> with one
 * integer GFLOP/s per line.
 *
 * GFLOP/s = 2*N*OH*OW*CO*CI*KH*KW / (median_ms * 1e6), recomputed from each record's shape and median time and
 * rounded to the nearest integer, in file order. Records that were not measured (failed trials) have no
 * performance and are skipped; sampled results never contain them. */
#include "cutune/record.h"

#include <math.h>
#include <stdlib.h>

/* Builds the report text of one results file into out (caller frees). */
static int perf_file(const char *path, cut_buf *out, cut_err *e)
{
    cut_record *recs;
    int n, partial;
    if (cut_records_load(path, &recs, &n, &partial, e) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        const cut_record *r = &recs[i];
        if (r->status != CUT_ST_OK || !isfinite(r->median_ms) || !(r->median_ms > 0))
            continue;
        cut_buf_printf(out, "%lld\n", llround(cut_conv_gflops(&r->conv, r->median_ms)));
    }
    free(recs);
    return 0;
}

int cut_report_perf_dir(const char *results_dir, const char *perf_dir, cut_err *e)
{
    char **names;
    int n;
    if (cut_records_dir_list(results_dir, ".json", &names, &n, e) != 0)
        return -1;
    if (n > 0 && cut_mkdirs(perf_dir, e) != 0) {
        cut_records_names_free(names, n);
        return -1;
    }
    int written = 0;
    for (int i = 0; i < n; i++) {
        char in_path[4096], out_path[4096];
        cut_buf out;
        cut_buf_init(&out);
        int rc = cut_path_join(in_path, sizeof in_path, results_dir, names[i], e);
        if (rc == 0)
            rc = cut_path_join(out_path, sizeof out_path, perf_dir, names[i], e);
        if (rc == 0)
            rc = perf_file(in_path, &out, e);
        if (rc == 0)
            rc = cut_write_file_atomic(out_path, out.data ? out.data : "", out.len, e);
        cut_buf_free(&out);
        if (rc != 0) {
            cut_records_names_free(names, n);
            return -1;
        }
        written++;
    }
    cut_records_names_free(names, n);
    return written;
}
