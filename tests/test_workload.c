/* Workloads: shape parsing and validation, FLOPs, case names, the built-in lists checked against the networks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cutune/workload.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int conv_eq(const cut_conv *a, const cut_conv *b)
{
    return a->n == b->n && a->h == b->h && a->w == b->w && a->co == b->co && a->ci == b->ci && a->kh == b->kh &&
           a->kw == b->kw && a->stride == b->stride && a->pad == b->pad;
}

static const char *fixtures(void)
{
    const char *f = getenv("CUTUNE_FIXTURES");
    return f ? f : CUTUNE_WORKLOADS_DIR "/../tests/fixtures"; /* run outside ctest */
}

/* ------------------------------------------------------------------------------------------------------------ */

static void test_parse_good(void **state)
{
    (void)state;
    const char *good[] = {"1,56,56,64,64,3,3,1,1", "[1, 56, 56, 64, 64, 3, 3, 1, 1]", "  [1,56,56,64,64,3,3,1,1]  ",
                          "1, 56 ,56,64,64,3,3,1,1", "[ 1,56,56,64,64,3,3,1,1 ]\n"};
    for (size_t i = 0; i < CUT_ARRAY_LEN(good); i++) {
        cut_conv c;
        memset(&c, 0xab, sizeof c);
        cut_err e = {{0}};
        if (cut_conv_parse(good[i], &c, &e) != 0)
            fail_msg("'%s' rejected: %s", good[i], e.msg);
        cut_conv want = {1, 56, 56, 64, 64, 3, 3, 1, 1};
        assert_true(conv_eq(&c, &want));
    }
    cut_conv c;
    cut_err e;
    assert_int_equal(cut_conv_parse("2,17,19,1024,512,1,5,2,0", &c, &e), 0);
    cut_conv want = {2, 17, 19, 1024, 512, 1, 5, 2, 0};
    assert_true(conv_eq(&c, &want));
}

static void test_parse_bad(void **state)
{
    (void)state;
    struct {
        const char *in, *want;
    } bad[] = {
        {"1,56,56,64,64,3,3,1", "found 8"},           /* wrong count */
        {"1,56,56,64,64,3,3,1,1,1", "found 10"},      /* wrong count */
        {"", "found 0"},                              /* nothing */
        {"[]", "found 0"},                            /* nothing */
        {"1,56,56.5,64,64,3,3,1,1", "field 3 (W)"},   /* non-integer */
        {"1,56,56,64,x,3,3,1,1", "field 5 (CI)"},     /* non-integer */
        {"1,56,56,64,64,3,3,,1", "field 8 (stride)"}, /* empty field */
        {"1,56,56,64,64,3,3,1,1 junk", "trailing"},   /* trailing junk */
        {"[1,56,56,64,64,3,3,1,1] x", "trailing"},    /* trailing junk after ] */
        {"[1,56,56,64,64,3,3,1,1", "']'"},            /* unclosed */
        {"1,56,56,64,64,3,3,1,1]", "']'"},            /* unopened */
        {"1,56,56,64,64,3,3,1,99999999999", "out of range"},
        {"1,56,56,64,64,3,3,0,1", "stride"}, /* parses but does not validate */
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_conv c = {7, 7, 7, 7, 7, 7, 7, 7, 7}, before = c;
        cut_err e = {{0}};
        assert_int_equal(cut_conv_parse(bad[i].in, &c, &e), -1);
        char quoted[256];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i].in);
        if (!strstr(e.msg, quoted) || !strstr(e.msg, bad[i].want))
            fail_msg("input '%s': message '%s' lacks %s or '%s'", bad[i].in, e.msg, quoted, bad[i].want);
        assert_true(conv_eq(&c, &before)); /* output untouched on error */
    }
}

