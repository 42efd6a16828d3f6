/* cutune — Nsight Compute priors in the optimizer (seed 002's --ncu-every): every N builds the incumbent is profiled
 * by ncu wrapping seed 002's worker (`cutune optimize --worker <its control.json> --profile-run`: one launch), its raw
 * CSV page goes to ncu.csv beside the variant, and cutune/ncu.h turns it into region scores and move weights, written
 * to profile.json, events.jsonl and the trace. A state being expanded takes the weights of its own profile, else of
 * its nearest profiled ancestor (the baseline is profiled first, so every state has one while ncu works): a
 * descendant shares most of its code with the state profiled. The same profile's summary goes into the LLM's prompt.
 * A profile that cannot be had (ncu refused the counters, crashed, timed out, printed no row) is said once, and the
 * kernel's search goes on without further profiles. A resumed search reads the profiles back from ncu.csv. */
#include "cutune/ncu.h"
#include "pipeline/optimize_int.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opt_profile {
    int node;
    double score[CUT_RG_COUNT], weight[CUT_MV_COUNT];
    char *summary;
};

static void node_dir(const kopt *ko, int n, char *buf, size_t sz)
{
    if (n == 0)
        snprintf(buf, sz, "%s/baseline", ko->kdir);
    else
        snprintf(buf, sz, "%s/variants/%s", ko->kdir, ko->s.g.nodes[n].id);
}

static const opt_profile *profile_of(const kopt *ko, int n)
{
    for (int i = 0; i < ko->nprof; i++)
        if (ko->prof[i].node == n)
            return &ko->prof[i];
    return NULL;
}

/* The profile that stands for node n: its own, else its nearest profiled ancestor's; *up the moves between them. */
static const opt_profile *profile_for(const kopt *ko, int n, int *up)
{
    *up = 0;
    for (int i = n; i >= 0 && i < ko->s.g.nnodes; i = i ? ko->s.parent[i] : -1, ++*up) {
        const opt_profile *p = profile_of(ko, i);
        if (p)
            return p;
    }
    return NULL;
}

/* Parses dir/ncu.csv into a profile of node n (kept by ko). 0, or -1 with e. */
static int take_csv(kopt *ko, int n, const char *dir, cut_err *e)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/ncu.csv", dir);
    char *text = NULL;
    size_t len = 0;
    cut_ncu_profile p;
    if (cut_read_file(path, &text, &len, e) != 0)
        return -1;
    const int rc = cut_ncu_parse(text, len, path, ko->k->entry, &p, e);
    free(text);
    if (rc != 0)
        return -1;
    if (ko->nprof == ko->profcap) {
        ko->profcap = ko->profcap ? 2 * ko->profcap : 8;
        ko->prof = cut_xrealloc(ko->prof, sizeof *ko->prof * (size_t)ko->profcap);
    }
    opt_profile *op = &ko->prof[ko->nprof++];
    memset(op, 0, sizeof *op);
    op->node = n;
    cut_ncu_regions(&p, op->score);
    cut_ncu_move_weights(op->score, op->weight);
    cut_buf b;
    cut_buf_init(&b);
    cut_ncu_summary(&p, op->score, &b);
    cut_buf_append(&b, "", 1);
    op->summary = b.data;
    return 0;
}

/* profile.json beside ncu.csv: what the search made of it. */
static void write_profile_json(kopt *ko, const opt_profile *op, const char *dir)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "variant", ko->s.g.nodes[op->node].id);
    cJSON_AddStringToObject(j, "tool", ko->o->ncu_tool);
    cJSON_AddStringToObject(j, "dominant", cut_region_name(cut_ncu_dominant(op->score)));
    cJSON *r = cJSON_AddObjectToObject(j, "regions");
    for (int i = 0; i < CUT_RG_COUNT; i++)
        cJSON_AddNumberToObject(r, cut_region_name((cut_region)i), op->score[i]);
    cJSON *w = cJSON_AddObjectToObject(j, "move_weights");
    for (int m = 0; m < CUT_MV_COUNT; m++)
        cJSON_AddNumberToObject(w, cut_move_name((cut_move)m), op->weight[m]);
    cJSON_AddStringToObject(j, "summary", op->summary);
    char path[1400];
    cut_err e = {{0}};
    snprintf(path, sizeof path, "%s/profile.json", dir);
    if (cut_opt_write_json(path, j, &e) != 0)
        cut_opt_stash(ko, &e);
}

