/* The umbrella header on its own in C11 (-std=c11 -pedantic, nothing before it): every public header compiles,
 * and a few calls link against the library. */
#include "cutune/cutune.h"

#include <stdio.h>
#include <string.h>

static void count(cut_log_level level, const char *msg, void *ctx)
{
    (void)msg;
    if (level == CUT_LOG_INFO)
        ++*(int *)ctx;
}

int main(void)
{
    cut_err e = {{0}};
    cut_dtype d;
    if (cut_dtype_parse("fp16", &d, &e) != 0 || d != CUT_DT_FP16 || strcmp(cut_dtype_name(d), "fp16") != 0) {
        printf("cut_dtype_parse: %s\n", e.msg);
        return 1;
    }
    int n = 0;
    cut_log_handler prev = cut_log_set_handler(count, &n);
    cut_log(CUT_LOG_INFO, "umbrella %s\n", "c11");
    cut_log_set_handler(prev.fn, prev.ctx);
    if (n != 1) {
        printf("the log handler was called %d times\n", n);
        return 1;
    }
    printf("ok: C11\n");
    return 0;
}
