/* cutune — the final measurement of a tuned task: its best few kernels re-timed with a longer timing policy,
 * interleaved with the op's baseline (cuDNN for a conv, the best vendor GEMM, a user kernel's baseline) in the same
 * worker, over a few rounds. Used at the end of `cutune tune` and by `cutune baseline`. */
#include "cutune/task.h"
#include "cutune/tune.h"
#include "cutune/util.h"
#include "cutune/measure.h"
#include "cutune/op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cut_final_timing(cut_timing *t)
{
    cut_timing_default(t);
    t->min_repeats = 20;
    t->min_total_ms = 200;
    t->max_repeats = 2000;
    t->warm = 1;
}

/* The smaller of a kept time and a new one, -1 (none) when neither is positive. */
static double keep_min(double kept, double ms) { return ms > 0 && (kept < 0 || ms < kept) ? ms : kept; }

/* Indices of the k fastest valid trials, fastest first. Returns how many (<= k). */
static int best_k(const cut_trial *tr, int n, int k, int *idx)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (tr[i].status != CUT_ST_OK || !(tr[i].median_ms > 0))
            continue;
        if (m == k && tr[i].median_ms >= tr[idx[k - 1]].median_ms)
            continue;
        int at = m < k ? m++ : k - 1;
        while (at > 0 && tr[idx[at - 1]].median_ms > tr[i].median_ms) {
            idx[at] = idx[at - 1];
            at--;
        }
        idx[at] = i;
    }
    return m;
}

/* Compiles one kernel for the final timing, for sm_90a when it needs the architecture-specific target. */
static int compile_final(const cut_kernel_src *ks, const cut_compile_opts *co, cut_compiled *bin, cut_err *e)
{
    cut_compile_opts o;
    cut_compile_opts_for_kernel(co, ks->arch_a, &o);
    return cut_compile_one(ks->src, "final", &o, bin, e);
}

int cut_final_task(cut_runner *r, const cut_compile_opts *co, const cut_task *t, const cut_trial *trials, int n,
                   int topk, int rounds, int with_baseline, cut_final *out, cut_err *e)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    out->vendor_ms = out->vendor_warm_ms = out->vendor_tf32_ms = -1;
    topk = CUT_MAX(0, CUT_MIN(topk, CUT_FINAL_MAX));
    rounds = CUT_MAX(1, rounds);
    int idx[CUT_FINAL_MAX];
    int k = best_k(trials, n, topk, idx);
    cut_kernel_src ks[CUT_FINAL_MAX];
    cut_compiled bins[CUT_FINAL_MAX];
    cut_candidate cands[CUT_FINAL_MAX];
    memset(ks, 0, sizeof ks);
    memset(bins, 0, sizeof bins);
    int rc = 0;
    for (int j = 0; j < k && rc == 0; j++) {
        out->sched[j] = trials[idx[j]].sched;
        out->search_ms[j] = trials[idx[j]].median_ms;
        out->final_ms[j] = out->warm_ms[j] = -1;
        if (t->codegen(t, &out->sched[j], &ks[j], e) != 0)
            rc = -1;
        else if (co && compile_final(&ks[j], co, &bins[j], e) != 0)
            rc = -1;
        cands[j].ks = &ks[j];
        cands[j].bin = co ? &bins[j] : NULL;
    }
    out->k = k;
    if (with_baseline && !t->baseline)
        rc = cut_err_set(e, "%s has no baseline to re-time against", t->what);
    cut_timing saved = r->timing, longer;
    cut_final_timing(&longer);
    longer.timeout_s = saved.timeout_s;
    longer.flush_l2 = saved.flush_l2;
    longer.graph = saved.graph;
    r->timing = longer;
    for (int round = 0; rc == 0 && round < rounds; round++) {
        cut_result res[CUT_FINAL_MAX];
        if (k > 0 && (t->measure ? t->measure(t, r, cands, k, res, e) : cut_runner_measure(r, cands, k, res, e)) != 0) {
            rc = -1;
            break;
        }
        for (int j = 0; j < k; j++)
            if (res[j].status == CUT_ST_OK) {
                out->final_ms[j] = keep_min(out->final_ms[j], res[j].median_ms);
                out->warm_ms[j] = keep_min(out->warm_ms[j], res[j].warm_ms);
            }
        if (!with_baseline || (t->baseline_once && round > 0))
            continue;
        cut_result vr;
        if (t->baseline(t, r, co, round, &vr, out->vendor_algo, sizeof out->vendor_algo, e) != 0) {
            rc = -1;
            break;
        }
        if (vr.status == CUT_ST_OK) {
            out->vendor_ms = keep_min(out->vendor_ms, vr.median_ms);
            out->vendor_warm_ms = keep_min(out->vendor_warm_ms, vr.warm_ms);
        }
    }
    r->timing = saved;
    for (int j = 0; j < k; j++) {
        if (out->final_ms[j] > 0 && (out->best < 0 || out->final_ms[j] < out->final_ms[out->best]))
            out->best = j;
        cut_kernel_src_free(&ks[j]);
        cut_compiled_free(&bins[j]);
    }
    return rc;
}

