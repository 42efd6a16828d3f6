/* cutune — the power-cap table, --power-caps parsing and resolution against a GPU (see cutune/powercap.h).
 * The session that changes limits is in capsession.c; energy arithmetic in energy.c. */
#include "cutune/powercap.h"

#include "gpu/nvml.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Seed 001's gpu_setup.py GPU_CONFIGS, caps exactly as there, and names as NVML reports them. H100/H200 are not in
 * the seed: their caps follow cut_powercap_spread over the device's own constraints; the literal caps below are
 * that rule over the SXM boards' 200..700 W (tests check the two agree). */
static const cut_powercap_model k_models[] = {
    {"NVIDIA GeForce RTX 3090", 0, {100, 200, 300, 420, 450}, 0, 0, 0},
    {"NVIDIA GeForce RTX 4090", 0, {150, 200, 300, 400, 450}, 0, 0, 0},
    {"Tesla V100-SXM2-16GB", 0, {100, 150, 200, 250, 300}, 0, 0, 0},
    {"NVIDIA A30", 0, {100, 120, 140, 160, 165}, 0, 0, 0},
    {"NVIDIA A100", 1, {100, 200, 300, 400, 450}, 0, 0, 0}, /* the seed names the family */
    {"NVIDIA H100", 1, {200, 325, 450, 575, 700}, 1, 200, 700},
    {"NVIDIA H200", 1, {200, 325, 450, 575, 700}, 1, 200, 700},
};

const cut_powercap_model *cut_powercap_models(size_t *n)
{
    *n = CUT_ARRAY_LEN(k_models);
    return k_models;
}

/* Families match by prefix on a word boundary, so "NVIDIA A100" covers "NVIDIA A100-SXM4-40GB" and "NVIDIA A100
 * 80GB PCIe" (the seed lists the A100 family by that name) but not a hypothetical "NVIDIA A1000". */
static int name_matches(const cut_powercap_model *m, const char *nvml_name)
{
    if (!m->family)
        return strcmp(m->name, nvml_name) == 0;
    size_t len = strlen(m->name);
    if (strncmp(m->name, nvml_name, len) != 0)
        return 0;
    char next = nvml_name[len];
    return next == '\0' || next == ' ' || next == '-';
}

const cut_powercap_model *cut_powercap_find_model(const char *nvml_name)
{
    if (!nvml_name)
        return NULL;
    for (size_t i = 0; i < CUT_ARRAY_LEN(k_models); i++)
        if (name_matches(&k_models[i], nvml_name))
            return &k_models[i];
    return NULL;
}

void cut_powercap_known_models(char *buf, size_t n)
{
    size_t used = 0;
    if (!n)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < CUT_ARRAY_LEN(k_models) && used < n; i++) {
        int k = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", k_models[i].name);
        if (k < 0)
            return;
        used += (size_t)k;
    }
}

void cut_powercap_spread(double min_w, double max_w, int caps_w[CUT_POWERCAP_PER_MODEL])
{
    int lo = (int)ceil(min_w), hi = (int)floor(max_w);
    for (int i = 0; i < CUT_POWERCAP_PER_MODEL; i++) {
        double v = min_w + (max_w - min_w) * i / (CUT_POWERCAP_PER_MODEL - 1);
        int r = (int)(floor(v / 25.0 + 0.5) * 25.0);
        /* Rounding may step outside a range whose ends are not multiples of 25 W; NVML would refuse those. */
        caps_w[i] = CUT_MIN(CUT_MAX(r, lo), hi);
    }
}

int cut_powercap_caps_for(const char *nvml_name, unsigned int min_mw, unsigned int max_mw,
                          int caps_w[CUT_POWERCAP_PER_MODEL], cut_err *e)
{
    const cut_powercap_model *m = cut_powercap_find_model(nvml_name);
    if (!m) {
        char known[512];
        cut_powercap_known_models(known, sizeof known);
        return cut_err_set(e,
                           "no power-cap table for GPU '%s' (known models: %s); use --power-caps current or an "
                           "explicit list of watts",
                           nvml_name ? nvml_name : "(unknown)", known);
    }
    if (m->spread && min_mw > 0 && max_mw > min_mw)
        cut_powercap_spread(min_mw / 1000.0, max_mw / 1000.0, caps_w);
    else
        memcpy(caps_w, m->caps_w, sizeof m->caps_w);
    return 0;
}

/* ---- --power-caps ---- */

/* One list item, watts with an optional fraction ("250", "212.5"), to milliwatts. Hand-parsed rather than with
 * strtod, which would also take "inf", "nan", "0x1p8", " 250" and locale decimal commas. */
