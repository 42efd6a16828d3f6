/* Same seed, same deterministic "measurements": do the old and new cut_search propose the same schedules? */
#include "cutune/search.h"
#include "cutune/space.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static double fake_ms(const cut_sched *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 16; i++) { h ^= (uint64_t)(s->k[i] + 7 * s->tpl); h *= 1099511628211ULL; }
    return 0.01 + (double)(h % 100000) / 1e6;
}
int main(void)
{
    cut_conv c = {1, 56, 56, 64, 64, 3, 3, 1, 1};
    cut_devlimits d;
    cut_devlimits_sm90(&d);
    cut_search_opts o;
    cut_search_opts_default(&o);
    o.seed = (uint64_t)atoi(getenv("SEED"));
    cut_search *s = cut_search_new(&c, &d, &o);
    cut_conv prior = {1, 28, 28, 128, 128, 3, 3, 1, 1};
    cut_rng r; cut_rng_seed(&r, 3); int added = 0;
    for (int i = 0; i < 100; i++) { /* a prior of another workload, deterministic */
        cut_sched p;
        if (cut_sched_sample_valid(&prior, &d, (int)(i % 3), &r, &p, 200) == 0)
            added += cut_search_add_prior(s, &prior, &p, fake_ms(&p), -1, 1) == 0;
    }
    fprintf(stderr, "priors added %d\n", added);
    cut_sched b[16];
    double best = 1e9;
    for (int round = 0; round < 12; round++) {
        int n = cut_search_propose(s, 16, b);
        for (int i = 0; i < n; i++) {
            char buf[512];
            cut_sched_describe(&b[i], buf, sizeof buf);
            (void)buf;
            cut_search_observe(s, &b[i], fake_ms(&b[i]), -1);
            if (fake_ms(&b[i]) < best)
                best = fake_ms(&b[i]);
        }
    }
    cut_search_free(s);
    printf("%.6f\n", best);
    return 0;
}
