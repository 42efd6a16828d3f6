/* Tuning records: JSON round trip and escaping, strict parsing, loading with partial/malformed lines, the
 * append-only log's repair, the per-case CSV. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/record.h"
#include "cutune/op.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_record(cut_record *r, int trial, double median_ms)
{
    memset(r, 0, sizeof *r);
    r->case_idx = 3;
    r->conv = (cut_conv){1, 34, 34, 512, 256, 3, 3, 1, 1};
    snprintf(r->dtype, sizeof r->dtype, "fp32");
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_rng rng;
    cut_rng_seed(&rng, 1000 + (uint64_t)trial);
    assert_int_equal(cut_sched_sample_valid(&r->conv, &d, 0, &rng, &r->sched, 1000), 0);
    r->status = CUT_ST_OK;
    r->median_ms = median_ms;
    r->min_ms = median_ms * 0.97;
    r->max_ms = median_ms * 1.13;
    r->gflops = cut_conv_gflops(&r->conv, median_ms);
    r->repeats = 57;
    r->compile_ms = 123.456789;
    r->regs = 96;
    r->spills = 0;
    snprintf(r->env.backend, sizeof r->env.backend, "cuda");
    snprintf(r->env.gpu_name, sizeof r->env.gpu_name, "NVIDIA H200");
    snprintf(r->env.gpu_uuid, sizeof r->env.gpu_uuid, "GPU-12345678-abcd-ef01-2345-6789abcdef01");
    snprintf(r->env.driver_string, sizeof r->env.driver_string, "570.86.15");
    r->env.driver_version = 12080;
    r->env.sm_clock_mhz = 1980;
    r->env.power_limit_w = 700.0;
    r->env.other_procs = 1;     /* issue 15: a busy, power-capped GPU, recorded with the trial */
    r->env.clock_events = 0x4;
    snprintf(r->ts, sizeof r->ts, "2026-11-22T19:00:00Z");
    r->trial = trial;
}

static void assert_record_eq(const cut_record *a, const cut_record *b)
{
    assert_int_equal(a->case_idx, b->case_idx);
    assert_int_equal(a->trial, b->trial);
    assert_memory_equal(&a->conv, &b->conv, sizeof a->conv);
    assert_string_equal(a->dtype, b->dtype);
    assert_true(cut_sched_equal(&a->sched, &b->sched));
    assert_int_equal(a->status, b->status);
    assert_string_equal(a->error, b->error);
    assert_true(a->median_ms == b->median_ms);
    assert_true(a->min_ms == b->min_ms);
    assert_true(a->max_ms == b->max_ms);
    assert_true(a->gflops == b->gflops);
    assert_int_equal(a->repeats, b->repeats);
    assert_true(a->compile_ms == b->compile_ms);
    assert_int_equal(a->regs, b->regs);
    assert_int_equal(a->spills, b->spills);
    assert_string_equal(a->env.backend, b->env.backend);
    assert_string_equal(a->env.gpu_name, b->env.gpu_name);
    assert_string_equal(a->env.gpu_uuid, b->env.gpu_uuid);
    assert_string_equal(a->env.driver_string, b->env.driver_string);
    assert_int_equal(a->env.driver_version, b->env.driver_version);
    assert_int_equal(a->env.sm_clock_mhz, b->env.sm_clock_mhz);
    assert_true(a->env.power_limit_w == b->env.power_limit_w);
    assert_int_equal(a->env.other_procs, b->env.other_procs);
    assert_true(a->env.clock_events == b->env.clock_events);
    assert_string_equal(a->ts, b->ts);
    assert_true(a->energy_mj == b->energy_mj);
    assert_true(a->edp == b->edp);
    assert_true(a->power_w == b->power_w);
}

static int count_char(const char *s, size_t n, char c)
{
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == c;
    return k;
}

static void write_bytes(const char *path, const char *data, size_t n, const char *mode)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static char *slurp(const char *path, size_t *len)
{
    char *t;
    cut_err e;
    assert_int_equal(cut_read_file(path, &t, len, &e), 0);
    return t;
}

