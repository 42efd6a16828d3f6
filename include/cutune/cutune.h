/* cutune — the umbrella header: every public header of the library, for a program that uses cutune as a library
 * (`#include <cutune/cutune.h>`, `pkg-config --cflags --libs cutune`). Each header has its own extern "C" guards,
 * so this one compiles as C11 and as C++. The library's diagnostics go through the log callback (cutune/log.h);
 * the GPU and emulation runners start the measurement worker cut_worker_path finds (cutune/measure.h). */
#ifndef CUTUNE_CUTUNE_H
#define CUTUNE_CUTUNE_H

#include "cutune/codegen.h"
#include "cutune/common.h"
#include "cutune/compile.h"
#include "cutune/costmodel.h"
#include "cutune/devlimits.h"
#include "cutune/dist.h"
#include "cutune/emu.h"
#include "cutune/energy.h"
#include "cutune/export.h"
#include "cutune/gemm.h"
#include "cutune/gemm_record.h"
#include "cutune/gemm_space.h"
#include "cutune/gemm_tune.h"
#include "cutune/gpu.h"
#include "cutune/half.h"
#include "cutune/idle.h"
#include "cutune/kspec.h"
#include "cutune/kstate.h"
#include "cutune/work.h"
#include "cutune/log.h"
#include "cutune/lookup.h"
#include "cutune/mcgs.h"
#include "cutune/ncu.h"
#include "cutune/llm.h"
#include "cutune/llm_gen.h"
#include "cutune/op.h"
#include "cutune/measure.h"
#include "cutune/optimize.h"
#include "cutune/powercap.h"
#include "cutune/record.h"
#include "cutune/report.h"
#include "cutune/search.h"
#include "cutune/space.h"
#include "cutune/strategy.h"
#include "cutune/task.h"
#include "cutune/tasksched.h"
#include "cutune/tune.h"
#include "cutune/util.h"
#include "cutune/workload.h"

#endif
