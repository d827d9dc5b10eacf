/* test_spec_cost.c — the cost verdict of adaptive speculation (spec/cost.h) on fed timings:
 * rounds count only after a plain step was timed; a drafter whose draft token plus extra verified
 * position costs at least 3/4 of a plain step is hopeless after two rounds, one below is not; the
 * smallest times seen decide (a slow first round — a catch-up, a busy machine — does not condemn a
 * drafter whose later rounds are cheap, and one cheap round does not rescue an expensive one);
 * the plain time is a moving average; with the acceptance seen, a drafter whose tokens are not
 * nearly free is judged unpaid when no draft length would beat plain steps, and one costing at
 * least half a plain step already when its first round missed. Deterministic: no
 * clock is read. */
#include <math.h>

#include "spec/cost.h"
#include "test_util.h"

int main(void) {
    steno_spec_cost c;
    steno_spec_cost_init(&c);
    /* before any plain step: nothing recorded */
    steno_spec_cost_round(&c, 0.030, 2, 0.040);
    CHECK(c.rounds == 0 && c.draft < 0 && c.vrow < 0, "a round before a timed plain step was recorded");
    CHECK(!steno_spec_cost_hopeless(&c), "hopeless with nothing measured");

    /* Gemma 3's 6-layer drafter (the git history of docs/PERFORMANCE.md): d 13.7 ms, v 6.6 ms, p 19.5 ms */
    steno_spec_cost_plain(&c, 0.0195);
    CHECK(fabs(c.plain - 0.0195) < 1e-12, "the first plain time is taken as is");
    steno_spec_cost_round(&c, 0.0287, 2, 0.0195 + 2 * 0.0068);
    CHECK(c.rounds == 1 && !steno_spec_cost_hopeless(&c), "hopeless after one round");
    steno_spec_cost_round(&c, 0.0137, 1, 0.0195 + 0.0066);
    CHECK(c.rounds == 2 && steno_spec_cost_hopeless(&c), "d 13.7 + v 6.6 ms against a 19.5 ms step: not hopeless");
    CHECK(fabs(c.draft - 0.0137) < 1e-12 && fabs(c.vrow - 0.0066) < 1e-9, "the smallest times: d %g v %g", c.draft,
          c.vrow);

    /* a cheap drafter (prompt lookup: no draft cost, v a third of a step) never is */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.008);
    for (int i = 0; i < 50; i++) steno_spec_cost_round(&c, 0.00001 * (i % 3), 4, 0.008 + 4 * 0.0027);
    CHECK(c.rounds == 50 && !steno_spec_cost_hopeless(&c), "prompt lookup at v = p / 3 judged hopeless");

    /* just below and at the bound: d + v = 0.74 p and 0.75 p */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.010);
    steno_spec_cost_round(&c, 0.0040, 1, 0.0134);
    steno_spec_cost_round(&c, 0.0040, 1, 0.0134);
    CHECK(!steno_spec_cost_hopeless(&c), "d + v = 0.74 p judged hopeless");
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.010);
    steno_spec_cost_round(&c, 0.0040, 1, 0.01351);
    steno_spec_cost_round(&c, 0.0040, 1, 0.01351);
    CHECK(steno_spec_cost_hopeless(&c), "d + v = 0.751 p not judged hopeless");

    /* a slow first round (a catch-up over 64 skipped tokens) does not condemn a cheap drafter */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.010);
    steno_spec_cost_round(&c, 0.0400, 1, 0.0130);
    steno_spec_cost_round(&c, 0.0080, 4, 0.0100 + 4 * 0.0025);
    CHECK(!steno_spec_cost_hopeless(&c), "d = 2 ms + v = 2.5 ms against 10 ms judged hopeless after a slow round");
    /* a verify pass measured below the plain step (noise) counts as v = 0, not negative */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.010);
    steno_spec_cost_round(&c, 0.0090, 1, 0.0095);
    CHECK(c.vrow == 0.0, "v below zero kept: %g", c.vrow);
    steno_spec_cost_round(&c, 0.0080, 1, 0.0120);
    CHECK(steno_spec_cost_hopeless(&c), "d = 8 ms against a 10 ms step not hopeless");

    /* the plain time: a moving average (0.7 old + 0.3 new) for v, the smallest for the verdict */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.010);
    steno_spec_cost_plain(&c, 0.020);
    CHECK(fabs(c.plain - 0.013) < 1e-12, "plain moving average %g, want 0.013", c.plain);
    CHECK(c.plain_min == 0.010, "smallest plain step %g, want 0.010", c.plain_min);
    /* Whisper base's q8_0 drafter on the dev clips (the git history of docs/PERFORMANCE.md): steps at a window's start took
     * 8.7 ms (the logit screen recomputing many rows), later ones 4.5 ms; d 3.8 + v 1.6 ms is
     * below 3/4 of the first, above 3/4 of the later */
    steno_spec_cost_init(&c);
    for (int i = 0; i < 4; i++) steno_spec_cost_plain(&c, 0.0087 - 0.0001 * i);
    steno_spec_cost_round(&c, 0.0038 * 4, 4, c.plain + 4 * 0.0016);
    steno_spec_cost_round(&c, 0.0040 * 6, 6, c.plain + 6 * 0.0017);
    CHECK(!steno_spec_cost_hopeless(&c), "hopeless against 8.4 ms steps");
    for (int i = 0; i < 20; i++) steno_spec_cost_plain(&c, 0.0080 - 0.00018 * i);
    CHECK(steno_spec_cost_hopeless(&c), "not hopeless against %.2f ms steps", 1e3 * c.plain_min);
    /* unpaid: SmolLM2's 10-layer drafter (d 4.0 ms, the second verified row nearly free against an
     * 8.7 ms step: r = 0.47) with nothing accepted stops after two rounds, not before */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.0087);
    steno_spec_cost_round(&c, 0.0041, 1, 0.0087 + 0.0001);
    steno_spec_cost_outcome(&c, 1, 0);
    CHECK(!steno_spec_cost_unpaid(&c, 8) && !steno_spec_cost_hopeless(&c), "judged after one round");
    steno_spec_cost_round(&c, 0.0040, 1, 0.0087 + 0.00005);
    steno_spec_cost_outcome(&c, 1, 0);
    CHECK(steno_spec_cost_unpaid(&c, 8), "0 of 2 drafts accepted at r = 0.47: not judged unpaid");
    CHECK(!steno_spec_cost_hopeless(&c), "r = 0.47 judged hopeless");
    /* SmolLM2's 10-layer draft model on two threads (the git history of docs/PERFORMANCE.md): d 6.8 ms, v 2.3 ms against a
     * 14.4 ms step (r = 0.63) needs a > 0.63 to pay: a first round that missed stops it, one that
     * held does not (nor does the miss at r = 0.47 above) */
    steno_spec_cost c3;
    steno_spec_cost_init(&c3);
    steno_spec_cost_plain(&c3, 0.0144);
    steno_spec_cost_round(&c3, 0.0068, 1, 0.0144 + 0.0023);
    steno_spec_cost c4 = c3;
    steno_spec_cost_outcome(&c3, 1, 0);
    CHECK(steno_spec_cost_unpaid(&c3, 8), "r = 0.63, the first draft missed: not judged unpaid");
    CHECK(!steno_spec_cost_hopeless(&c3), "r = 0.63 judged hopeless after one round");
    steno_spec_cost_outcome(&c4, 1, 1);
    CHECK(!steno_spec_cost_unpaid(&c4, 8), "r = 0.63, the first draft held: judged unpaid");
    steno_spec_cost_init(&c3); /* a first round of four drafts whose first missed: the same verdict */
    steno_spec_cost_plain(&c3, 0.0144);
    steno_spec_cost_round(&c3, 4 * 0.0068, 4, 0.0144 + 4 * 0.0023);
    steno_spec_cost_outcome(&c3, 4, 0);
    CHECK(c3.drafted == 1 && steno_spec_cost_unpaid(&c3, 8), "4 drafts, the first missed, r = 0.63: not unpaid");
    /* the same costs with most drafts accepted pay: 1 + a + ... + a^k > k r + 1 for some k */
    steno_spec_cost c2 = c;
    c2.drafted = 40;
    c2.accepted = 30; /* a = 0.75: k = 2 gives 2.31 tokens for 1.94 steps */
    CHECK(!steno_spec_cost_unpaid(&c2, 8), "a = 0.75 at r = 0.47 judged unpaid");
    c2.accepted = 10; /* a = 0.25: at most 1.33 tokens for 1.47 steps */
    CHECK(steno_spec_cost_unpaid(&c2, 8), "a = 0.25 at r = 0.47 not judged unpaid");
    /* a lookup drafter (d ~ 0, v = 0.1 p) is never judged on acceptance: its matches come in bursts */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.010);
    for (int i = 0; i < 10; i++) {
        steno_spec_cost_round(&c, 0.00001, 3, 0.010 + 3 * 0.001);
        steno_spec_cost_outcome(&c, 3, 0);
    }
    CHECK(!steno_spec_cost_unpaid(&c, 8) && !steno_spec_cost_hopeless(&c), "a lookup drafter judged after failed rounds");
    /* a round counts the positions checked: up to the first rejection (the later drafts are never
     * compared), all of them when every draft held */
    steno_spec_cost_init(&c);
    steno_spec_cost_plain(&c, 0.010);
    steno_spec_cost_round(&c, 0.020, 8, 0.020);
    steno_spec_cost_outcome(&c, 8, 3);
    CHECK(c.drafted == 4 && c.accepted == 3, "8 drafts, 3 accepted: %d checked, want 4", c.drafted);
    steno_spec_cost_round(&c, 0.020, 8, 0.020);
    steno_spec_cost_outcome(&c, 8, 8);
    CHECK(c.drafted == 12 && c.accepted == 11, "8 of 8 accepted: %d checked in all, want 12", c.drafted);
    /* outcomes of rounds not recorded (no plain step timed yet) are not counted */
    steno_spec_cost_init(&c);
    steno_spec_cost_round(&c, 0.004, 2, 0.012);
    steno_spec_cost_outcome(&c, 2, 0);
    CHECK(c.drafted == 0 && c.accepted == 0, "an unrecorded round's outcome counted");
    return test_summary("test_spec_cost");
}