/* ------------------------------------------------------------------------------------------------------------ */

static void test_roundtrip(void **state)
{
    (void)state;
    cut_record r, back;
    make_record(&r, 17, 0.123456789012345678);
    cut_buf b;
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    assert_true(b.len > 0 && b.data[b.len - 1] == '\n');
    assert_int_equal(count_char(b.data, b.len, '\n'), 1);
    assert_null(strstr(b.data, "\"error\"")); /* only failed trials carry an error */
    cut_err e = {{0}};
    if (cut_record_parse(b.data, b.len, &back, &e) != 0)
        fail_msg("%s\n%s", e.msg, b.data);
    assert_record_eq(&r, &back);

    /* The layout the readers rely on. */
    cJSON *o = cJSON_Parse(b.data);
    assert_non_null(o);
    assert_int_equal(cJSON_GetObjectItem(o, "v")->valueint, 2); /* the one record line (issue 14) */
    assert_string_equal(cJSON_GetObjectItem(o, "op")->valuestring, "conv2d");
    cJSON *wl = cJSON_GetObjectItem(o, "workload");
    assert_string_equal(cJSON_GetObjectItem(wl, "op")->valuestring, "conv2d");
    assert_string_equal(cJSON_GetObjectItem(wl, "dtype")->valuestring, "fp32");
    cJSON *shape = cJSON_GetObjectItem(wl, "shape");
    assert_int_equal(cJSON_GetArraySize(shape), 9);
    assert_int_equal(cJSON_GetArrayItem(shape, 3)->valueint, 512);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(o, "sched")));
    char sj[1024];
    assert_true(cut_tpl_sched_json(CUT_OP_CONV2D, &r.sched, sj, sizeof sj) > 0);
    cJSON *so = cJSON_Parse(sj);
    assert_true(cJSON_Compare(so, cJSON_GetObjectItem(o, "sched"), 1));
    cJSON_Delete(so);
    assert_string_equal(cJSON_GetObjectItem(o, "status")->valuestring, "ok");
    assert_string_equal(cJSON_GetObjectItem(o, "backend")->valuestring, "cuda");
    cJSON *gpu = cJSON_GetObjectItem(o, "gpu");
    assert_string_equal(cJSON_GetObjectItem(gpu, "uuid")->valuestring, r.env.gpu_uuid);
    assert_string_equal(cJSON_GetObjectItem(gpu, "driver")->valuestring, "570.86.15");
    assert_int_equal(cJSON_GetObjectItem(gpu, "driver_version")->valueint, 12080);
    /* GFLOP/s = 2*N*OH*OW*CO*CI*KH*KW / (median_ms * 1e6) */
    double flops = 2.0 * 1 * 34 * 34 * 512 * 256 * 3 * 3;
    assert_true(fabs(cJSON_GetObjectItem(o, "gflops")->valuedouble - flops / (r.median_ms * 1e6)) < 1e-9);
    cJSON_Delete(o);
    cut_buf_free(&b);
}

static void test_precision_keeps_order(void **state)
{
    (void)state;
    /* %.6g would print both as 1; the order of such times must survive a round trip. */
    const double t[3] = {1.0000000001, 1.0000000002, nextafter(1.0000000002, 2.0)};
    cut_record back[3];
    for (int i = 0; i < 3; i++) {
        cut_record r;
        make_record(&r, i, t[i]);
        cut_buf b;
        cut_buf_init(&b);
        cut_record_to_json(&r, &b);
        cut_err e;
        assert_int_equal(cut_record_parse(b.data, b.len, &back[i], &e), 0);
        assert_true(back[i].median_ms == t[i]);
        cut_buf_free(&b);
    }
    assert_true(back[0].median_ms < back[1].median_ms && back[1].median_ms < back[2].median_ms);

    /* Every double comes back bit-exact, whatever its magnitude. */
    cut_rng rng;
    cut_rng_seed(&rng, 42);
    cut_record r, b2;
    make_record(&r, 0, 1.0);
    for (int i = 0; i < 2000; i++) {
        r.median_ms = ldexp(cut_rng_double(&rng) + 0.5, (int)cut_rng_below(&rng, 60) - 40);
        r.min_ms = r.median_ms * (1 - 1e-12);
        r.max_ms = nextafter(r.median_ms, 1e300);
        r.compile_ms = cut_rng_double(&rng) * 1e4;
        r.env.power_limit_w = cut_rng_double(&rng) * 1000;
        cut_buf b;
        cut_buf_init(&b);
        cut_record_to_json(&r, &b);
        cut_err e;
        assert_int_equal(cut_record_parse(b.data, b.len, &b2, &e), 0);
        assert_true(b2.median_ms == r.median_ms && b2.min_ms == r.min_ms && b2.max_ms == r.max_ms);
        assert_true(b2.compile_ms == r.compile_ms && b2.env.power_limit_w == r.env.power_limit_w);
        assert_true(b2.gflops == cut_conv_gflops(&r.conv, r.median_ms));
        cut_buf_free(&b);
    }
}