/* The first "==ERROR==" line of a file, else its last non-empty line: what a failed profile said. */
static void tool_said(const char *path, char *buf, size_t n)
{
    char *text = NULL;
    size_t len = 0;
    cut_err ignore;
    buf[0] = '\0';
    if (cut_read_file(path, &text, &len, &ignore) != 0)
        return;
    const char *err = strstr(text, "==ERROR==");
    const char *line = err;
    if (!line) {
        for (size_t i = 0; i < len; i++)
            if ((i == 0 || text[i - 1] == '\n') && text[i] != '\n' && text[i] != '\r')
                line = text + i;
    }
    if (line)
        snprintf(buf, n, "%.*s", (int)strcspn(line, "\r\n"), line);
    free(text);
}

/* Off for the rest of this kernel's search, said once (console, trace, events). */
static void ncu_off(kopt *ko, const char *why)
{
    ko->ncu_off = 1;
    fprintf(stderr, "cutune optimize: %s: no Nsight Compute profile (%s); going on without profile priors\n",
            ko->k->name, why);
    if (ko->trace)
        fprintf(ko->trace, "\nNo Nsight Compute profile: %s. The search goes on without profile priors.\n", why);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "ncu_off");
    cJSON_AddStringToObject(ev, "why", why);
    cut_opt_event(ko, ev);
}

/* Profiles node n: ncu around the worker's one launch of it, then the CSV read into a profile. */
static void profile_node(kopt *ko, int n)
{
    const cut_opt_opts *o = ko->o;
    char dir[1200], control[1300], out[1300], log[1300], metrics[2048], filter[200], gpu[16], timeout[32];
    node_dir(ko, n, dir, sizeof dir);
    snprintf(control, sizeof control, "%s/control.json", dir);
    snprintf(out, sizeof out, "%s/ncu.csv", dir);
    snprintf(log, sizeof log, "%s/ncu.log", dir);
    snprintf(filter, sizeof filter, "regex:^%s$", ko->k->entry);
    snprintf(gpu, sizeof gpu, "%d", o->gpus ? o->gpus[0] : 0);
    snprintf(timeout, sizeof timeout, "%g", o->ncu_timeout_s > 0 ? o->ncu_timeout_s : 300);
    cut_ncu_metrics_arg(metrics, sizeof metrics);
    char *argv[] = {(char *)o->ncu_tool, "--csv", "--page", "raw", "--clock-control", "none",
                    "--target-processes", "all", "--metrics", metrics, "-k", filter, "--launch-count", "1",
                    (char *)o->self_exe, "optimize", "--worker", control, "--profile-run", "--backend",
                    (char *)(o->backend ? o->backend : "cuda"), "--gpus", gpu, "--quiet", NULL};
    const double t0 = cut_now_s();
    cut_err e = {{0}};
    const int rc = cut_run_tool_timeout(argv, out, log, o->ncu_timeout_s > 0 ? o->ncu_timeout_s : 300, &e);
    const double secs = cut_now_s() - t0;
    char said[400], why[900];
    if (rc != 0) {
        tool_said(out, said, sizeof said);
        if (!strstr(said, "==ERROR=="))
            tool_said(log, said, sizeof said);
        if (rc < 0)
            snprintf(why, sizeof why, "%s", e.msg);
        else
            snprintf(why, sizeof why, "%s exited %d%s%s", o->ncu_tool, rc, said[0] ? ": " : "", said);
        ncu_off(ko, why);
        return;
    }
    if (take_csv(ko, n, dir, &e) != 0) {
        tool_said(out, said, sizeof said);
        snprintf(why, sizeof why, "%s%s%s", e.msg, strstr(said, "==ERROR==") ? "; ncu said " : "",
                 strstr(said, "==ERROR==") ? said : "");
        ncu_off(ko, why);
        return;
    }
    const opt_profile *op = &ko->prof[ko->nprof - 1];
    write_profile_json(ko, op, dir);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "profile");
    cJSON_AddStringToObject(ev, "variant", ko->s.g.nodes[n].id);
    cJSON_AddNumberToObject(ev, "builds", ko->builds);
    cJSON_AddNumberToObject(ev, "seconds", secs);
    cJSON_AddStringToObject(ev, "dominant", cut_region_name(cut_ncu_dominant(op->score)));
    cJSON *r = cJSON_AddObjectToObject(ev, "regions");
    for (int i = 0; i < CUT_RG_COUNT; i++)
        cJSON_AddNumberToObject(r, cut_region_name((cut_region)i), op->score[i]);
    cut_opt_event(ko, ev);
    if (ko->trace)
        fprintf(ko->trace, "\nProfiled %s after %d builds (%.1f s): %s\n", ko->s.g.nodes[n].id, ko->builds, secs,
                op->summary);
    if (!o->quiet)
        printf("  profiled %s: %s-bound (%.1f s)\n", ko->s.g.nodes[n].id,
               cut_region_name(cut_ncu_dominant(op->score)), secs);
}