static void test_validate(void **state)
{
    (void)state;
    const cut_conv ok = {1, 56, 56, 64, 64, 3, 3, 1, 1};
    cut_err e;
    assert_int_equal(cut_conv_validate(&ok, &e), 0);
    struct {
        cut_conv c;
        const char *want1, *want2;
    } bad[] = {
        {{0, 56, 56, 64, 64, 3, 3, 1, 1}, "field N is 0", NULL},
        {{1, -3, 56, 64, 64, 3, 3, 1, 1}, "field H is -3", NULL},
        {{1, 56, 0, 64, 64, 3, 3, 1, 1}, "field W is 0", NULL},
        {{1, 56, 56, 0, 64, 3, 3, 1, 1}, "field CO is 0", NULL},
        {{1, 56, 56, 64, -1, 3, 3, 1, 1}, "field CI is -1", NULL},
        {{1, 56, 56, 64, 64, 0, 3, 1, 1}, "field KH is 0", NULL},
        {{1, 56, 56, 64, 64, 3, -2, 1, 1}, "field KW is -2", NULL},
        {{1, 56, 56, 64, 64, 3, 3, 0, 1}, "field stride is 0", NULL},
        {{1, 56, 56, 64, 64, 3, 3, -1, 1}, "field stride is -1", NULL},
        {{1, 56, 56, 64, 64, 3, 3, 1, -1}, "field pad is -1", NULL},
        {{1, 5, 56, 64, 64, 9, 3, 1, 1}, "field KH is 9", "= 7), so the output height"}, /* 9 > 5 + 2 */
        {{1, 56, 4, 64, 64, 3, 8, 2, 1}, "field KW is 8", "= 6), so the output width"},  /* 8 > 4 + 2 */
        {{1, 256, 256, 64, 65536, 1, 1, 1, 0}, "input", "N*CI*H*W"},        /* 2^32 input elements */
        {{1, 8, 8, 65536, 65536, 1, 1, 1, 0}, "weight", "CO*CI*KH*KW"},     /* 2^32 weights */
        {{1, 1, 1, 8, 1, 1, 1, 1, 20000}, "output", "N*CO*OH*OW"},          /* 8 * 40001^2 outputs */
        {{2147483647, 2147483647, 2147483647, 2147483647, 2147483647, 1, 1, 1, 0}, "input", NULL}, /* no overflow */
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_err e2 = {{0}};
        assert_int_equal(cut_conv_validate(&bad[i].c, &e2), -1);
        if (!strstr(e2.msg, bad[i].want1) || (bad[i].want2 && !strstr(e2.msg, bad[i].want2)))
            fail_msg("case %zu: message '%s' lacks '%s'", i, e2.msg, bad[i].want1);
    }
    /* Just below the limit is fine: 2^31 - 1 is prime, so use 2^30 input elements. */
    cut_conv big = {1, 1024, 1024, 1, 1024, 1, 1, 1, 0};
    assert_int_equal(cut_conv_validate(&big, &e), 0);
    /* Kernel exactly as large as the padded input: one output. */
    cut_conv fit = {1, 5, 5, 8, 8, 7, 7, 1, 1};
    assert_int_equal(cut_conv_validate(&fit, &e), 0);
    assert_int_equal(cut_conv_oh(&fit), 1);
}

static void test_flops_and_sizes(void **state)
{
    (void)state;
    cut_conv c = {2, 56, 58, 64, 32, 3, 5, 2, 1};
    /* OH = (56 + 2 - 3) / 2 + 1 = 28, OW = (58 + 2 - 5) / 2 + 1 = 28. */
    int oh = (c.h + 2 * c.pad - c.kh) / c.stride + 1, ow = (c.w + 2 * c.pad - c.kw) / c.stride + 1;
    assert_int_equal(cut_conv_oh(&c), oh);
    assert_int_equal(cut_conv_ow(&c), ow);
    double flops = 2.0 * 2 * oh * ow * 64 * 32 * 3 * 5;
    assert_true(cut_conv_flops(&c) == flops);
    assert_true(cut_conv_gflops(&c, 0.5) == flops / (0.5 * 1e6));
    assert_true(cut_conv_gflops(&c, 0) == 0 && cut_conv_gflops(&c, -1) == 0);
    assert_int_equal(cut_conv_in_elems(&c), (size_t)2 * 32 * 56 * 58);
    assert_int_equal(cut_conv_w_elems(&c), (size_t)64 * 32 * 3 * 5);
    assert_int_equal(cut_conv_out_elems(&c), (size_t)2 * 64 * oh * ow);
}

