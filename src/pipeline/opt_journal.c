/* cutune — the optimizer's journal: search_state.json (saved, loaded, reconciled with variants/ on --resume,
 * checked for the fuzzer), events.jsonl, trace.md, the best link and <outdir>/global_tactic_graph.json. */
#include "record/json.h"
#include "pipeline/optimize_int.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ---- */

int cut_opt_write_json(const char *path, cJSON *j, cut_err *e)
{
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text)
        return cut_err_set(e, "cannot serialise %s", path);
    int rc = cut_write_file_atomic(path, text, strlen(text), e);
    free(text);
    return rc;
}


int cut_opt_write_text(const char *dir, const char *name, const char *text, cut_err *e)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return cut_write_file_atomic(path, text ? text : "", text ? strlen(text) : 0, e);
}

void cut_opt_hex64(uint64_t v, char *buf) { snprintf(buf, 17, "%016" PRIx64, v); }

static uint64_t parse_hex(const cJSON *j)
{
    const char *s = cJSON_GetStringValue(j);
    return s ? strtoull(s, NULL, 16) : 0;
}

static double num(const cJSON *o, const char *key, double dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

/* An integer field; a value outside int (a damaged file: 1e300, inf) reads as dflt, never as an overflowing cast. */
static int inum(const cJSON *o, const char *key, int dflt)
{
    const double v = num(o, key, dflt);
    return v >= INT_MIN && v <= INT_MAX ? (int)v : dflt;
}

static const char *str(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s ? s : "";
}

void cut_opt_event(kopt *ko, cJSON *j)
{
    cJSON_AddNumberToObject(j, "t", (double)time(NULL));
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (text && ko->events) {
        fprintf(ko->events, "%s\n", text);
        fflush(ko->events);
        fsync(fileno(ko->events));
    }
    free(text);
}

/* ---- the global tactic graph (moves and transitions over every kernel) ---- */

static void global_path(const kopt *ko, char *buf, size_t n)
{
    snprintf(buf, n, "%s/global_tactic_graph.json", ko->o->outdir);
}

/* Loads the per-key history of every kernel from the global tactic graph (priors for this kernel). */
void cut_opt_load_global(kopt *ko)
{
    char path[1100];
    global_path(ko, path, sizeof path);
    cut_err e;
    if (!cut_path_exists(path))
        return;
    cJSON *j = cut_rec_read_json_file(path, &e);
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(j, "keys"), *x;
    cJSON_ArrayForEach(x, keys) {
        const int m = cut_move_parse(str(x, "move"));
        cut_mcgs_hist *h = m >= 0 ? cut_mcgs_hist_get(&ko->s, (cut_move)m, str(x, "key")) : NULL;
        if (h) {
            h->n += inum(x, "n", 0);
            h->sum += num(x, "gain_sum", 0);
        }
    }
    cJSON_Delete(j);
}

/* Adds one variant's outcome to the global tactic graph: per move, per key and per transition prev -> move. */
void cut_opt_update_global(kopt *ko, int prev_move, cut_move m, const char *label, double gain, int ok, cut_err *e)
{
    char path[1100], key[96];
    global_path(ko, path, sizeof path);
    cut_mcgs_hist_key(label, key, sizeof key);
    cJSON *j = cut_path_exists(path) ? cut_rec_read_json_file(path, e) : NULL;
    if (!j) {
        j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "format", 1);
        cJSON_AddItemToObject(j, "moves", cJSON_CreateObject());
        cJSON_AddItemToObject(j, "transitions", cJSON_CreateObject());
        cJSON_AddItemToObject(j, "keys", cJSON_CreateArray());
        cJSON_AddItemToObject(j, "kernels", cJSON_CreateArray());
    }
    cJSON *kernels = cJSON_GetObjectItemCaseSensitive(j, "kernels"), *x;
    int known = 0;
    cJSON_ArrayForEach(x, kernels) known |= strcmp(cJSON_GetStringValue(x) ? x->valuestring : "", ko->k->name) == 0;
    if (!known && cJSON_IsArray(kernels))
        cJSON_AddItemToArray(kernels, cJSON_CreateString(ko->k->name));
    char tname[96];
    snprintf(tname, sizeof tname, "%s -> %s", prev_move >= 0 ? cut_move_name((cut_move)prev_move) : "baseline",
             cut_move_name(m));
    const char *groups[2] = {"moves", "transitions"};
    const char *names[2] = {cut_move_name(m), tname};
    for (int gi = 0; gi < 2; gi++) {
        cJSON *grp = cJSON_GetObjectItemCaseSensitive(j, groups[gi]);
        if (!cJSON_IsObject(grp))
            continue;
        cJSON *s = cJSON_GetObjectItemCaseSensitive(grp, names[gi]);
        if (!s) {
            s = cJSON_AddObjectToObject(grp, names[gi]);
            cJSON_AddNumberToObject(s, "attempts", 0);
            cJSON_AddNumberToObject(s, "ok", 0);
            cJSON_AddNumberToObject(s, "improved", 0);
            cJSON_AddNumberToObject(s, "gain_sum", 0);
            cJSON_AddNumberToObject(s, "best_gain", -1);
        }
        const double best = num(s, "best_gain", -1);
        cJSON_ReplaceItemInObject(s, "attempts", cJSON_CreateNumber(num(s, "attempts", 0) + 1));
        cJSON_ReplaceItemInObject(s, "ok", cJSON_CreateNumber(num(s, "ok", 0) + ok));
        cJSON_ReplaceItemInObject(s, "improved", cJSON_CreateNumber(num(s, "improved", 0) + (ok && gain > 0)));
        cJSON_ReplaceItemInObject(s, "gain_sum", cJSON_CreateNumber(num(s, "gain_sum", 0) + gain));
        cJSON_ReplaceItemInObject(s, "best_gain", cJSON_CreateNumber(gain > best ? gain : best));
    }
    cJSON *keys = cJSON_GetObjectItemCaseSensitive(j, "keys"), *hit = NULL;
    cJSON_ArrayForEach(x, keys) if (strcmp(str(x, "key"), key) == 0 && strcmp(str(x, "move"), cut_move_name(m)) == 0)
        hit = x;
    if (!hit && cJSON_IsArray(keys)) {
        hit = cJSON_CreateObject();
        cJSON_AddStringToObject(hit, "move", cut_move_name(m));
        cJSON_AddStringToObject(hit, "key", key);
        cJSON_AddNumberToObject(hit, "n", 0);
        cJSON_AddNumberToObject(hit, "gain_sum", 0);
        cJSON_AddItemToArray(keys, hit);
    }
    if (hit) {
        cJSON_ReplaceItemInObject(hit, "n", cJSON_CreateNumber(num(hit, "n", 0) + 1));
        cJSON_ReplaceItemInObject(hit, "gain_sum", cJSON_CreateNumber(num(hit, "gain_sum", 0) + gain));
    }
    if (cut_opt_write_json(path, j, e) != 0 && !ko->o->quiet)
        fprintf(stderr, "cutune optimize: warning: %s\n", e->msg);
}