static void test_failed_record_escaping(void **state)
{
    (void)state;
    cut_record r, back;
    make_record(&r, 4, -1);
    r.status = CUT_ST_COMPILE_ERROR;
    r.min_ms = r.max_ms = -1;
    r.gflops = 0;
    r.repeats = 0;
    r.regs = r.spills = -1;
    snprintf(r.error, sizeof r.error, "kernel.cu(12): error: \"x\" undefined\n\tat 'line' \\ 2\r\nµs \x01 end");
    cut_buf b;
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    assert_int_equal(count_char(b.data, b.len, '\n'), 1);
    assert_int_equal(b.data[b.len - 1], '\n');
    assert_non_null(strstr(b.data, "\"status\":\"compile_error\""));
    assert_non_null(strstr(b.data, "\\\"x\\\""));
    assert_non_null(strstr(b.data, "\\n\\tat"));
    cut_err e = {{0}};
    if (cut_record_parse(b.data, b.len, &back, &e) != 0)
        fail_msg("%s", e.msg);
    assert_record_eq(&r, &back);
    cut_buf_free(&b);

    /* Bytes that are not UTF-8 become '?', so that every JSON reader accepts the line. */
    snprintf(r.error, sizeof r.error, "bad \xff\xfe byte, cut \xe2\x82");
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    assert_int_equal(cut_record_parse(b.data, b.len, &back, &e), 0);
    assert_string_equal(back.error, "bad ?? byte, cut ??");
    cut_buf_free(&b);

    /* Non-finite times are written as null and read back as "not measured". */
    r.median_ms = NAN;
    r.max_ms = INFINITY;
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    assert_non_null(strstr(b.data, "\"median_ms\":null"));
    assert_int_equal(cut_record_parse(b.data, b.len, &back, &e), 0);
    assert_true(back.median_ms == -1 && back.max_ms == -1);
    cut_buf_free(&b);
}