/* The seed-001 table, as printed in conv_tuning.py. */
static const cut_conv seed001[7] = {
    {1, 272, 272, 64, 32, 3, 3, 1, 1}, {1, 68, 68, 256, 128, 3, 3, 1, 1}, {1, 34, 34, 512, 256, 3, 3, 1, 1},
    {1, 17, 17, 1024, 512, 3, 3, 1, 1}, {1, 56, 56, 64, 64, 3, 3, 1, 1}, {1, 28, 28, 128, 128, 3, 3, 1, 1},
    {1, 14, 14, 256, 256, 3, 3, 1, 1},
};

static void test_case_names(void **state)
{
    (void)state;
    char buf[256];
    cut_conv_case_name(&seed001[0], 1, buf, sizeof buf);
    assert_string_equal(buf, "case1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1");
    cut_conv_name(&seed001[3], buf, sizeof buf);
    assert_string_equal(buf, "conv2d_N_1_H_17_W_17_CO_1024_CI_512_KH_3_KW_3_strides_1_padding_1");

    const cut_conv odd = {3, 13, 15, 255, 1024, 1, 7, 2, 3};
    for (int i = 0; i < 8; i++) {
        const cut_conv *c = i < 7 ? &seed001[i] : &odd;
        int idx = i < 7 ? i + 1 : 123;
        char name[256], forms[4][300];
        cut_conv_case_name(c, idx, name, sizeof name);
        snprintf(forms[0], sizeof forms[0], "%s", name);
        snprintf(forms[1], sizeof forms[1], "%s.json", name);
        snprintf(forms[2], sizeof forms[2], "tuningrecords/%s.csv", name);
        snprintf(forms[3], sizeof forms[3], "/a/b.c/%s.json", name);
        for (int f = 0; f < 4; f++) {
            int got_idx = 0;
            cut_conv got;
            cut_err e = {{0}};
            if (cut_conv_parse_case_name(forms[f], &got_idx, &got, &e) != 0)
                fail_msg("'%s' rejected: %s", forms[f], e.msg);
            assert_int_equal(got_idx, idx);
            assert_true(conv_eq(&got, c));
        }
    }
    const char *bad[] = {
        "case0_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1.json",        /* case 0 */
        "case1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1_x.json",      /* junk */
        "case1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1.json",                  /* short */
        "case1_conv2d_N_1_H_-272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1.json",       /* sign */
        "case1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_0_padding_1.json",        /* invalid */
        "cuda_resnet_testCase_1_conv2d_N_1_H_56_W_56_CO_64_CI_64_KH_3_KW_3_strides_1_padding_1", /* other scheme */
        "case1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1.txt",         /* suffix */
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        int idx = -5;
        cut_conv c;
        cut_err e = {{0}};
        assert_int_equal(cut_conv_parse_case_name(bad[i], &idx, &c, &e), -1);
        assert_int_equal(idx, -5);
        assert_non_null(strstr(e.msg, bad[i]));
    }
}

/* ------------------------------------------------------------------------------------------------------------
 * The built-in lists, checked against the networks built here from their architecture descriptions. */

typedef struct convset {
    cut_conv c[128];
    int n;
} convset;

/* Adds a conv on an input of size *hw (square), advances *hw to its output, dedupes. Asserts the network's own
 * size arithmetic: a stride-1 conv keeps the size, a stride-2 conv halves it exactly. */
static void add_conv(convset *s, int *hw, int ci, int co, int k, int stride)
{
    cut_conv c = {1, *hw, *hw, co, ci, k, k, stride, k / 2};
    int oh = cut_conv_oh(&c);
    assert_int_equal(oh * stride, *hw);
    int seen = 0;
    for (int i = 0; i < s->n; i++)
        seen |= conv_eq(&s->c[i], &c);
    if (!seen)
        s->c[s->n++] = c;
    *hw = oh;
}