/* ---- the best link and the logs ---- */

int cut_opt_update_best_link(kopt *ko, cut_err *e)
{
    char link[1200], tmp[1200], target[64];
    snprintf(link, sizeof link, "%s/best", ko->kdir);
    snprintf(tmp, sizeof tmp, "%s/.best.tmp", ko->kdir);
    if (ko->s.best == 0)
        snprintf(target, sizeof target, "baseline");
    else
        snprintf(target, sizeof target, "variants/%s", ko->s.g.nodes[ko->s.best].id);
    unlink(tmp);
    if (symlink(target, tmp) != 0 || rename(tmp, link) != 0)
        return cut_err_set(e, "cannot point %s at %s: %s", link, target, strerror(errno));
    return 0;
}

int cut_opt_open_logs(kopt *ko, int fresh, cut_err *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/events.jsonl", ko->kdir);
    ko->events = fopen(path, "a");
    snprintf(path, sizeof path, "%s/trace.md", ko->kdir);
    ko->trace = fopen(path, "a");
    if (!ko->events || !ko->trace)
        return cut_err_set(e, "cannot open %s/events.jsonl or trace.md: %s", ko->kdir, strerror(errno));
    if (fresh)
        fprintf(ko->trace, "# %s: MCGS trace\n\nEach line: variant, the state it came from, move and what it did, "
                           "outcome.\n\n", ko->k->name);
    else
        fprintf(ko->trace, "\n*resumed*\n\n");
    return 0;
}

