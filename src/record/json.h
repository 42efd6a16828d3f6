/* cutune — JSON helpers shared by the conv and GEMM record formats (internal; src/record/record.c).
 *
 * Writers: strings are cleaned to valid UTF-8; doubles get the fewest digits that read back exactly, non-finite
 * ones are written as null. Readers: strict types, one sentence naming the field ("prefix" + key) on failure. */
#ifndef CUTUNE_RECORD_JSON_H
#define CUTUNE_RECORD_JSON_H

#include "cutune/common.h"
#include "cutune/measure.h"

#include <cjson/cJSON.h>
#include <stddef.h>

void cut_rec_add_str(cJSON *o, const char *key, const char *v);
void cut_rec_add_num(cJSON *o, const char *key, double v);
/* The member key of o, or NULL with "record lacks the required field ..." in e. */
const cJSON *cut_rec_field(const cJSON *o, const char *prefix, const char *key, cut_err *e);
int cut_rec_get_int(const cJSON *o, const char *prefix, const char *key, int *out, cut_err *e);
/* A finite number, or null (stored as dflt). */
int cut_rec_get_num(const cJSON *o, const char *prefix, const char *key, double dflt, double *out, cut_err *e);
/* Absent or null: 0; else a finite number >= 0. */
int cut_rec_get_opt_num(const cJSON *o, const char *key, double *out, cut_err *e);
int cut_rec_get_str(const cJSON *o, const char *prefix, const char *key, char *buf, size_t n, cut_err *e);
void cut_rec_copy_utf8_trunc(char *buf, size_t n, const char *s);
/* One record line: a JSON value of line[0..len) with nothing after it but white space. The root (caller frees with
 * cJSON_Delete), or NULL with "record is not valid JSON (error near byte N)" or "record has trailing text ..." in e. */
cJSON *cut_rec_parse_line(const char *line, size_t len, cut_err *e);
/* "backend" and the "gpu" object {name, uuid, driver, driver_version, sm_clock_mhz, power_limit_w} of a record. */
void cut_rec_add_env(cJSON *root, const cut_measure_env *env);
int cut_rec_get_env(const cJSON *root, cut_measure_env *env, cut_err *e);
/* "status" (a cut_status name) and the optional "error" string (truncated into err_buf). */
int cut_rec_get_status(const cJSON *root, cut_status *status, char *err_buf, size_t err_len, cut_err *e);

/* The line's version (min_version .. CUT_TRIAL_VERSION) into *version and, from version 2 on, that its "op" is op:
 * 0, or -1 with a sentence naming the version or the op. */
int cut_rec_get_version(const cJSON *root, const char *op, int min_version, int *version, cut_err *e);
/* The parsed JSON file at path, or NULL with "<path>: not valid JSON" (or the read error) in e. Caller deletes it. */
cJSON *cut_rec_read_json_file(const char *path, cut_err *e);

#endif