/* ResNet-18, torchvision layout (BasicBlock, [2, 2, 2, 2]), 224x224. */
static void build_resnet18(convset *s)
{
    memset(s, 0, sizeof *s);
    int hw = 224;
    add_conv(s, &hw, 3, 64, 7, 2); /* stem */
    assert_int_equal(hw, 112);
    hw = (hw + 2 - 3) / 2 + 1; /* max-pool 3x3/2 pad 1 */
    assert_int_equal(hw, 56);
    int ch = 64;
    const int widths[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; stage++) {
        for (int blk = 0; blk < 2; blk++) {
            int stride = (stage > 0 && blk == 0) ? 2 : 1;
            int in_hw = hw, in_ch = ch;
            add_conv(s, &hw, ch, widths[stage], 3, stride);
            add_conv(s, &hw, widths[stage], widths[stage], 3, 1);
            if (stride == 2 || in_ch != widths[stage]) { /* projection shortcut: 1x1, same stride, pad 0 */
                int h2 = in_hw;
                add_conv(s, &h2, in_ch, widths[stage], 1, stride);
                assert_int_equal(h2, hw);
            }
            ch = widths[stage];
        }
    }
    assert_int_equal(hw, 7);
}

/* YOLOv3 (darknet yolov3.cfg), 416x416: Darknet-53 backbone, then the three detection heads. */
static void build_yolov3(convset *s, int *backbone_count)
{
    memset(s, 0, sizeof *s);
    int hw = 416;
    add_conv(s, &hw, 3, 32, 3, 1);
    int ch = 32;
    const int blocks[5] = {1, 2, 8, 8, 4};
    int route_hw[5], route_ch[5];
    for (int st = 0; st < 5; st++) {
        add_conv(s, &hw, ch, ch * 2, 3, 2); /* downsample */
        ch *= 2;
        for (int b = 0; b < blocks[st]; b++) {
            add_conv(s, &hw, ch, ch / 2, 1, 1);
            add_conv(s, &hw, ch / 2, ch, 3, 1);
        }
        route_hw[st] = hw;
        route_ch[st] = ch;
    }
    assert_int_equal(hw, 13);
    assert_int_equal(ch, 1024);
    *backbone_count = s->n;
    /* Heads: 5 alternating convs (1x1 c/2, 3x3 c, ...), a 3x3 c, a 1x1 -> 255; the 5th conv's output is routed
     * through a 1x1 to c/4 channels, upsampled x2, concatenated with the backbone's feature map. */
    int in_ch = 1024, c = 1024, h = 13;
    for (int head = 0; head < 3; head++) {
        int x = h;
        add_conv(s, &x, in_ch, c / 2, 1, 1);
        add_conv(s, &x, c / 2, c, 3, 1);
        add_conv(s, &x, c, c / 2, 1, 1);
        add_conv(s, &x, c / 2, c, 3, 1);
        add_conv(s, &x, c, c / 2, 1, 1);
        int y = x;
        add_conv(s, &y, c / 2, c, 3, 1);
        add_conv(s, &y, c, 255, 1, 1);
        if (head < 2) {
            add_conv(s, &x, c / 2, c / 4, 1, 1);
            int up = x * 2; /* upsample x2 */
            int skip = 3 - head; /* stages 4 (26x26, 512) then 3 (52x52, 256) */
            assert_int_equal(route_hw[skip], up);
            in_ch = c / 4 + route_ch[skip];
            c /= 2;
            h = up;
        }
    }
}

/* ResNet-50 v1.5, torchvision layout (Bottleneck, [3, 4, 6, 3], the stride on the 3x3), 224x224. */
static void build_resnet50(convset *s)
{
    memset(s, 0, sizeof *s);
    int hw = 224;
    add_conv(s, &hw, 3, 64, 7, 2); /* stem */
    hw = (hw + 2 - 3) / 2 + 1;     /* max-pool 3x3/2 pad 1 */
    assert_int_equal(hw, 56);
    int ch = 64;
    const int widths[4] = {64, 128, 256, 512}, blocks[4] = {3, 4, 6, 3};
    for (int stage = 0; stage < 4; stage++)
        for (int blk = 0; blk < blocks[stage]; blk++) {
            const int stride = (stage > 0 && blk == 0) ? 2 : 1, w = widths[stage], in_hw = hw;
            add_conv(s, &hw, ch, w, 1, 1);
            add_conv(s, &hw, w, w, 3, stride);
            add_conv(s, &hw, w, 4 * w, 1, 1);
            if (blk == 0) { /* projection shortcut: 1x1 with the block's stride */
                int h2 = in_hw;
                add_conv(s, &h2, ch, 4 * w, 1, stride);
                assert_int_equal(h2, hw);
            }
            ch = 4 * w;
        }
    assert_int_equal(hw, 7);
    assert_int_equal(s->n, 23);
}