/* ---- the state file ---- */

int cut_opt_save_state(kopt *ko, cut_err *e)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "format", STATE_FORMAT);
    cJSON_AddStringToObject(s, "kernel", ko->k->name);
    cJSON_AddNumberToObject(s, "baseline_ms", ko->s.baseline_ms);
    cJSON_AddNumberToObject(s, "builds", ko->builds);
    cJSON_AddNumberToObject(s, "builds_to_best", ko->builds_to_best);
    cJSON_AddNumberToObject(s, "next_id", ko->s.next_id);
    cJSON_AddNumberToObject(s, "measured", ko->s.measured);
    cJSON_AddNumberToObject(s, "failed", ko->s.failed);
    cJSON_AddNumberToObject(s, "transpositions", ko->s.transpositions);
    cJSON_AddStringToObject(s, "best", ko->s.g.nodes[ko->s.best].id);
    cJSON_AddNumberToObject(s, "noise_applied", ko->s.g.noise_applied);
    cJSON_AddNumberToObject(s, "prune_threshold", ko->s.threshold);
    cJSON *rng = cJSON_AddArrayToObject(s, "rng");
    for (int i = 0; i < 4; i++) {
        char hx[17];
        cut_opt_hex64(ko->s.g.rng.s[i], hx);
        cJSON_AddItemToArray(rng, cJSON_CreateString(hx));
    }
    /* the history of moves as this search has it: the global tactic graph it started from, its variants and the
     * transpositions it linked (the global file records variants only, and other searches' later ones) */
    cJSON *hist = cJSON_AddArrayToObject(s, "history");
    for (int i = 0; i < ko->s.nhist; i++) {
        const cut_mcgs_hist *h = &ko->s.hist[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "move", cut_move_name(h->move));
        cJSON_AddStringToObject(o, "key", h->key);
        cJSON_AddNumberToObject(o, "n", h->n);
        cJSON_AddNumberToObject(o, "sum", h->sum);
        cJSON_AddItemToArray(hist, o);
    }
    cJSON *nodes = cJSON_AddArrayToObject(s, "nodes");
    for (int i = 0; i < ko->s.g.nnodes; i++) {
        const cut_node *n = &ko->s.g.nodes[i];
        cJSON *o = cJSON_CreateObject();
        char hx[17];
        cJSON_AddStringToObject(o, "id", n->id);
        cJSON_AddStringToObject(o, "status", n->status == CUT_NODE_OK ? "ok" : "failed");
        cJSON_AddStringToObject(o, "parent", i ? ko->s.g.nodes[ko->s.parent[i]].id : "");
        cJSON_AddStringToObject(o, "via", ko->s.via[i]);
        cJSON_AddStringToObject(o, "via_move", ko->s.via_move[i] >= 0 ? cut_move_name((cut_move)ko->s.via_move[i]) : "");
        cut_opt_hex64(n->key, hx);
        cJSON_AddStringToObject(o, "key", hx);
        cut_opt_hex64(n->ptx_hash, hx);
        cJSON_AddStringToObject(o, "ptx_hash", hx);
        cJSON_AddNumberToObject(o, "ms", n->ms);
        cJSON_AddNumberToObject(o, "speedup", n->speedup);
        cJSON_AddNumberToObject(o, "visits", n->visits);
        cJSON_AddNumberToObject(o, "value_sum", n->value_sum);
        cJSON_AddNumberToObject(o, "depth", n->depth);
        cJSON_AddBoolToObject(o, "edges_ready", n->edges_ready);
        cJSON *edges = cJSON_AddArrayToObject(o, "edges");
        for (int k = 0; k < n->nedges; k++) {
            const cut_edge *ed = &n->edges[k];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "move", cut_move_name(ed->move));
            cJSON_AddStringToObject(x, "label", ed->label);
            cJSON_AddNumberToObject(x, "prior", ed->prior);
            cJSON_AddNumberToObject(x, "pred_gain", ed->pred_gain);
            cJSON_AddNumberToObject(x, "rule_gain", ed->rule_gain);
            char hk[17];
            cut_opt_hex64(ed->key, hk);
            cJSON_AddStringToObject(x, "key", hk);
            cJSON_AddBoolToObject(x, "pruned", ed->pruned);
            cJSON_AddNumberToObject(x, "visits", ed->visits);
            if (ed->child >= 0)
                cJSON_AddStringToObject(x, "child", ko->s.g.nodes[ed->child].id);
            else
                cJSON_AddNullToObject(x, "child");
            /* an edge not built yet keeps its diff (a pruned one too: relaxing the threshold reopens it): a
             * generator asked again after a resume need not propose it again (an LLM's prompt carries the
             * search's context, which has moved on) */
            if (ed->child < 0 && ed->diff)
                cJSON_AddStringToObject(x, "diff", ed->diff);
            cJSON_AddItemToArray(edges, x);
        }
        cJSON_AddItemToArray(nodes, o);
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/search_state.json", ko->kdir);
    return cut_opt_write_json(path, s, e);
}

