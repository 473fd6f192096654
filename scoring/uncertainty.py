"""How sure are the standings? Bootstrap intervals for the scores of a set.

A set's scores are averages over its m users (2000 in a contest), so they
are estimates: another draw of virtual users would move them a little.
Resampling the users of a set with replacement (the nonparametric
bootstrap) gives replicates of s_U, s_I,min and s_T,min, and from those:

- a percentile interval for each score (:func:`interval`);
- the probability that two adjacent places in a ranking would swap
  (:func:`swap_probabilities`), so that places decided by noise are flagged;
- how often an award would go to the same team (:func:`stability`).

Everything is a matrix product: the resample is a (B, m) matrix of counts
(how often each user is drawn in replicate b), and every per-user score
vector is reduced by one product with it; no Python loop runs per replicate
or per user. Replicates are seeded, so a results job reproduces its numbers.

All attacks on a set are evaluated on the *same* resample of its users (the
minimum is taken inside each replicate), and different sets have different
users, so their resamples are independent.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import scores
from .results import AWARD_RULES, IDP, LEADERBOARD_TOTAL, OVERALL, TRP, SetRef, leaderboard_name
from .seeds import derived_seed
from .vocabulary import AttackKind

REIDENTIFICATION, TRACE_INFERENCE = AttackKind.REIDENTIFICATION, AttackKind.TRACE_INFERENCE

#: Replicates per set (the issue asks for at least 1000).
REPLICATES = 1000
#: Two-sided level of the intervals.
LEVEL = 0.95
#: A place is "statistically tied" with the next when the swap probability is at least this.
TIE_PROBABILITY = 0.05


def resample_counts(m: int, replicates: int = REPLICATES, *, seed: int) -> np.ndarray:
    """(replicates, m) float64: how many times each of m users is drawn in each replicate (rows sum to m)."""
    if m < 1:
        raise ValueError("a bootstrap needs at least one user")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, m, size=(replicates, m))
    offsets = (np.arange(replicates, dtype=np.int64) * m)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=replicates * m).reshape(replicates, m).astype(np.float64)


@dataclass(frozen=True)
class SetReplicates:
    """Bootstrap replicates of one set's scores.

    Attributes:
        s_u: (B,) utility; None if no per-user utility was given.
        s_i_min: (B,) minimum s_I over the set's re-identification attacks; None if none.
        s_t_min: (B,) minimum s_T over its trace-inference attacks; None if none.
    """

    s_u: np.ndarray | None
    s_i_min: np.ndarray | None
    s_t_min: np.ndarray | None


def bootstrap_set(*, m: int, seed: int, replicates: int = REPLICATES, utility: np.ndarray | None = None,
                  reidentified: np.ndarray | None = None, trace_num: np.ndarray | None = None,
                  trace_den: np.ndarray | None = None) -> SetReplicates:
    """Replicates of one set's scores from per-user values.

    Args:
        m: users in the set.
        seed: the resample's seed.
        utility: (m,) each user's mean utility (s_U is their mean: every user has L events).
        reidentified: (A_i, m) bool, attack a named user i correctly (s_I = 1 - mean).
        trace_num: (A_t, m) each user's hospital-weighted sum of min(1, d/lambda_T).
        trace_den: (m,) each user's sum of weights (s_T = sum num / sum den).
    Returns:
        :class:`SetReplicates`; a kind with no attack (or no utility) is None.
    """
    w = resample_counts(m, replicates, seed=seed)
    s_u = s_i = s_t = None
    if utility is not None:
        s_u = w @ np.asarray(utility, dtype=np.float64) / m
    if reidentified is not None and len(reidentified):
        hits = np.atleast_2d(np.asarray(reidentified, dtype=np.float64))
        s_i = (1.0 - (w @ hits.T) / m).min(axis=1)
    if trace_num is not None and len(trace_num):
        if trace_den is None:
            raise ValueError("trace_num needs trace_den (each user's sum of event weights)")
        num = np.atleast_2d(np.asarray(trace_num, dtype=np.float64))
        s_t = ((w @ num.T) / (w @ np.asarray(trace_den, dtype=np.float64))[:, None]).min(axis=1)
    return SetReplicates(s_u, s_i, s_t)


def interval(samples: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval (lo, hi) of bootstrap replicates at two-sided ``level``."""
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.asarray(samples, dtype=np.float64), [a, 1.0 - a])
    return float(lo), float(hi)