static int parse_watts(const char *item, size_t len, unsigned int *mw, cut_err *e)
{
    unsigned long long whole = 0, frac_mw = 0;
    size_t i = 0;
    int digits = 0;
    for (; i < len && item[i] >= '0' && item[i] <= '9'; i++, digits++) {
        whole = whole * 10 + (unsigned long long)(item[i] - '0');
        if (whole > 100000)
            return cut_err_set(e, "--power-caps: '%.*s' W is not a plausible power cap", (int)len, item);
    }
    if (i < len && item[i] == '.') {
        unsigned long long scale = 100; /* first decimal is 100 mW */
        for (i++; i < len && item[i] >= '0' && item[i] <= '9'; i++, digits++) {
            frac_mw += (unsigned long long)(item[i] - '0') * scale;
            scale /= 10; /* digits beyond the milliwatt are ignored */
        }
    }
    if (i != len || digits == 0)
        return cut_err_set(e, "--power-caps: '%.*s' is not a number of watts (want current, all, or e.g. 300,250)",
                           (int)len, item);
    unsigned long long v = whole * 1000 + frac_mw;
    if (v == 0)
        return cut_err_set(e, "--power-caps: '%.*s' W is not a power cap (caps must be > 0 W)", (int)len, item);
    *mw = (unsigned int)v;
    return 0;
}

static int parse_list(const char *arg, cut_powercap_spec *spec, cut_err *e)
{
    const char *p = arg;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            return cut_err_set(e, "--power-caps: empty item in '%s'", arg);
        if (spec->n == CUT_POWERCAP_MAX_LIST)
            return cut_err_set(e, "--power-caps: more than %d caps in '%s'", CUT_POWERCAP_MAX_LIST, arg);
        unsigned int mw = 0;
        if (parse_watts(p, len, &mw, e) != 0)
            return -1;
        for (int j = 0; j < spec->n; j++)
            if (spec->mw[j] == mw)
                return cut_err_set(e, "--power-caps: %.*s W is listed twice in '%s'", (int)len, p, arg);
        spec->mw[spec->n++] = mw;
        if (!end)
            return 0;
        p = end + 1;
    }
}

int cut_powercap_parse(const char *arg, cut_powercap_spec *spec, cut_err *e)
{
    memset(spec, 0, sizeof *spec);
    if (!arg || !*arg)
        return cut_err_set(e, "--power-caps needs a value: current, all, or a list of watts like 300,250,200");
    if (strcmp(arg, "current") == 0) {
        spec->kind = CUT_POWERCAP_CURRENT;
        return 0;
    }
    if (strcmp(arg, "all") == 0) {
        spec->kind = CUT_POWERCAP_ALL;
        return 0;
    }
    spec->kind = CUT_POWERCAP_LIST;
    if (parse_list(arg, spec, e) != 0) {
        spec->n = 0;
        return -1;
    }
    return 0;
}

/* ---- resolution against a GPU ---- */

int cut_powercap_query(const char *uuid, cut_powercap_device *dev, cut_err *e)
{
    memset(dev, 0, sizeof *dev);
    if (!cut_nvml_load(e))
        return cut_err_wrap(e, "power caps need NVML");
    nvmlDevice_t h;
    NVML_CHECK(cut_nvml_device_by_uuid(uuid, &h), e);
    snprintf(dev->uuid, sizeof dev->uuid, "%s", uuid);
    NVML_CHECK(cut_nvml_device_name(h, dev->name, sizeof dev->name), e);
    NVML_CHECK(cut_nvml_power_mgmt_limit_mw(h, &dev->current_mw), e);
    NVML_CHECK(cut_nvml_power_constraints_mw(h, &dev->min_mw, &dev->max_mw), e);
    if (cut_nvml_power_default_mw(h, &dev->default_mw) != NVML_SUCCESS)
        dev->default_mw = 0; /* informative only */
    return 0;
}

static int check_range(unsigned int mw, const cut_powercap_device *dev, cut_err *e)
{
    if (mw >= dev->min_mw && mw <= dev->max_mw)
        return 0;
    return cut_err_set(e, "power cap %g W is outside the range GPU %s (%s) allows: %g W to %g W", mw / 1000.0,
                       dev->uuid, dev->name, dev->min_mw / 1000.0, dev->max_mw / 1000.0);
}

int cut_powercap_resolve(const cut_powercap_spec *spec, const cut_powercap_device *dev, cut_powercap_list *out,
                         cut_err *e)
{
    memset(out, 0, sizeof *out);
    cut_powercap_list l = {0};
    if (spec->kind == CUT_POWERCAP_CURRENT) {
        l.n = 1;
        l.mw[0] = dev->current_mw;
        *out = l;
        return 0; /* the current limit is never changed, so never range-checked */
    }
    if (spec->kind == CUT_POWERCAP_ALL) {
        int caps[CUT_POWERCAP_PER_MODEL];
        if (cut_powercap_caps_for(dev->name, dev->min_mw, dev->max_mw, caps, e) != 0)
            return -1;
        l.n = CUT_POWERCAP_PER_MODEL;
        for (int i = 0; i < l.n; i++)
            l.mw[i] = (unsigned int)caps[i] * 1000u;
    } else {
        l.n = spec->n;
        memcpy(l.mw, spec->mw, sizeof l.mw);
    }
    /* All caps are checked before the session sets any, so a bad list changes nothing. */
    for (int i = 0; i < l.n; i++)
        if (check_range(l.mw[i], dev, e) != 0)
            return -1;
    *out = l;
    return 0;
}