static char *read_src(const kopt *ko, const char *id, cut_err *e)
{
    if (ko->no_disk) /* cut_opt_state_check: the graph only */
        return cut_xstrdup("");
    char path[1400];
    if (strcmp(id, "baseline") == 0)
        snprintf(path, sizeof path, "%s/baseline/%s", ko->kdir, cut_opt_src_name(ko->k));
    else
        snprintf(path, sizeof path, "%s/variants/%s/%s", ko->kdir, id, cut_opt_src_name(ko->k));
    char *text = NULL;
    size_t len = 0;
    return cut_read_file(path, &text, &len, e) == 0 ? text : NULL;
}

static int state_from_json(kopt *ko, const cJSON *s, const char *path, cut_err *e);

int cut_opt_load_state(kopt *ko, cut_err *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/search_state.json", ko->kdir);
    cJSON *s = cut_rec_read_json_file(path, e);
    if (!s)
        return -1;
    const int rc = state_from_json(ko, s, path, e);
    cJSON_Delete(s);
    return rc;
}

/* The graph, counters and rng of a parsed state file (path names it in messages). */
static int state_from_json(kopt *ko, const cJSON *s, const char *path, cut_err *e)
{
    int rc = -1;
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(s, "nodes"), *o;
    if (inum(s, "format", 0) != STATE_FORMAT || !cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) < 1) {
        cut_err_set(e, "%s: not a search state of this version", path);
        goto out;
    }
    ko->s.baseline_ms = num(s, "baseline_ms", -1);
    ko->builds = inum(s, "builds", 0);
    ko->builds_to_best = inum(s, "builds_to_best", 0); /* 0 in an older state file */
    ko->s.next_id = inum(s, "next_id", 0);
    ko->s.measured = inum(s, "measured", 0);
    ko->s.failed = inum(s, "failed", 0);
    ko->s.transpositions = inum(s, "transpositions", 0);
    ko->s.g.noise_applied = inum(s, "noise_applied", 0);
    ko->s.threshold = num(s, "prune_threshold", ko->s.threshold);
    const cJSON *hist = cJSON_GetObjectItemCaseSensitive(s, "history"), *h;
    if (cJSON_IsArray(hist)) { /* the search's own history replaces what the global tactic graph holds now */
        ko->s.nhist = 0;
        cJSON_ArrayForEach(h, hist) {
            const int m = cut_move_parse(str(h, "move"));
            cut_mcgs_hist *x = m >= 0 ? cut_mcgs_hist_get(&ko->s, (cut_move)m, str(h, "key")) : NULL;
            if (x) {
                x->n = inum(h, "n", 0);
                x->sum = num(h, "sum", 0);
            }
        }
    }
    const cJSON *rng = cJSON_GetObjectItemCaseSensitive(s, "rng");
    uint64_t any = 0;
    for (int i = 0; i < 4 && cJSON_GetArraySize(rng) == 4; i++)
        any |= ko->s.g.rng.s[i] = parse_hex(cJSON_GetArrayItem(rng, i));
    if (!any) /* missing or all zero: xoshiro would be stuck at zero */
        cut_rng_seed(&ko->s.g.rng, ko->o->seed);
    cJSON_ArrayForEach(o, nodes) {
        char *src = read_src(ko, str(o, "id"), e);
        if (!src)
            goto out;
        const int n = cut_mcgs_search_add(&ko->s, str(o, "id"), src, 0, cut_move_parse(str(o, "via_move")), str(o, "via"));
        cut_node *nd = &ko->s.g.nodes[n];
        nd->status = strcmp(str(o, "status"), "ok") == 0 ? CUT_NODE_OK : CUT_NODE_FAILED;
        nd->key = parse_hex(cJSON_GetObjectItemCaseSensitive(o, "key"));
        nd->ptx_hash = parse_hex(cJSON_GetObjectItemCaseSensitive(o, "ptx_hash"));
        nd->ms = num(o, "ms", -1);
        nd->speedup = num(o, "speedup", -1);
        nd->visits = inum(o, "visits", 0);
        nd->value_sum = num(o, "value_sum", 0);
        nd->depth = inum(o, "depth", 0);
    }
    int i = 0;
    cJSON_ArrayForEach(o, nodes) {
        cut_node *nd = &ko->s.g.nodes[i];
        const int p = cut_mcgs_find_id(&ko->s.g, str(o, "parent"));
        ko->s.parent[i] = p >= 0 ? p : 0;
        const cJSON *edges = cJSON_GetObjectItemCaseSensitive(o, "edges"), *x;
        nd->edges_ready = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "edges_ready"));
        nd->nedges = cJSON_GetArraySize(edges);
        nd->edges = cut_xcalloc((size_t)(nd->nedges ? nd->nedges : 1), sizeof *nd->edges);
        int k = 0;
        cJSON_ArrayForEach(x, edges) {
            cut_edge *ed = &nd->edges[k++];
            const int m = cut_move_parse(str(x, "move"));
            ed->move = m >= 0 ? (cut_move)m : CUT_MV_BLOCK_SIZES;
            snprintf(ed->label, sizeof ed->label, "%s", str(x, "label"));
            ed->prior = num(x, "prior", 0);
            ed->pred_gain = num(x, "pred_gain", 0);
            ed->rule_gain = num(x, "rule_gain", ed->pred_gain);
            ed->key = parse_hex(cJSON_GetObjectItemCaseSensitive(x, "key"));
            ed->pruned = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "pruned"));
            ed->visits = inum(x, "visits", 0);
            const char *cid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "child"));
            ed->child = cid ? cut_mcgs_find_id(&ko->s.g, cid) : -1;
            const char *diff = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "diff"));
            if (ed->child < 0 && diff) /* absent in an older state file: the build makes it again (edge_diff) */
                ed->diff = cut_xstrdup(diff);
        }
        i++;
    }
    ko->s.best = cut_mcgs_find_id(&ko->s.g, str(s, "best"));
    if (ko->s.best < 0)
        ko->s.best = 0;
    rc = 0;
