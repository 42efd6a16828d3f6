/* cutune — the measurement worker as an executable of its own: `cutune-worker [__worker] <device>|emu:<dir>|compile
 * <in_fd> <out_fd>` runs what `cutune __worker` runs (cmd_worker.c; `compile`: the compile runner's compiles). Programs that use cutune as a library start it
 * through the runners (cut_worker_path finds it), which pass the `__worker` word as they do to the cutune CLI. */
#include "cli/cli.h"

#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "__worker") == 0) { /* as the runners start it: the word, then the arguments */
        argc--;
        argv++;
    }
    return cut_cmd_worker(argc, argv);
}