def swap_probabilities(replicates: np.ndarray, *, higher_is_better: bool = True) -> np.ndarray:
    """Probability that each adjacent pair of a ranking would swap under resampling.

    Args:
        replicates: (n, B) replicates of the ranked quantity, rows in standing
            order (place 1 first).
        higher_is_better: True for anonymizer rankings, False for attacker sums.
    Returns:
        (n-1,) float64: entry k is the share of replicates in which place k+2
        beats place k+1 (an exact tie counts one half).
    """
    r = np.asarray(replicates, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"replicates must be (n, B), got shape {r.shape}")
    upper, lower = r[:-1], r[1:]
    beats = lower > upper if higher_is_better else lower < upper
    return (beats.mean(axis=1) + 0.5 * (lower == upper).mean(axis=1)).astype(np.float64)


def stability(replicates: np.ndarray, winner: int, *, higher_is_better: bool = True) -> float:
    """Share of replicates in which candidate ``winner`` (a row of (n, B) ``replicates``) is strictly best.

    Ties inside a replicate are shared equally among the tied candidates, so a
    dead heat of two candidates gives each one half.
    """
    r = np.asarray(replicates, dtype=np.float64)
    best = r.max(axis=0) if higher_is_better else r.min(axis=0)
    at_best = r == best
    return float((at_best[winner] / at_best.sum(axis=0)).mean())


# --------------------------------------------------------------------------
# per-user parts of the scores, as the platform stores them per score row
# --------------------------------------------------------------------------
def per_user_utility(per_event: np.ndarray) -> dict:
    """{"num": (m,)} each user's mean utility from ``scores.utility_per_event`` (m, L): s_U = mean(num)."""
    return {"num": np.asarray(per_event, dtype=np.float64).mean(axis=1)}


def per_user_attack(kind: str, grid, estimate, *, true_users=None, truth=None, lambda_t: float = 2.0,
                    hospital_weight: float = 10.0) -> dict:
    """Per-user parts of an attack's score, users in ascending user id.

    Re-identification: ``{"num": (m,)}`` 1 where the user's pseudonym was not
    named correctly, so s_I = mean(num) (``true_users``: the ID table in
    ascending pseudonym order). Trace inference: ``{"num": (m,), "den": (m,)}``
    each user's hospital-weighted sum of min(1, d/lambda_T) and sum of weights,
    so s_T = sum(num) / sum(den) (``truth``: the original traces O).
    """
    if kind == REIDENTIFICATION:
        f = np.asarray(true_users, dtype=np.int64)
        missed = (np.asarray(estimate, dtype=np.int64) != f).astype(np.float64)
        return {"num": missed[np.argsort(f, kind="stable")]}
    if kind == TRACE_INFERENCE:
        per_event = scores.trace_inference_per_event(grid, truth, estimate, lambda_t=lambda_t)
        w = grid.region_weights(hospital_weight)[truth.regions]
        return {"num": (w * per_event).sum(axis=1), "den": w.sum(axis=1)}
    raise ValueError(f"{kind!r} is not an attack kind")


def replicate_scores(counts: np.ndarray, num: np.ndarray, den: np.ndarray | None = None) -> np.ndarray:
    """(k, B) replicates of k ratio scores sum(num)/sum(den) under the (B, m) resample ``counts``.

    ``num``: (k, m) per-user numerators; ``den``: (m,) per-user denominators
    (None: every user weighs 1, the score is a mean).
    """
    num = np.atleast_2d(np.asarray(num, dtype=np.float64))
    total = counts @ (np.ones(counts.shape[1]) if den is None else np.asarray(den, dtype=np.float64))
    return (num @ counts.T) / total[None, :]