out:
    return rc;
}

/* Takes in finished variants the state file does not know (killed after result.json, before the state was saved)
 * and removes unfinished variant folders. */
int cut_opt_commit_round(kopt *ko, cut_err *e)
{
    for (int i = 0; i < ko->nvj; i++) {
        char from[1400], to[1400];
        snprintf(from, sizeof from, "%s/" CUT_OPT_PENDING, ko->vj[i].dir);
        snprintf(to, sizeof to, "%s/result.json", ko->vj[i].dir);
        if (cut_path_exists(from) && rename(from, to) != 0)
            return cut_err_set(e, "cannot commit %s: %s", from, strerror(errno));
    }
    return 0;
}

int cut_opt_reconcile(kopt *ko, cut_err *e)
{
    char vdir[1200];
    snprintf(vdir, sizeof vdir, "%s/variants", ko->kdir);
    DIR *d = opendir(vdir);
    if (!d)
        return 0;
    struct dirent *de;
    char names[1024][32];
    int n = 0;
    while ((de = readdir(d)) && n < 1024)
        if (de->d_name[0] == 'v' && strlen(de->d_name) < 32)
            snprintf(names[n++], 32, "%s", de->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    int taken = 0, dropped = 0;
    for (int i = 0; i < n; i++) {
        const int id_num = atoi(names[i] + 1);
        char dir[1300], rpath[1400], cpath[1400], ppath[1400];
        snprintf(dir, sizeof dir, "%s/%s", vdir, names[i]);
        snprintf(ppath, sizeof ppath, "%s/" CUT_OPT_PENDING, dir);
        if (cut_mcgs_find_id(&ko->s.g, names[i]) >= 0) {
            ko->s.next_id = id_num > ko->s.next_id ? id_num : ko->s.next_id;
            snprintf(rpath, sizeof rpath, "%s/result.json", dir);
            if (!cut_path_exists(rpath) && cut_path_exists(ppath) && rename(ppath, rpath) != 0)
                return cut_err_set(e, "cannot commit %s: %s", ppath, strerror(errno));
            continue;
        }
        snprintf(rpath, sizeof rpath, "%s/result.json", dir);
        snprintf(cpath, sizeof cpath, "%s/control.json", dir);
        const int committed = cut_path_exists(rpath), pending = !committed && cut_path_exists(ppath);
        cJSON *r = committed || pending ? cut_rec_read_json_file(committed ? rpath : ppath, e) : NULL;
        cJSON *c = r ? cut_rec_read_json_file(cpath, e) : NULL;
        int known_transposition = 0;
        for (int k = 0; r && k < ko->s.g.nnodes; k++) /* a transposition leaves no node: look for its edge */
            for (int x = 0; x < ko->s.g.nodes[k].nedges; x++)
                known_transposition |= strcmp(str(c, "parent"), ko->s.g.nodes[k].id) == 0 &&
                                       strcmp(ko->s.g.nodes[k].edges[x].label, str(c, "label")) == 0 &&
                                       ko->s.g.nodes[k].edges[x].child >= 0;
        if (pending && known_transposition) { /* a committed round's transposition: its rename was interrupted */
            if (rename(ppath, rpath) != 0) {
                cJSON_Delete(r);
                cJSON_Delete(c);
                return cut_err_set(e, "cannot commit %s: %s", ppath, strerror(errno));
            }
        } else if (pending) { /* the interrupted round's: the resumed search makes it again */
            cJSON_Delete(r);
            cJSON_Delete(c);
            r = c = NULL;
        }
        if (!r || !c) {
            cut_err re;
            if (cut_remove_tree(dir, NULL, &re) != 0 && !ko->o->quiet)
                fprintf(stderr, "cutune optimize: warning: unfinished variant %s: %s\n", names[i], re.msg);
            dropped++;
        } else if (known_transposition) {
            ko->s.next_id = id_num > ko->s.next_id ? id_num : ko->s.next_id;
        } else {
            ko->s.next_id = id_num > ko->s.next_id ? id_num : ko->s.next_id;
            cut_mcgs_outcome oc = {0};
            snprintf(oc.id, sizeof oc.id, "%s", names[i]);
            oc.parent = cut_mcgs_find_id(&ko->s.g, str(c, "parent"));
            snprintf(oc.label, sizeof oc.label, "%s", str(c, "label"));
            oc.ok = strcmp(str(r, "status"), "ok") == 0;
            oc.transposition = strcmp(str(r, "status"), "transposition") == 0;
            oc.ms = num(r, "median_ms", -1);
            oc.ticket = -1;
            oc.key = parse_hex(cJSON_GetObjectItemCaseSensitive(r, "state_key"));
            oc.ptx = parse_hex(cJSON_GetObjectItemCaseSensitive(r, "ptx_hash"));
            oc.same_as = cut_mcgs_find_id(&ko->s.g, str(r, "same_as"));
            const cJSON *p, *path = cJSON_GetObjectItemCaseSensitive(c, "path");
            cJSON_ArrayForEach(p, path) if (oc.plen < CUT_MCGS_MAX_PATH) oc.path[oc.plen++] =
                cut_mcgs_find_id(&ko->s.g, cJSON_GetStringValue(p) ? p->valuestring : "");
            int bad = oc.parent < 0;
            for (int k = 0; k < oc.plen; k++)
                bad |= oc.path[k] < 0;
            if (!bad && !ko->s.g.nodes[oc.parent].edges_ready && cut_mcgs_expand(&ko->s, oc.parent, e) != 0)
                bad = 1;
            if (!bad) {
                oc.src = read_src(ko, names[i], e);
                bad = cut_mcgs_apply(&ko->s, &oc, 0, e) != 0; /* takes oc.src */
            }
            if (bad && !ko->o->quiet)
                fprintf(stderr, "cutune optimize: warning: variant %s could not be taken into the graph: %s\n",
                        names[i], e->msg);
            taken += !bad;
            ko->builds += !bad && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "compiled"));
        }
        cJSON_Delete(r);
        cJSON_Delete(c);
    }
    if ((taken || dropped) && !ko->o->quiet)
        printf("  resume: %d finished variant(s) taken in from disk, %d unfinished removed\n", taken, dropped);
    return 0;
}