/* The same set at batch n. */
static void with_batch(convset *s, int n)
{
    for (int i = 0; i < s->n; i++)
        s->c[i].n = n;
}

static void expect_list(const char *name, const convset *want)
{
    cut_conv_list l;
    cut_err e = {{0}};
    if (cut_conv_list_load(name, CUTUNE_WORKLOADS_DIR, &l, &e) != 0)
        fail_msg("%s: %s", name, e.msg);
    assert_string_equal(l.name, name);
    for (int i = 0; i < l.count; i++) {
        assert_int_equal(cut_conv_validate(&l.cases[i], &e), 0);
        for (int j = 0; j < i; j++)
            if (conv_eq(&l.cases[i], &l.cases[j]))
                fail_msg("%s: cases %d and %d are the same shape", name, j + 1, i + 1);
    }
    /* Same set of shapes, in order of first appearance in the network. */
    if (l.count != want->n)
        fail_msg("%s: %d cases, the network has %d unique conv shapes", name, l.count, want->n);
    for (int i = 0; i < l.count; i++) {
        const cut_conv *a = &l.cases[i], *b = &want->c[i];
        if (!conv_eq(a, b))
            fail_msg("%s case %d: [%d,%d,%d,%d,%d,%d,%d,%d,%d], network: [%d,%d,%d,%d,%d,%d,%d,%d,%d]", name, i + 1,
                     a->n, a->h, a->w, a->co, a->ci, a->kh, a->kw, a->stride, a->pad, b->n, b->h, b->w, b->co, b->ci,
                     b->kh, b->kw, b->stride, b->pad);
    }
    cut_conv_list_free(&l);
    assert_null(l.cases);
}

static void test_list_seed001(void **state)
{
    (void)state;
    convset s = {.n = 7};
    memcpy(s.c, seed001, sizeof seed001);
    expect_list("seed001", &s);
}

static void test_list_resnet18(void **state)
{
    (void)state;
    convset *s = malloc(sizeof *s);
    build_resnet18(s);
    expect_list("resnet18", s);
    free(s);
}

static void test_list_resnet50_and_batches(void **state)
{
    (void)state;
    convset *s = malloc(sizeof *s);
    build_resnet50(s);
    expect_list("resnet50", s);
    with_batch(s, 32);
    expect_list("resnet50_b32", s);
    s->n = 7;
    memcpy(s->c, seed001, sizeof seed001);
    expect_list("seed001_b1", s);
    with_batch(s, 32);
    expect_list("seed001_b32", s);
    free(s);
}

/* dtype and layout: defaults keep the seed names, others are appended and read back; the storage types and
 * bytes follow the dtype. */
