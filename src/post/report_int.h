/* cutune — report: functions shared between the files of src/post/ (not part of the public API). */
#ifndef CUTUNE_REPORT_INT_H
#define CUTUNE_REPORT_INT_H

#include "cutune/report.h"

/* Loads the caps of every case of r from kernel_outputs folder kdir (which exists): powercaps.csv is required, a
 * case's caseN/powercapP/results.csv that is absent is a cap not run for that case. */
int cut_report_load_energy(cut_report *r, const char *kdir, cut_err *e);

/* Milliseconds as text for tables and plots: "%.4f", or "-" when v <= 0. buf >= 32 bytes. */
const char *cut_report_ms_text(double v, char *buf, size_t n);

/* 1 if some power cap of c has kernels (the energy plot has something to draw). */
int cut_report_energy_plottable(const cut_report_case *c);

#endif