int cut_opt_state_check(const char *json, size_t len, cut_err *e)
{
    cut_opt_opts o;
    cut_opt_opts_default(&o);
    kopt ko;
    memset(&ko, 0, sizeof ko);
    ko.o = &o;
    ko.no_disk = 1;
    cut_mcgs_search_init(&ko.s, NULL, o.seed, o.min_pred_gain, NULL, NULL);
    cJSON *s = cJSON_ParseWithLength(json, len);
    int rc = s ? state_from_json(&ko, s, "search_state.json", e) : cut_err_set(e, "search_state.json: not valid JSON");
    cJSON_Delete(s);
    for (int i = 0; rc == 0 && i < ko.s.g.nnodes; i++) {
        const cut_node *n = &ko.s.g.nodes[i];
        for (int k = 0; k < n->nedges; k++)
            if (n->edges[k].child < -1 || n->edges[k].child >= ko.s.g.nnodes || !memchr(n->edges[k].label, 0, 160))
                rc = cut_err_set(e, "search_state.json: node %s edge %d is inconsistent", n->id, k);
        if (ko.s.parent[i] < 0 || ko.s.parent[i] >= ko.s.g.nnodes)
            rc = cut_err_set(e, "search_state.json: node %s has no parent", n->id);
    }
    if (rc == 0 && (ko.s.best < 0 || ko.s.best >= ko.s.g.nnodes))
        rc = cut_err_set(e, "search_state.json: the best node is not in the graph");
    cut_opt_kopt_free(&ko);
    return rc;
}