static void test_dtype_layout(void **state)
{
    (void)state;
    cut_conv c = {1, 56, 56, 64, 64, 3, 3, 1, 1};
    assert_true(cut_conv_is_default(&c));
    char name[256];
    const struct {
        cut_dtype d;
        cut_conv_layout l;
        const char *tail;
    } forms[] = {
        {CUT_DT_FP32, CUT_NCHW, "padding_1"},
        {CUT_DT_FP16, CUT_NHWC, "padding_1_dtype_fp16_layout_NHWC"},
        {CUT_DT_BF16, CUT_NCHW, "padding_1_dtype_bf16"},
        {CUT_DT_FP32, CUT_NHWC, "padding_1_layout_NHWC"},
        {CUT_DT_TF32, CUT_NHWC, "padding_1_dtype_tf32_layout_NHWC"},
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(forms); i++) {
        c.dtype = forms[i].d, c.layout = forms[i].l;
        cut_conv_case_name(&c, 4, name, sizeof name);
        const size_t nl = strlen(name), tl = strlen(forms[i].tail);
        assert_true(nl > tl && strcmp(name + nl - tl, forms[i].tail) == 0);
        strcat(name, ".json");
        cut_conv back;
        int idx = 0;
        cut_err e = {{0}};
        if (cut_conv_parse_case_name(name, &idx, &back, &e) != 0)
            fail_msg("%s: %s", name, e.msg);
        assert_int_equal(idx, 4);
        assert_true(cut_conv_equal(&back, &c));
    }
    const char *bad[] = {
        "case1_conv2d_N_1_H_8_W_8_CO_4_CI_4_KH_3_KW_3_strides_1_padding_1_dtype_fp8",
        "case1_conv2d_N_1_H_8_W_8_CO_4_CI_4_KH_3_KW_3_strides_1_padding_1_dtype_fp32", /* a default spelt out */
        "case1_conv2d_N_1_H_8_W_8_CO_4_CI_4_KH_3_KW_3_strides_1_padding_1_layout_NCHW",
        "case1_conv2d_N_1_H_8_W_8_CO_4_CI_4_KH_3_KW_3_strides_1_padding_1_layout_NHWC_dtype_fp16", /* order */
    };
    for (size_t i = 0; i < CUT_ARRAY_LEN(bad); i++) {
        cut_conv back;
        int idx = 0;
        cut_err e = {{0}};
        assert_int_equal(cut_conv_parse_case_name(bad[i], &idx, &back, &e), -1);
    }
    c.dtype = CUT_DT_FP16, c.layout = CUT_NHWC;
    assert_false(cut_conv_is_default(&c));
    assert_int_equal(cut_conv_in_elem(&c), CUT_EL_F16);
    assert_int_equal(cut_conv_out_elem(&c), CUT_EL_F16);
    assert_true(cut_conv_bytes(&c) == 2.0 * (56 * 56 * 64 * 2 + 64 * 64 * 9));
    c.dtype = CUT_DT_TF32;
    assert_int_equal(cut_conv_out_elem(&c), CUT_EL_F32);
    assert_true(cut_conv_flops(&c) == 2.0 * 56 * 56 * 64 * 64 * 9);
    cut_conv_layout l;
    cut_err e = {{0}};
    assert_int_equal(cut_conv_layout_parse("nhwc", &l, &e), 0);
    assert_int_equal(l, CUT_NHWC);
    assert_int_equal(cut_conv_layout_parse("nn", &l, &e), -1);
    assert_non_null(strstr(e.msg, "nchw or nhwc"));
    c.dtype = (cut_dtype)7;
    assert_int_equal(cut_conv_validate(&c, &e), -1);
    assert_non_null(strstr(e.msg, "dtype"));
}

static void test_list_yolov3(void **state)
{
    (void)state;
    convset *s = malloc(sizeof *s);
    int backbone;
    build_yolov3(s, &backbone);
    assert_true(backbone < s->n); /* the heads add shapes of their own */
    expect_list("yolov3", s);
    free(s);
}