int cut_final_case(cut_runner *r, const cut_compile_opts *co, const cut_conv *c, const cut_record *recs, int n,
                   int topk, int rounds, int with_vendor, cut_final *out, cut_err *e)
{
    cut_task *t = cut_task_conv_new(c, 1, NULL);
    cut_trial *tr = cut_xcalloc((size_t)(n > 0 ? n : 1), sizeof *tr);
    for (int i = 0; i < n; i++) {
        tr[i].sched = recs[i].sched;
        tr[i].status = recs[i].status;
        tr[i].median_ms = recs[i].median_ms;
    }
    int rc = cut_final_task(r, co, t, tr, n, topk, rounds, with_vendor, out, e);
    free(tr);
    cut_task_free(t);
    return rc;
}

void cut_final_print(FILE *f, const cut_conv *c, int case_idx, const cut_final *fin)
{
    char name[512];
    cut_conv_case_name(c, case_idx, name, sizeof name);
    double flops = cut_conv_flops(c);
    double ours = fin->best >= 0 ? fin->final_ms[fin->best] : -1, theirs = fin->vendor_ms;
    fprintf(f, "case %d  %-58s ", case_idx, name);
    if (theirs > 0)
        fprintf(f, "cuDNN %-24s %9.4f ms  ", fin->vendor_algo, theirs);
    else
        fprintf(f, "cuDNN n/a  ");
    if (fin->k == 0)
        fprintf(f, "cutune n/a (no valid trial in the tuning log to re-time)");
    else if (ours <= 0)
        fprintf(f, "cutune n/a (none of the top %d re-timed validly)", fin->k);
    else
        fprintf(f, "cutune %9.4f ms (%.0f GFLOP/s, best of top %d re-timed)", ours, flops / ours / 1e6, fin->k);
    if (ours > 0 && theirs > 0)
        fprintf(f, "  speedup %.2fx", theirs / ours);
    const double ow = fin->best >= 0 ? fin->warm_ms[fin->best] : -1, tw = fin->vendor_warm_ms;
    if (ow > 0 && tw > 0)
        fprintf(f, "\n        warm, back to back (CUDA graph):%*s cuDNN %9.4f ms  cutune %9.4f ms  speedup %.2fx", 27, "",
                tw, ow, tw / ow);
    if (fin->vendor_tf32_ms > 0)
        fprintf(f, "\n        cuDNN with TF32 tensor cores (fp32 data): %-24s %9.4f ms", fin->vendor_tf32_algo,
                fin->vendor_tf32_ms);
    fputc('\n', f);
    fflush(f);
}

void cut_final_json(FILE *f, const cut_conv *c, int case_idx, int trials, double search_s, const cut_final *fin)
{
    double flops = cut_conv_flops(c);
    double ours = fin->best >= 0 ? fin->final_ms[fin->best] : -1, theirs = fin->vendor_ms;
    const double ow = fin->best >= 0 ? fin->warm_ms[fin->best] : -1, tw = fin->vendor_warm_ms;
    char sched[512] = "null";
    if (fin->best >= 0)
        cut_tpl_sched_json(CUT_OP_CONV2D, &fin->sched[fin->best], sched, sizeof sched);
    fprintf(f,
            "{\"case\":%d,\"shape\":[%d,%d,%d,%d,%d,%d,%d,%d,%d],\"trials\":%d,\"cutune_ms\":%.6f,"
            "\"cutune_search_ms\":%.6f,\"cudnn_ms\":%.6f,\"cudnn_algo\":\"%s\",\"speedup\":%.4f,"
            "\"cutune_gflops\":%.1f,\"cudnn_gflops\":%.1f,\"retimed\":%d,\"search_s\":%.2f,\"best_sched\":%s,"
            "\"cutune_warm_ms\":%.6f,\"cudnn_warm_ms\":%.6f,\"speedup_warm\":%.4f",
            case_idx, c->n, c->h, c->w, c->co, c->ci, c->kh, c->kw, c->stride, c->pad, trials, ours,
            fin->best >= 0 ? fin->search_ms[fin->best] : -1.0, theirs, fin->vendor_algo,
            (ours > 0 && theirs > 0) ? theirs / ours : 0, ours > 0 ? flops / ours / 1e6 : 0,
            theirs > 0 ? flops / theirs / 1e6 : 0, fin->k, search_s, sched, ow, tw, (ow > 0 && tw > 0) ? tw / ow : 0);
    /* issue 20's fields only where they say something, so that fp32 NCHW lines stay as they were */
    if (!cut_conv_is_default(c))
        fprintf(f, ",\"dtype\":\"%s\",\"layout\":\"%s\"", cut_dtype_name(c->dtype), cut_conv_layout_name(c->layout));
    /* with an epilogue, whether cuDNN's time is of its fused call or graph (true) or of the convolution, AddTensor
     * and Activation timed together (false); null when nothing was measured */
    static const char *const fused[3] = {"null", "false", "true"};
    if (c->epilogue != CUT_EPI_NONE)
        fprintf(f, ",\"epilogue\":\"%s\",\"cudnn_fused\":%s", cut_conv_epilogue_name(c->epilogue),
                fused[theirs > 0 ? cut_cudnn_algo_fused(fin->vendor_algo) + 1 : 0]);
    if (fin->vendor_tf32_ms > 0)
        fprintf(f, ",\"cudnn_tf32_ms\":%.6f,\"cudnn_tf32_algo\":\"%s\"", fin->vendor_tf32_ms, fin->vendor_tf32_algo);
    if (fin->vendor_tf32_ms > 0 && c->epilogue != CUT_EPI_NONE)
        fprintf(f, ",\"cudnn_tf32_fused\":%s", fused[cut_cudnn_algo_fused(fin->vendor_tf32_algo) + 1]);
    fputs("}\n", f);
    fflush(f);
}