/* ---- what the search does, as the journal keeps it ---- */

/* A variant taken into the graph: the global tactic graph, the trace, the event and the console line. */
static void note_variant(kopt *ko, const cut_mcgs_search *s, const cut_mcgs_note *n, cut_err *e)
{
    const vjob *j = cut_opt_vjob(ko, n->ticket);
    if (!j)
        return;
    const cut_node *pn = &s->g.nodes[n->parent];
    const cut_edge *ed = &pn->edges[n->edge];
    const int ok = strcmp(j->status_name, "ok") == 0;
    const cut_node *c = &s->g.nodes[n->node];
    const double speedup = c->status == CUT_NODE_OK ? c->speedup : 0;
    cut_opt_update_global(ko, s->via_move[n->parent], ed->move, ed->label, n->gain, c->status == CUT_NODE_OK, e);
    if (ko->trace) {
        fprintf(ko->trace, "- **%s** from %s, %s: %s — ", j->id, pn->id, cut_move_name(ed->move), ed->label);
        if (ok)
            fprintf(ko->trace, "%.4f ms, %.2fx the baseline%s%s%s\n", j->ms, speedup,
                    s->best >= 0 && strcmp(s->g.nodes[s->best].id, j->id) == 0 ? " (new best)" : "",
                    j->error[0] ? "; " : "", j->error); /* passed with a note: not checked at check_sizes */
        else
            fprintf(ko->trace, "%s: %s\n", j->status_name, j->error);
        fflush(ko->trace);
    }
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "variant");
    cJSON_AddStringToObject(ev, "id", j->id);
    cJSON_AddStringToObject(ev, "parent", pn->id);
    cJSON_AddStringToObject(ev, "move", cut_move_name(ed->move));
    cJSON_AddStringToObject(ev, "label", ed->label);
    cJSON_AddStringToObject(ev, "status", j->status_name);
    if (ok)
        cJSON_AddNumberToObject(ev, "ms", j->ms);
    if (ok && j->error[0])
        cJSON_AddStringToObject(ev, "note", j->error);
    cJSON_AddNumberToObject(ev, "speedup", speedup);
    cJSON_AddStringToObject(ev, "node", c->id);
    cJSON_AddStringToObject(ev, "best", s->g.nodes[s->best].id);
    cut_opt_event(ko, ev);
    if (!ko->o->quiet) {
        char what[96];
        if (ok)
            snprintf(what, sizeof what, "%.4f ms  %.2fx%s", j->ms, speedup,
                     j->error[0] ? "  (not checked at check_sizes)" : "");
        else
            snprintf(what, sizeof what, "%.70s", j->error);
        printf("  %-6s %-24s %-34.34s %-14s %s\n", j->id, cut_move_name(ed->move), ed->label, j->status_name, what);
        fflush(stdout);
    }
}