# --------------------------------------------------------------------------
# the whole results: intervals per set, swaps per leaderboard, award stability
# --------------------------------------------------------------------------
def results_uncertainty(results, utility_vectors: dict, attack_vectors: list, *, seed: int,
                        replicates: int = REPLICATES) -> dict:
    """Bootstrap every published set, then every ranking of ``results`` (a ``scoring.results.Results``).

    Args:
        utility_vectors: SetRef -> per-user dict of its s_U (:func:`per_user_utility`); a set
            without one keeps its s_U fixed (the benchmark: 1).
        attack_vectors: (AttackRow, per-user dict or None) for every attack row the results
            were computed from; a row without a vector keeps its score fixed in every replicate.
        seed: the base seed; set ``k`` is resampled with ``derived_seed(seed, k)``.
    Returns a JSON-ready dict: ``sets`` (key -> interval of s_u, s_i_min, s_t_min),
    ``leaderboards`` (name -> per place: interval and the probability of swapping with
    the next place, ``tied`` when at least :data:`TIE_PROBABILITY`), ``awards``
    (``name-place`` -> share of replicates in which the winner holds that place).

    The rankings are recomputed per replicate by the rules of ``scoring.results``
    (SPEC 9): a set's minimum over all counted attempts, 0 for invalid or unsubmitted
    sets, 1 for a valid set nobody attacked in a kind; per round the overall and the
    attacker sums; combined with the round weights.
    """
    B = int(replicates)
    rounds = [r for r, _ in results.round_weights]
    weights = dict(results.round_weights)
    by_set: dict = {}
    for row, vec in attack_vectors:
        by_set.setdefault(row.set, []).append((row, vec))
    set_reps: dict = {}   # SetRef -> {"s_u", "s_i_min", "s_t_min"}: (B,)
    best_reps: dict = {}  # (attacker, SetRef, kind) -> (B,) best attempt
    intervals: dict = {}
    for s in results.sets:
        ref = s.set
        rows = [(row, vec) for row, vec in by_set.get(ref, [])
                if not (isinstance(row.attacker, int) and row.attacker == ref.team)]
        m = next((len(v["num"]) for v in [utility_vectors.get(ref)] + [v for _, v in rows] if v is not None), None)
        counts = resample_counts(m, B, seed=derived_seed(seed, ref.key)) if m else None
        u = utility_vectors.get(ref)
        reps = {"s_u": (replicate_scores(counts, u["num"])[0] if u is not None and counts is not None
                        else np.full(B, s.s_u))}
        for kind, field in ((REIDENTIFICATION, "s_i_min"), (TRACE_INFERENCE, "s_t_min")):
            mine = [(row, vec) for row, vec in rows if row.kind == kind]
            if not s.valid:
                reps[field] = np.zeros(B)
                continue
            per_row = _row_replicates(counts, mine, B)
            for (row, _), r in zip(mine, per_row, strict=True):
                key = (row.attacker, ref, kind)
                best_reps[key] = np.minimum(best_reps[key], r) if key in best_reps else r
            reps[field] = np.min(per_row, axis=0) if per_row else np.ones(B)
        set_reps[ref] = reps
        intervals[ref.key] = {k: interval(v) for k, v in reps.items()}

    # per-round and weighted team values, replicate-wise (scoring.results._team_rounds/_weighted_totals)
    teams = list(results.teams)
    zero = np.zeros(B)
    round_values: dict = {}
    for r in rounds:
        round_sets = [s for s in results.sets if s.set.round == r]
        for t in teams:
            idp, trp = set_reps.get(SetRef(r, t, IDP)), set_reps.get(SetRef(r, t, TRP))
            s_i = idp["s_i_min"] if idp is not None else zero
            s_t = trp["s_t_min"] if trp is not None else zero
            targets = [s.set for s in round_sets if s.set.team != t and s.valid]
            sums = {kind: sum((best_reps.get((t, ref, kind), np.ones(B)) for ref in targets), zero)
                    for kind in (REIDENTIFICATION, TRACE_INFERENCE)}
            round_values[(r, t)] = {"s_i_min": s_i, "s_t_min": s_t, "overall": s_i + s_t,
                                    "attack_sum_i": sums[REIDENTIFICATION], "attack_sum_t": sums[TRACE_INFERENCE]}
    totals = {t: {k: sum((weights[r] * round_values[(r, t)][k] for r in rounds), zero)
                  for k in ("s_i_min", "s_t_min", "overall", "attack_sum_i", "attack_sum_t")} for t in teams}

    def board_reps(name: str, team: int) -> np.ndarray:
        if name == LEADERBOARD_TOTAL:
            return totals[team]["overall"]
        for r in rounds:
            if name == leaderboard_name(r):
                return round_values[(r, team)]["overall"]
            for c, field in ((IDP, "s_i_min"), (TRP, "s_t_min")):
                if name == leaderboard_name(r, c):
                    return set_reps[SetRef(r, team, c)][field]
        raise KeyError(name)

    boards = {}
    for name, rows in results.leaderboards:
        if not rows:
            boards[name] = []
            continue
        reps = np.stack([board_reps(name, st.team) for st in rows])
        swap = swap_probabilities(reps) if len(rows) > 1 else np.zeros(0)
        boards[name] = [{"team": st.team, "interval": interval(reps[i]),
                         "swap_next": float(swap[i]) if i < len(swap) else None,
                         "tied_next": bool(i < len(swap) and swap[i] >= TIE_PROBABILITY)}
                        for i, st in enumerate(rows)]

    rules = {rule.name: rule for rule in AWARD_RULES[results.variant]}
    awards = {}
    for a in results.awards:
        rule = rules[a.award]
        pool = [st.team for st in results.standing(a.award)]
        reps = np.stack([totals[t][rule.value] for t in pool])
        i = pool.index(a.team)
        if a.award == OVERALL and a.place > 1:
            awards[f"{a.award}-{a.place}"] = place_probability(reps, i, a.place, higher_is_better=rule.higher_is_better)
        else:
            awards[f"{a.award}-{a.place}"] = stability(reps, i, higher_is_better=rule.higher_is_better)
    return {"replicates": B, "level": LEVEL, "tie_probability": TIE_PROBABILITY, "sets": intervals,
            "leaderboards": boards, "awards": awards}


def _row_replicates(counts: np.ndarray | None, rows: list, B: int) -> list[np.ndarray]:
    """(B,) replicates of each (AttackRow, parts) row of one set and kind: all rows with parts in two
    matrix products (numerators and denominators), a row without parts fixed at its score."""
    out = [np.full(B, float(row.score)) for row, _ in rows]
    have = [i for i, (_, vec) in enumerate(rows) if vec is not None]
    if have and counts is not None:
        ones = np.ones(counts.shape[1])
        num = np.stack([rows[i][1]["num"] for i in have])
        den = np.stack([rows[i][1].get("den", ones) for i in have])
        reps = (num @ counts.T) / (den @ counts.T)
        for j, i in enumerate(have):
            out[i] = reps[j]
    return out


def place_probability(replicates: np.ndarray, index: int, place: int, *, higher_is_better: bool = True) -> float:
    """Share of replicates in which candidate ``index`` of (n, B) ``replicates`` ranks exactly ``place``
    (1 + the number of candidates strictly better in that replicate)."""
    r = np.asarray(replicates, dtype=np.float64)
    better = (r > r[index]) if higher_is_better else (r < r[index])
    return float(((better.sum(axis=0) + 1) == place).mean())
