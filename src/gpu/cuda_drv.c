/* cutune — dlopen'd CUDA driver API. */
#include "gpu/cuda_drv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CUT_STR_(x) #x
#define CUT_STR(x) CUT_STR_(x)

static cut_cu_api g_api;
static const cut_cu_api *g_loaded;
static char g_load_error[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    const char *lib = "libcuda.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(g_load_error, sizeof g_load_error,
                 "no NVIDIA driver found: %s could not be loaded (%s)", lib, why ? why : "unknown reason");
        return;
    }
#define CUT_CU_RESOLVE(fn)                                                                                           \
    g_api.fn = (__typeof__(fn) *)dlsym(h, CUT_STR(fn));                                                              \
    if (!g_api.fn) {                                                                                                 \
        snprintf(g_load_error, sizeof g_load_error, "the NVIDIA driver's %s lacks %s (driver too old?)", lib,        \
                 CUT_STR(fn));                                                                                       \
        return;                                                                                                      \
    }
    CUT_CU_FUNCS(CUT_CU_RESOLVE)
#undef CUT_CU_RESOLVE
    g_loaded = &g_api;
}

const cut_cu_api *cut_cu_load(cut_err *e)
{
    pthread_once(&g_once, load_once);
    if (!g_loaded)
        cut_err_set(e, "%s", g_load_error);
    return g_loaded;
}

const cut_cu_api *cut_cu(void) { return g_loaded; }

void cut_cu_describe(CUresult r, char *buf, size_t n)
{
    const char *name = NULL, *str = NULL;
    if (g_loaded) {
        g_loaded->cuGetErrorName(r, &name);
        g_loaded->cuGetErrorString(r, &str);
    }
    snprintf(buf, n, "%s (%s)", name ? name : "CUDA_ERROR_UNKNOWN", str ? str : "no description");
    if (!name)
        snprintf(buf, n, "CUresult %d", (int)r);
}
