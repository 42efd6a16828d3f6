// The umbrella header in C++ (every public header has extern "C" guards): it compiles, and the calls link against
// the C library (a missing guard would leave them undefined as C++-mangled names).
#include "cutune/cutune.h"

#include <cstdio>
#include <cstring>

extern "C" void count_info(cut_log_level level, const char *msg, void *ctx)
{
    (void)msg;
    if (level == CUT_LOG_INFO)
        ++*static_cast<int *>(ctx);
}

int main()
{
    cut_err e = {{0}};
    cut_dtype d;
    if (cut_dtype_parse("bf16", &d, &e) != 0 || d != CUT_DT_BF16 || std::strcmp(cut_dtype_name(d), "bf16") != 0) {
        std::printf("cut_dtype_parse: %s\n", e.msg);
        return 1;
    }
    const char *words[] = {"M=8", "N=4", "K=2"};
    cut_gemm g = {0, 0, 0, CUT_GEMM_NN, CUT_DT_FP32};
    if (cut_gemm_parse_args(3, words, &g, nullptr, nullptr, &e) != 0 || g.m != 8 || g.n != 4 || g.k != 2) {
        std::printf("cut_gemm_parse_args: %s\n", e.msg);
        return 1;
    }
    int n = 0;
    cut_log_handler prev = cut_log_set_handler(count_info, &n);
    cut_log(CUT_LOG_INFO, "umbrella %s\n", "c++");
    cut_log_set_handler(prev.fn, prev.ctx);
    if (n != 1) {
        std::printf("the log handler was called %d times\n", n);
        return 1;
    }
    std::printf("ok: C++\n");
    return 0;
}
