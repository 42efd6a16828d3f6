/* cutune — --idle-other-gpus in the CLI (see idle_cli.h). */
#include "cli/idle_cli.h"

#include "cli/args.h"
#include "cutune/powercap.h"

#include <stdio.h>
#include <string.h>

int cut_cli_idle_begin(cut_cli_idle *idle, const char *backend, int gpu, const char *nvml_uuid, cut_err *e)
{
    char uuid[96], dir[4096];
    idle->s = NULL;
    if (cut_cli_energy_uuid(backend, gpu, nvml_uuid, uuid, sizeof uuid, e) != 0)
        return cut_err_wrap(e, "--idle-other-gpus: which GPU is measured is unknown");
    if (cut_powercap_state_dir(dir, sizeof dir, e) != 0 || cut_idle_begin(uuid, dir, &idle->s, e) != 0)
        return cut_err_wrap(e, "--idle-other-gpus");
    int n = cut_idle_count(idle->s);
    fprintf(stderr, "%s: --idle-other-gpus: %d other GPU(s) set to compute mode PROHIBITED for this run (measured: %s)%s",
            idle->cmd, n, uuid, n ? ":" : "");
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s %s (%s, was %s)", i ? "," : "", cut_idle_uuid(idle->s, i), cut_idle_name(idle->s, i),
                cut_idle_original(idle->s, i));
    fprintf(stderr, "\n");
    return 0;
}

int cut_cli_idle_end(cut_cli_idle *idle, int code)
{
    if (!idle->s)
        return code;
    int n = cut_idle_count(idle->s);
    cut_err e = {{0}};
    int rc = cut_idle_end(idle->s, &e);
    idle->s = NULL;
    if (rc != 0) {
        fprintf(stderr, "%s: --idle-other-gpus: %s\n", idle->cmd, e.msg);
        return CUT_EXIT_FAIL;
    }
    fprintf(stderr, "%s: --idle-other-gpus: restored the original compute mode of %d GPU(s)\n", idle->cmd, n);
    return code;
}