/* The incumbent profiled when N builds passed since it was last considered (and it has no profile yet). */
static void maybe_profile(kopt *ko)
{
    if (ko->o->ncu_every <= 0 || ko->ncu_off || !ko->o->ncu_tool)
        return;
    if (ko->ncu_last >= 0 && ko->builds - ko->ncu_last < ko->o->ncu_every)
        return;
    ko->ncu_last = ko->builds;
    if (!profile_of(ko, ko->s.best))
        profile_node(ko, ko->s.best);
}

void cut_opt_ncu_start(kopt *ko)
{
    ko->ncu_last = -1;
    if (ko->o->ncu_every <= 0 || !ko->o->ncu_tool)
        return;
    if (ko->k->lang == CUT_KS_TRITON) { /* the profiled run is cutune's own worker, which runs CUDA variants */
        ko->ncu_off = 1;
        if (!ko->o->quiet)
            printf("  --ncu-every: not for Triton kernels yet; %s is searched without profile priors\n", ko->k->name);
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "event", "ncu_off");
        cJSON_AddStringToObject(ev, "why", "Nsight Compute priors are not taken for Triton kernels yet");
        cut_opt_event(ko, ev);
        return;
    }
    /* a resumed search: the profiles it made, read back; the next one N builds on */
    for (int n = 0; n < ko->s.g.nnodes; n++) {
        char dir[1200], path[1300];
        node_dir(ko, n, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/ncu.csv", dir);
        cut_err ignore;
        if (cut_path_exists(path) && take_csv(ko, n, dir, &ignore) == 0 && n == ko->s.best)
            ko->ncu_last = ko->builds;
    }
    maybe_profile(ko);
}

void cut_opt_ncu_round(kopt *ko) { maybe_profile(ko); }

int cut_opt_ncu_weights(const kopt *ko, int node, double *weight)
{
    int up;
    const opt_profile *p = profile_for(ko, node, &up);
    for (int m = 0; m < CUT_MV_COUNT; m++)
        weight[m] = p ? p->weight[m] : 1.0;
    return p != NULL;
}

void cut_opt_profile_context(const kopt *ko, int node, cut_buf *b)
{
    int up;
    const opt_profile *p = profile_for(ko, node, &up);
    if (!p)
        return;
    if (up == 0)
        cut_buf_printf(b, "Profile of this state: %s\n", p->summary);
    else
        cut_buf_printf(b, "Profile of %s, %d move%s above this state: %s\n", ko->s.g.nodes[p->node].id, up,
                       up == 1 ? "" : "s", p->summary);
}

void cut_opt_ncu_free(kopt *ko)
{
    for (int i = 0; i < ko->nprof; i++)
        free(ko->prof[i].summary);
    free(ko->prof);
    ko->prof = NULL;
    ko->nprof = ko->profcap = 0;
}