/* Removes key (or "obj.key") from the JSON line and returns the printed result (caller frees). */
static char *without(const char *line, const char *key)
{
    cJSON *o = cJSON_Parse(line);
    assert_non_null(o);
    const char *dot = strchr(key, '.');
    if (dot) {
        char parent[32];
        snprintf(parent, sizeof parent, "%.*s", (int)(dot - key), key);
        cJSON *p = cJSON_GetObjectItem(o, parent);
        assert_non_null(cJSON_GetObjectItem(p, dot + 1));
        cJSON_DeleteItemFromObject(p, dot + 1);
    } else {
        assert_non_null(cJSON_GetObjectItem(o, key));
        cJSON_DeleteItemFromObject(o, key);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static char *replaced(const char *line, const char *key, cJSON *value)
{
    cJSON *o = cJSON_Parse(line);
    cJSON_ReplaceItemInObject(o, key, value);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void test_parse_strict(void **state)
{
    (void)state;
    cut_record r, back;
    make_record(&r, 2, 0.5);
    cut_buf b;
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    const char *required[] = {"v",          "op",         "trial",      "case",        "workload",     "workload.op",
                              "workload.shape", "workload.dtype", "sched", "status",     "median_ms",
                              "min_ms",     "max_ms",     "repeats",     "gflops",       "compile_ms",
                              "regs",       "spills",     "backend",     "gpu",          "gpu.name",
                              "gpu.uuid",   "gpu.driver", "gpu.driver_version", "gpu.sm_clock_mhz",
                              "gpu.power_limit_w", "ts"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(required); i++) {
        char *s = without(b.data, required[i]);
        cut_err e = {{0}};
        assert_int_equal(cut_record_parse(s, strlen(s), &back, &e), -1);
        char want[64];
        snprintf(want, sizeof want, "'%s'", required[i]);
        if (!strstr(e.msg, want))
            fail_msg("without %s: message '%s' does not name it", required[i], e.msg);
        cJSON_free(s);
    }
    struct {
        const char *key;
        cJSON *val;
        const char *want;
    } wrong[] = {
        {"trial", cJSON_CreateString("7"), "'trial'"},
        {"trial", cJSON_CreateNumber(1.5), "'trial'"},
        {"case", cJSON_CreateNumber(0), "'case'"},
        {"status", cJSON_CreateString("great"), "great"},
        {"v", cJSON_CreateNumber(3), "version 3"},
        {"op", cJSON_CreateString("gemm"), "'op' is 'gemm'"},
        {"median_ms", cJSON_CreateString("fast"), "'median_ms'"},
        {"sched", cJSON_CreateString("direct"), "sched"},
        {"ts", cJSON_CreateString("2026-11-22T19:00:00Z and far too long to be a timestamp"), "'ts'"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(wrong); i++) {
        char *s = replaced(b.data, wrong[i].key, wrong[i].val);
        cut_err e = {{0}};
        assert_int_equal(cut_record_parse(s, strlen(s), &back, &e), -1);
        if (!strstr(e.msg, wrong[i].want))
            fail_msg("%s: message '%s' lacks %s", wrong[i].key, e.msg, wrong[i].want);
        cJSON_free(s);
    }
    /* Shapes are validated like every other shape. */
    cJSON *o = cJSON_Parse(b.data);
    cJSON *shape = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "workload"), "shape");
    cJSON_ReplaceItemInArray(shape, 7, cJSON_CreateNumber(0));
    char *s = cJSON_PrintUnformatted(o);
    cut_err e = {{0}};
    assert_int_equal(cut_record_parse(s, strlen(s), &back, &e), -1);
    assert_non_null(strstr(e.msg, "stride is 0"));
    cJSON_free(s);
    cJSON_Delete(o);

    const char *junk[] = {"", "{", "[1,2]", "{\"v\":1", "not json"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(junk); i++)
        assert_int_equal(cut_record_parse(junk[i], strlen(junk[i]), &back, &e), -1);
    /* trailing text after the object */
    cut_buf t;
    cut_buf_init(&t);
    cut_buf_append(&t, b.data, b.len - 1);
    cut_buf_printf(&t, " x");
    assert_int_equal(cut_record_parse(t.data, t.len, &back, &e), -1);
    assert_non_null(strstr(e.msg, "trailing"));
    cut_buf_free(&t);
    /* parse reads only len bytes: a valid line followed by garbage in the buffer */
    cut_buf_printf(&b, "garbage");
    assert_int_equal(cut_record_parse(b.data, b.len - 7, &back, &e), 0);
    cut_buf_free(&b);
}

static void append_record(cut_buf *b, int trial, double ms)
{
    cut_record r;
    make_record(&r, trial, ms);
    cut_record_to_json(&r, b);
}

static void test_load_partial_and_malformed(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("record_load");
    assert_non_null(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/case3.json", dir);

    cut_record *recs = (cut_record *)1;
    int n = -1, partial = -1;
    cut_err e = {{0}};
    /* Missing file: no records. */
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    assert_int_equal(n, 0);
    assert_int_equal(partial, 0);
    free(recs);

    cut_buf b;
    cut_buf_init(&b);
    for (int i = 0; i < 3; i++)
        append_record(&b, i, 1.0 + i);
    size_t complete = b.len;
    append_record(&b, 3, 4.0);
    write_bytes(path, b.data, complete + (b.len - complete) / 2, "wb"); /* killed mid-line */
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    assert_int_equal(n, 3);
    assert_int_equal(partial, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(recs[i].trial, i);
        assert_true(recs[i].median_ms == 1.0 + i);
    }
    free(recs);

    /* A malformed complete line is an error naming the file and line. */
    cut_buf m;
    cut_buf_init(&m);
    cut_buf_append(&m, b.data, complete);
    cut_buf_printf(&m, "{\"v\":1,\"trial\":9}\n");
    append_record(&m, 5, 2.5);
    write_bytes(path, m.data, m.len, "wb");
    recs = NULL;
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), -1);
    char want[4300];
    snprintf(want, sizeof want, "%s:4:", path);
    if (!strstr(e.msg, want))
        fail_msg("message '%s' lacks '%s'", e.msg, want);
    assert_null(recs);

    /* Blank lines are skipped but counted for line numbers. */
    cut_buf_free(&m);
    cut_buf_init(&m);
    cut_buf_printf(&m, "\n");
    append_record(&m, 0, 1.0);
    cut_buf_printf(&m, "  \n{oops}\n");
    write_bytes(path, m.data, m.len, "wb");
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), -1);
    snprintf(want, sizeof want, "%s:4:", path);
    assert_non_null(strstr(e.msg, want));

    /* cut_records_read keeps every record's original line. */
    write_bytes(path, b.data, complete, "wb");
    cut_records_file f;
    assert_int_equal(cut_records_read(path, &f, &e), 0);
    assert_int_equal(f.n, 3);
    assert_int_equal(f.partial, 0);
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f.line_off[i], off);
        assert_int_equal(f.text[f.line_off[i] + f.line_len[i]], '\n');
        off += f.line_len[i] + 1;
    }
    assert_int_equal(off, complete);
    cut_records_file_free(&f);
    cut_records_file_free(&f);

    cut_buf_free(&m);
    cut_buf_free(&b);
    free(dir);
}