static void test_list_errors(void **state)
{
    (void)state;
    cut_conv_list l;
    cut_err e = {{0}};
    char *empty = tu_tmpdir("workload_known");
    assert_non_null(empty);
    assert_int_equal(cut_conv_list_load("vgg16", empty, &l, &e), -1);
    assert_string_equal(e.msg, "unknown workload list 'vgg16' (known: seed001, resnet18, yolov3)");
    assert_null(l.cases);
    /* Other list files in the folder are known by name, and named in the message. */
    char extra[4200];
    snprintf(extra, sizeof extra, "%s/mine.txt", empty);
    FILE *mf = fopen(extra, "w");
    assert_non_null(mf);
    fputs("[1,6,6,2,2,3,3,1,1]\n", mf);
    fclose(mf);
    assert_int_equal(cut_conv_list_load("vgg16", empty, &l, &e), -1);
    assert_string_equal(e.msg, "unknown workload list 'vgg16' (known: seed001, resnet18, yolov3, mine)");
    assert_int_equal(cut_conv_list_load("mine", empty, &l, &e), 0);
    assert_int_equal(l.count, 1);
    assert_string_equal(l.name, "mine");
    cut_conv_list_free(&l);
    assert_int_equal(cut_conv_list_load("../mine", empty, &l, &e), -1); /* a path: relative to the cwd */
    free(empty);

    char path[4096];
    snprintf(path, sizeof path, "%s/workloads/bad_line.txt", fixtures());
    assert_int_equal(cut_conv_list_load(path, NULL, &l, &e), -1);
    char want[4200];
    snprintf(want, sizeof want, "%s:5:", path); /* line 5 has 8 fields */
    if (!strstr(e.msg, want) || !strstr(e.msg, "found 8"))
        fail_msg("message '%s' lacks '%s'", e.msg, want);
    assert_null(l.cases);

    snprintf(path, sizeof path, "%s/workloads/does_not_exist.txt", fixtures());
    assert_int_equal(cut_conv_list_load(path, NULL, &l, &e), -1);
    assert_non_null(strstr(e.msg, "does_not_exist.txt"));

    char *dir = tu_tmpdir("workload_empty");
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/empty.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("# only a comment\n\n", f);
    fclose(f);
    assert_int_equal(cut_conv_list_load(path, NULL, &l, &e), -1);
    assert_non_null(strstr(e.msg, "no cases"));
    free(dir);
}

static void test_list_from_file_and_env(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/workloads/custom.txt", fixtures());
    cut_conv_list l;
    cut_err e = {{0}};
    if (cut_conv_list_load(path, NULL, &l, &e) != 0)
        fail_msg("%s", e.msg);
    assert_string_equal(l.name, "custom");
    /* custom.txt: bracketed, bare, comment-only lines, blank lines, CRLF endings */
    const cut_conv want[3] = {{1, 8, 8, 16, 4, 3, 3, 1, 1}, {2, 9, 7, 5, 3, 1, 1, 2, 0}, {1, 12, 12, 8, 8, 5, 5, 2, 2}};
    assert_int_equal(l.count, 3);
    for (int i = 0; i < 3; i++)
        assert_true(conv_eq(&l.cases[i], &want[i]));
    cut_conv_list_free(&l);

    /* $CUTUNE_WORKLOADS overrides the built-in folder, and names resolve there. */
    char *dir = tu_tmpdir("workload_env");
    assert_non_null(dir);
    char file[4200];
    snprintf(file, sizeof file, "%s/seed001.txt", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("[1,10,10,4,4,3,3,1,1]  # one tiny case\n", f);
    fclose(f);
    setenv("CUTUNE_WORKLOADS", dir, 1);
    assert_string_equal(cut_workloads_dir(), dir);
    assert_int_equal(cut_conv_list_load("seed001", cut_workloads_dir(), &l, &e), 0);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.cases[0].h, 10);
    cut_conv_list_free(&l);
    assert_int_equal(cut_conv_list_load("seed001", NULL, &l, &e), 0); /* NULL dir: the same lookup */
    assert_int_equal(l.count, 1);
    cut_conv_list_free(&l);
    unsetenv("CUTUNE_WORKLOADS");
    assert_string_equal(cut_workloads_dir(), CUTUNE_WORKLOADS_DIR);
    assert_int_equal(cut_conv_list_load("seed001", NULL, &l, &e), 0);
    assert_int_equal(l.count, 7);
    cut_conv_list_free(&l);
    cut_conv_list_free(&l); /* twice is harmless */
    free(dir);

    const char *const *names;
    assert_int_equal(cut_conv_list_names(&names), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cut_conv_list_load(names[i], NULL, &l, &e), 0);
        cut_conv_list_free(&l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),       cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_validate),         cmocka_unit_test(test_flops_and_sizes),
        cmocka_unit_test(test_case_names),       cmocka_unit_test(test_list_seed001),
        cmocka_unit_test(test_list_resnet18),    cmocka_unit_test(test_list_yolov3),
        cmocka_unit_test(test_list_resnet50_and_batches), cmocka_unit_test(test_dtype_layout),
        cmocka_unit_test(test_list_errors),      cmocka_unit_test(test_list_from_file_and_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
