/* cost.h — whether a drafter can pay at all: the measured costs behind the adaptive draft
 * length of LLM (llm/spec/speculative.c) and Whisper (whisper/decoder/spec/spec.c) speculative decoding.
 *
 * A round of k drafts costs k draft tokens and one target pass over k + 1 positions; plain
 * decoding costs one target step per token. With d the seconds of a draft token, v the extra
 * seconds of one more verified position and p those of a plain step, a round emits at most k + 1
 * tokens for k·(d + v) + p seconds, so the speed-up is at most (k + 1)·p / (k·(d + v) + p) even at
 * full acceptance, and at a realistic one (0.9 accepted per draft, k = 8: 6.1 tokens a round) a
 * drafter with d + v ≥ 3/4 p loses (with every draft accepted it gains at most 1.29× at k = 8).
 * Measured (the git history of docs/PERFORMANCE.md): Gemma 3's 6-layer drafter d = 13.7 ms and v = 6.6 ms
 * against p = 19.5 ms (its 262 144-row output head is most of every step); Whisper base's q8_0
 * drafter 3.8 + 1.6 ms against 4.5 ms plain steps on one thread. The adaptive length stops such a
 * drafter for the rest of the request once its rounds have shown it (a draft length's first
 * rounds still run: the machine decides, not a table): after two rounds, or for a model drafter
 * already after a first round whose drafts all missed when d + v ≥ p/2 (such a drafter pays only if
 * it agrees more often than not — 1 + a + … + a^k > k·r + 1 needs a > r — so a first miss is the
 * likelier outcome for one that cannot pay; measured: SmolLM2's 10-layer draft model, d + v =
 * 0.63 p on two threads, each failed probe round 1.6 % of a 36-token answer). Hopelessness waits
 * for two rounds whatever the first showed: a first verify pass can be slow for reasons of its
 * own (buffers touched the first time, a busy machine), and prompt lookup, judged by costs only,
 * would lose its whole request to one such pass.
 *
 * d, v and p are the smallest values seen: a round that first catches the drafter up over skipped
 * tokens, or runs while the machine is busy, costs more, and so does a plain Whisper step where the
 * model is unsure (its logit screen then recomputes more rows exactly: base's steps at a window's
 * start took 8.7 ms, later ones 4.5 ms); each part's cheapest is its own cost. v is taken against
 * the moving average of plain steps (the step at hand), which errs towards a smaller v. Timing
 * steers the draft length only, never a token: outputs are identical either way. Not
 * thread-safe: one per decoding loop. */
#ifndef STENO_CORE_SPEC_COST_H
#define STENO_CORE_SPEC_COST_H

/* d + v at or above this fraction of p: the drafter does not pay */
#define STENO_SPEC_COST_HOPELESS 0.75
/* rounds measured before the verdict */
#define STENO_SPEC_COST_ROUNDS 2
/* rounds of acceptance seen before steno_spec_cost_unpaid judges */
#define STENO_SPEC_COST_EVIDENCE 2
/* d + v below this fraction of p: drafts nearly free, never judged unpaid */
#define STENO_SPEC_COST_FREE 0.25
/* d + v at or above this fraction of p, and the first round's drafts all missed: judged unpaid
 * after that round */
#define STENO_SPEC_COST_FIRST_MISS 0.5

typedef struct {
    double plain; /* seconds per plain target step (moving average); < 0: none yet */
    double plain_min; /* the smallest plain step seen; < 0: none yet */
    double draft; /* the smallest seconds per draft token seen; < 0: none yet */
    double vrow;  /* the smallest extra seconds per verified draft position seen; < 0: none yet */
    int rounds;   /* rounds recorded (each needs a plain step's time first) */
    int drafted, accepted; /* draft positions checked and accepted in those rounds (the drafts after a
                              round's first rejection are never checked, so they do not count:
                              counting them would bias the acceptance low) */
} steno_spec_cost;