static void test_reclog_repair(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("record_log");
    assert_non_null(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/deeper/tuningrecords/case1.json", dir); /* parents do not exist yet */
    cut_reclog log;
    cut_err e = {{0}};
    if (cut_reclog_open(path, &log, &e) != 0)
        fail_msg("%s", e.msg);
    for (int i = 0; i < 3; i++) {
        cut_record r;
        make_record(&r, i, 0.25 * (i + 1));
        assert_int_equal(cut_reclog_append(&log, &r, &e), 0);
        assert_int_equal(log.pending, i + 1);
    }
    assert_int_equal(cut_reclog_sync(&log, &e), 0);
    assert_int_equal(log.pending, 0);

    /* One writer at a time. */
    cut_reclog other;
    assert_int_equal(cut_reclog_open(path, &other, &e), -1);
    assert_non_null(strstr(e.msg, "another"));
    cut_reclog_close(&log);
    assert_int_equal(log.fd, -1);
    cut_reclog_close(&log); /* twice is harmless */

    size_t good_len;
    char *good = slurp(path, &good_len);
    assert_int_equal(count_char(good, good_len, '\n'), 3);

    /* A crash mid-write leaves a partial line: readers skip it, opening cuts it off and nothing else. */
    const char *torn = "{\"v\":1,\"trial\":3,\"case\":1,\"workl";
    write_bytes(path, torn, strlen(torn), "ab");
    cut_record *recs;
    int n, partial;
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    assert_int_equal(n, 3);
    assert_int_equal(partial, 1);
    free(recs);
    size_t dropped = 0;
    assert_int_equal(cut_reclog_open_ex(path, &log, &dropped, &e), 0);
    assert_int_equal(dropped, strlen(torn));
    size_t now_len;
    char *now = slurp(path, &now_len);
    assert_int_equal(now_len, good_len);
    assert_memory_equal(now, good, good_len);
    free(now);
    cut_record r;
    make_record(&r, 3, 0.125);
    assert_int_equal(cut_reclog_append(&log, &r, &e), 0);
    cut_reclog_close(&log);
    assert_int_equal(cut_records_load(path, &recs, &n, &partial, &e), 0);
    assert_int_equal(n, 4);
    assert_int_equal(partial, 0);
    assert_int_equal(recs[3].trial, 3);
    assert_true(recs[3].median_ms == 0.125);
    free(recs);
    now = slurp(path, &now_len);
    assert_memory_equal(now, good, good_len); /* earlier lines byte-identical */
    free(now);

    /* A file holding only a partial line is emptied; a clean file is left alone. */
    write_bytes(path, torn, strlen(torn), "wb");
    assert_int_equal(cut_reclog_open_ex(path, &log, &dropped, &e), 0);
    assert_int_equal(dropped, strlen(torn));
    cut_reclog_close(&log);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
    write_bytes(path, good, good_len, "wb");
    assert_int_equal(cut_reclog_open_ex(path, &log, &dropped, &e), 0);
    assert_int_equal(dropped, 0);
    cut_reclog_close(&log);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal((size_t)st.st_size, good_len);

    /* A partial line longer than the repair's read chunk (64 KiB). */
    cut_buf big;
    cut_buf_init(&big);
    cut_buf_append(&big, good, good_len);
    for (int i = 0; i < 100000; i++)
        cut_buf_append(&big, "x", 1);
    write_bytes(path, big.data, big.len, "wb");
    assert_int_equal(cut_reclog_open_ex(path, &log, &dropped, &e), 0);
    assert_int_equal(dropped, 100000);
    cut_reclog_close(&log);
    now = slurp(path, &now_len);
    assert_int_equal(now_len, good_len);
    free(now);
    cut_buf_free(&big);

    /* Appending to a closed log is an error, not a crash. */
    assert_int_equal(cut_reclog_append(&log, &r, &e), -1);
    free(good);
    free(dir);
}

static void test_case_csv(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("record_csv");
    assert_non_null(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/tr/case3_x.csv", dir);
    cut_record proto;
    make_record(&proto, 0, 1);
    snprintf(proto.env.gpu_name, sizeof proto.env.gpu_name, "GPU \"A\", rev 2");
    cut_err e = {{0}};
    assert_int_equal(cut_write_case_csv(path, "2026-11-22T19:00:00Z", &proto, 1000, &e), 0);
    size_t len;
    char *t = slurp(path, &len);
    assert_string_equal(t, "start_time,case,shape,dtype,backend,gpu,trials\n"
                           "2026-11-22T19:00:00Z,3,\"[1,34,34,512,256,3,3,1,1]\",fp32,cuda,\"GPU \"\"A\"\", rev 2\",1000\n");
    /* Present: never rewritten (a resumed run keeps its original start time). */
    assert_int_equal(cut_write_case_csv(path, "2030-01-01T00:00:00Z", &proto, 5, &e), 0);
    char *t2 = slurp(path, &len);
    assert_string_equal(t, t2);
    free(t);
    free(t2);
    free(dir);
}

/* The optional energy fields (tune --objective energy|edp): written only when measured, read back exactly,
 * absent in old lines (0 = not measured), null read as absent, negative or non-numbers rejected. */
static void test_energy_fields(void **state)
{
    (void)state;
    cut_record r, back;
    make_record(&r, 4, 0.25);
    cut_buf b;
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    assert_null(strstr(b.data, "energy_mj"));
    assert_null(strstr(b.data, "\"edp\""));
    assert_null(strstr(b.data, "power_w\":"));
    cut_err e = {{0}};
    assert_int_equal(cut_record_parse(b.data, b.len, &back, &e), 0);
    assert_record_eq(&r, &back);
    assert_true(back.energy_mj == 0 && back.edp == 0 && back.power_w == 0);
    assert_true(cut_record_objective(&back, CUT_OBJ_EDP) == -1);
    assert_true(cut_record_objective(&back, CUT_OBJ_TIME) == 0.25);

    r.energy_mj = 0.1 + 0.2; /* needs 17 digits */
    r.edp = r.energy_mj * 0.25;
    r.power_w = 1234.5678901234567;
    cut_buf_free(&b);
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    assert_int_equal(cut_record_parse(b.data, b.len, &back, &e), 0);
    assert_record_eq(&r, &back);
    assert_true(cut_record_objective(&back, CUT_OBJ_ENERGY) == r.energy_mj);
    assert_true(cut_record_objective(&back, CUT_OBJ_EDP) == r.edp);
    cut_buf c2;
    cut_buf_init(&c2);
    cut_record_to_json(&back, &c2);
    assert_int_equal(c2.len, b.len);
    assert_memory_equal(c2.data, b.data, b.len);
    cut_buf_free(&c2);

    char *s = replaced(b.data, "edp", cJSON_CreateNull());
    assert_int_equal(cut_record_parse(s, strlen(s), &back, &e), 0);
    assert_true(back.edp == 0 && fabs(back.energy_mj - r.energy_mj) < 1e-12); /* cJSON reprints 15 digits */
    cJSON_free(s);
    s = replaced(b.data, "energy_mj", cJSON_CreateNumber(-1));
    assert_int_equal(cut_record_parse(s, strlen(s), &back, &e), -1);
    assert_non_null(strstr(e.msg, "energy_mj"));
    cJSON_free(s);
    s = replaced(b.data, "power_w", cJSON_CreateString("300"));
    assert_int_equal(cut_record_parse(s, strlen(s), &back, &e), -1);
    assert_non_null(strstr(e.msg, "power_w"));
    cJSON_free(s);
    r.status = CUT_ST_WRONG_RESULT; /* a failed trial has no objective, measured or not */
    assert_true(cut_record_objective(&r, CUT_OBJ_EDP) == -1);
    cut_buf_free(&b);

    cut_objective o;
    assert_int_equal(cut_objective_parse("edp", &o, &e), 0);
    assert_int_equal(o, CUT_OBJ_EDP);
    assert_string_equal(cut_objective_name(CUT_OBJ_ENERGY), "energy");
    assert_int_equal(cut_objective_parse("power", &o, &e), -1);
    assert_non_null(strstr(e.msg, "--objective"));
}

/* Logs written by earlier cutune (version 1: no "op", no "err") still load, field for field. */
static void test_version1_loads(void **state)
{
    (void)state;
    cut_record r, back;
    make_record(&r, 5, 0.25);
    cut_buf b;
    cut_buf_init(&b);
    cut_record_to_json(&r, &b);
    cJSON *o = cJSON_Parse(b.data);
    cJSON_ReplaceItemInObject(o, "v", cJSON_CreateNumber(1));
    cJSON_DeleteItemFromObject(o, "op");
    cJSON_DeleteItemFromObject(o, "err");
    char *s = cJSON_PrintUnformatted(o);
    cut_err e = {{0}};
    if (cut_record_parse(s, strlen(s), &back, &e) != 0)
        fail_msg("a version-1 line: %s\n%s", e.msg, s);
    assert_record_eq(&r, &back);
    assert_true(back.err == -1); /* version 1 did not record it */
    cJSON_free(s);
    cJSON_Delete(o);
    cut_buf_free(&b);
}

/* A GEMM log of earlier cutune (version 1: no "op", no "err") still loads; a version-2 GEMM line names its op. */
static void test_gemm_version1_loads(void **state)
{
    (void)state;
    cut_gemm_record r, back;
    memset(&r, 0, sizeof r);
    r.gemm = (cut_gemm){64, 48, 40, CUT_GEMM_NT, CUT_DT_FP32};
    r.sched.tpl = CUT_GEMM_TPL_SIMT;
    const int knobs[] = {32, 32, 8, 4, 4, 4, 1, 4, 8};
    memcpy(r.sched.k, knobs, sizeof knobs);
    r.status = CUT_ST_OK;
    r.median_ms = r.min_ms = r.max_ms = 0.5;
    r.rel_err = 1e-7;
    r.repeats = 7;
    r.regs = r.spills = -1;
    snprintf(r.env.backend, sizeof r.env.backend, "emu");
    snprintf(r.ts, sizeof r.ts, "2026-12-06T00:00:00Z");
    cut_buf b;
    cut_buf_init(&b);
    cut_gemm_record_to_json(&r, &b);
    cJSON *o = cJSON_Parse(b.data);
    assert_int_equal(cJSON_GetObjectItem(o, "v")->valueint, 2);
    assert_string_equal(cJSON_GetObjectItem(o, "op")->valuestring, "gemm");
    cut_err e = {{0}};
    assert_int_equal(cut_gemm_record_parse(b.data, b.len, &back, &e), 0);
    assert_true(back.rel_err == r.rel_err && back.median_ms == r.median_ms);
    cJSON_ReplaceItemInObject(o, "v", cJSON_CreateNumber(1));
    cJSON_DeleteItemFromObject(o, "op");
    cJSON_DeleteItemFromObject(o, "err");
    char *s = cJSON_PrintUnformatted(o);
    if (cut_gemm_record_parse(s, strlen(s), &back, &e) != 0)
        fail_msg("a version-1 GEMM line: %s\n%s", e.msg, s);
    assert_true(back.rel_err == r.rel_err && back.median_ms == r.median_ms && back.gemm.layout == CUT_GEMM_NT);
    cJSON_free(s);
    cJSON_ReplaceItemInObject(o, "v", cJSON_CreateNumber(2));
    cJSON_AddStringToObject(o, "op", "conv2d");
    s = cJSON_PrintUnformatted(o);
    assert_int_equal(cut_gemm_record_parse(s, strlen(s), &back, &e), -1);
    assert_non_null(strstr(e.msg, "'op' is 'conv2d'"));
    cJSON_free(s);
    cJSON_Delete(o);
    cut_buf_free(&b);
}

/* Resume counts only trials of the same backend and GPU (issue 16): the UUID decides where both know it, else the
 * name. */
static void test_env_same_place(void **state)
{
    (void)state;
    cut_measure_env a = {.backend = "cuda", .gpu_name = "NVIDIA H100 80GB HBM3", .gpu_uuid = "GPU-aaaa"};
    cut_measure_env b = a;
    assert_true(cut_env_same_place(&a, &b));
    b.sm_clock_mhz = 1980; /* clocks, driver, power limit: the same GPU still */
    b.power_limit_w = 500;
    assert_true(cut_env_same_place(&a, &b));
    snprintf(b.gpu_uuid, sizeof b.gpu_uuid, "GPU-bbbb"); /* another card of the same model */
    assert_false(cut_env_same_place(&a, &b));
    b.gpu_uuid[0] = '\0'; /* a line without the UUID: the name decides */
    assert_true(cut_env_same_place(&a, &b));
    snprintf(b.gpu_name, sizeof b.gpu_name, "NVIDIA H200");
    assert_false(cut_env_same_place(&a, &b));
    cut_measure_env emu = {.backend = "emu", .gpu_name = "host-emulation"}, emu2 = emu;
    assert_true(cut_env_same_place(&emu, &emu2));
    b = a;
    snprintf(b.backend, sizeof b.backend, "emu"); /* the emulator is never the GPU */
    assert_false(cut_env_same_place(&a, &b));
    char d[256];
    cut_env_describe(&a, d, sizeof d);
    assert_string_equal(d, "backend cuda, GPU 'NVIDIA H100 80GB HBM3' (GPU-aaaa)");
    cut_env_describe(&emu, d, sizeof d);
    assert_string_equal(d, "the host emulator (backend emu, 'host-emulation')");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_version1_loads),
        cmocka_unit_test(test_gemm_version1_loads),
        cmocka_unit_test(test_precision_keeps_order),
        cmocka_unit_test(test_failed_record_escaping),
        cmocka_unit_test(test_parse_strict),
        cmocka_unit_test(test_load_partial_and_malformed),
        cmocka_unit_test(test_reclog_repair),
        cmocka_unit_test(test_case_csv),
        cmocka_unit_test(test_energy_fields),
        cmocka_unit_test(test_env_same_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