/* An edge linked to a known state while selecting: the event and the trace. */
static void note_transposition(kopt *ko, const cut_mcgs_search *s, const cut_mcgs_note *n)
{
    const cut_node *pn = &s->g.nodes[n->parent];
    const cut_edge *ed = &pn->edges[n->edge];
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "transposition");
    cJSON_AddStringToObject(ev, "parent", pn->id);
    cJSON_AddStringToObject(ev, "move", cut_move_name(ed->move));
    cJSON_AddStringToObject(ev, "label", ed->label);
    cJSON_AddStringToObject(ev, "node", s->g.nodes[n->node].id);
    cut_opt_event(ko, ev);
    if (ko->trace)
        fprintf(ko->trace, "- %s, %s: %s — the state of %s (transposition, nothing built)\n", pn->id,
                cut_move_name(ed->move), ed->label, s->g.nodes[n->node].id);
}

static void note_relaxed(kopt *ko, const cut_mcgs_search *s, const cut_mcgs_note *n)
{
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "relax_pruning");
    cJSON_AddNumberToObject(ev, "threshold", s->threshold);
    cJSON_AddNumberToObject(ev, "opened", n->opened);
    cut_opt_event(ko, ev);
    if (ko->trace)
        fprintf(ko->trace, "- *every open move tried: prune threshold lowered to %.3f, %d move(s) reopened*\n",
                s->threshold, n->opened);
    if (!ko->o->quiet)
        printf("  every open move tried: prune threshold lowered to %.3f, %d move(s) reopened\n", s->threshold,
               n->opened);
}

int cut_opt_note(void *ctx, const cut_mcgs_search *s, const cut_mcgs_note *n, cut_err *e)
{
    kopt *ko = ctx;
    cut_err err = {{0}};
    switch (n->kind) {
    case CUT_MCGS_NOTE_BEST:
        ko->builds_to_best = ko->builds;
        if (cut_opt_update_best_link(ko, &err) != 0) {
            *e = err;
            return cut_opt_stash(ko, &err);
        }
        return 0;
    case CUT_MCGS_NOTE_VARIANT:
        note_variant(ko, s, n, &err); /* the global graph's write failure is a warning (cut_opt_update_global) */
        return 0;
    case CUT_MCGS_NOTE_TRANSPOSITION:
        note_transposition(ko, s, n);
        return 0;
    case CUT_MCGS_NOTE_RELAXED:
        note_relaxed(ko, s, n);
        return 0;
    case CUT_MCGS_NOTE_EXHAUSTED:
        if (!ko->o->quiet)
            printf("  nothing left to expand: every move of every state was tried or is predicted to lose over "
                   "%.0f%%\n", -100 * CUT_RELAX_FLOOR);
        return 0;
    case CUT_MCGS_NOTE_NO_PRIORS:
        if (ko->trace && ko->o->priors)
            fprintf(ko->trace, "- *%s priors unavailable for %s: %s*\n", ko->o->priors->name, s->g.nodes[n->node].id,
                    n->msg);
        return 0;
    case CUT_MCGS_NOTE_ERROR:
        cut_err_set(&err, "%s", n->msg);
        *e = err;
        return cut_opt_stash(ko, &err);
    }
    return 0;
}