static inline void steno_spec_cost_init(steno_spec_cost *c) {
    c->plain = c->plain_min = c->draft = c->vrow = -1.0;
    c->rounds = c->drafted = c->accepted = 0;
}

/** A plain target step (one position) took sec seconds. */
static inline void steno_spec_cost_plain(steno_spec_cost *c, double sec) {
    c->plain = c->plain < 0 ? sec : 0.7 * c->plain + 0.3 * sec;
    if (c->plain_min < 0 || sec < c->plain_min) c->plain_min = sec;
}

/** A round: draft_sec seconds to draft ng tokens (0 for a lookup drafter), verify_sec for the target's
 *  pass over ng + 1 positions. Ignored before a plain step was timed or without drafts. */
static inline void steno_spec_cost_round(steno_spec_cost *c, double draft_sec, int ng, double verify_sec) {
    if (ng <= 0 || c->plain < 0) return;
    const double d = draft_sec / ng, v = (verify_sec - c->plain) / ng;
    if (c->draft < 0 || d < c->draft) c->draft = d;
    if (c->vrow < 0 || v < c->vrow) c->vrow = v > 0 ? v : 0;
    c->rounds++;
}

/** 1 when the measured drafter cannot pay (d + v ≥ STENO_SPEC_COST_HOPELESS · p). */
static inline int steno_spec_cost_hopeless(const steno_spec_cost *c) {
    return c->rounds >= STENO_SPEC_COST_ROUNDS && c->draft + c->vrow >= STENO_SPEC_COST_HOPELESS * c->plain_min;
}

/** The outcome of the round last recorded: accepted of its ng drafts (positions accepted + 1
 *  checked when one was rejected, ng when none was). */
static inline void steno_spec_cost_outcome(steno_spec_cost *c, int ng, int accepted) {
    if (c->rounds <= 0 || ng <= 0) return;
    c->drafted += accepted < ng ? accepted + 1 : ng;
    c->accepted += accepted;
}

/** 1 when, at the acceptance seen (a = accepted / checked per draft position), no draft length
 *  1..kmax pays: a round of k drafts emits 1 + a + … + a^k tokens on average and costs
 *  k·(d + v) + p. After STENO_SPEC_COST_EVIDENCE rounds, and only where drafts are not nearly free
 *  (d + v ≥ STENO_SPEC_COST_FREE · p); after the first round already when all its drafts missed
 *  and d + v ≥ STENO_SPEC_COST_FIRST_MISS · p. For model drafters only: a lookup drafter's acceptance comes
 *  in bursts (a text starts being repeated; the code workload's second copy of a function), so
 *  its early misses say nothing about later rounds (measured: Gemma 3's summary fell from 1.82×
 *  to 1.07× when its lookups were judged this way). */
static inline int steno_spec_cost_unpaid(const steno_spec_cost *c, int kmax) {
    if (c->rounds < 1 || c->drafted <= 0 || c->plain_min <= 0) return 0;
    const double r = (c->draft + c->vrow) / c->plain_min, a = (double)c->accepted / c->drafted;
    if (c->rounds < STENO_SPEC_COST_EVIDENCE) return c->accepted == 0 && r >= STENO_SPEC_COST_FIRST_MISS;
    if (r < STENO_SPEC_COST_FREE) return 0;
    double e = 1.0, ak = 1.0;
    for (int k = 1; k <= kmax; k++) {
        ak *= a;
        e += ak;
        if (e > k * r + 1.0) return 0;
    }
    return 1;
}

/** 1 when drafting should stop for good: hopeless, or (for a drafter whose acceptance is its own,
 *  judge_acceptance: model, layers and quant drafters; not prompt lookup) unpaid. */
static inline int steno_spec_cost_stop(const steno_spec_cost *c, int kmax, int judge_acceptance) {
    return steno_spec_cost_hopeless(c) || (judge_acceptance && steno_spec_cost_unpaid(c, kmax));
}

#endif