void cut_final_task_print(FILE *f, const cut_task *t, const cut_final *fin)
{
    double ours = fin->best >= 0 ? fin->final_ms[fin->best] : -1, theirs = fin->vendor_ms;
    fprintf(f, "%s: ", t->what);
    if (theirs > 0)
        fprintf(f, "%s %.4f ms, ", fin->vendor_algo, theirs);
    if (fin->k == 0)
        fprintf(f, "cutune n/a (no valid trial in the tuning log to re-time)");
    else if (ours <= 0)
        fprintf(f, "cutune n/a (none of the top %d re-timed validly)", fin->k);
    else
        fprintf(f, "cutune %.4f ms (best of top %d re-timed)", ours, fin->k);
    if (ours > 0 && theirs > 0)
        fprintf(f, ", speedup %.2fx", theirs / ours);
    const double ow = fin->best >= 0 ? fin->warm_ms[fin->best] : -1, tw = fin->vendor_warm_ms;
    if (ow > 0 && tw > 0)
        fprintf(f, "; warm, back to back (CUDA graph): %.4f ms against %.4f ms, speedup %.2fx", ow, tw, tw / ow);
    fputc('\n', f);
    fflush(f);
}

void cut_final_task_json(FILE *f, const cut_task *t, int trials, const cut_final *fin)
{
    double ours = fin->best >= 0 ? fin->final_ms[fin->best] : -1, theirs = fin->vendor_ms;
    char sched[1024] = "null", gf[32] = "null", gbs[32] = "null", ms[32] = "null", sms[32] = "null";
    char base_ms[32] = "null", base[160] = "null", speedup[32] = "null", wms[32] = "null", bwms[32] = "null";
    char wsp[32] = "null";
    const double ow = fin->best >= 0 ? fin->warm_ms[fin->best] : -1, tw = fin->vendor_warm_ms;
    if (ow > 0)
        snprintf(wms, sizeof wms, "%.6f", ow);
    if (tw > 0)
        snprintf(bwms, sizeof bwms, "%.6f", tw);
    if (ow > 0 && tw > 0)
        snprintf(wsp, sizeof wsp, "%.4f", tw / ow);
    if (fin->best >= 0 && t->sched_json && t->sched_json(t, &fin->sched[fin->best], sched, sizeof sched) < 0)
        snprintf(sched, sizeof sched, "null");
    if (ours > 0) { /* what was not measured is null, as in the record lines */
        snprintf(ms, sizeof ms, "%.6f", ours);
        snprintf(sms, sizeof sms, "%.6f", fin->search_ms[fin->best]);
        if (t->flops > 0)
            snprintf(gf, sizeof gf, "%.1f", t->flops / ours / 1e6);
        if (t->bytes > 0)
            snprintf(gbs, sizeof gbs, "%.1f", t->bytes / ours / 1e6);
    }
    if (theirs > 0) {
        snprintf(base_ms, sizeof base_ms, "%.6f", theirs);
        snprintf(base, sizeof base, "\"%.150s\"", fin->vendor_algo);
        if (ours > 0)
            snprintf(speedup, sizeof speedup, "%.4f", theirs / ours);
    }
    fprintf(f,
            "{\"op\":\"%s\",\"workload\":\"%s\",\"trials\":%d,\"cutune_ms\":%s,\"cutune_search_ms\":%s,"
            "\"baseline_ms\":%s,\"baseline\":%s,\"speedup\":%s,\"cutune_gflops\":%s,\"bytes\":%.0f,"
            "\"cutune_gbs\":%s,\"retimed\":%d,\"best_sched\":%s,\"cutune_warm_ms\":%s,\"baseline_warm_ms\":%s,"
            "\"speedup_warm\":%s}\n",
            t->op, t->name, trials, ms, sms, base_ms, base, speedup, gf, t->bytes, gbs, fin->k, sched, wms, bwms, wsp);
    fflush(f);
}
