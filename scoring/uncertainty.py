"""How sure are the standings? Intervals that cover, swap probabilities, award stability.

A set's scores are averages over its m users (2000 in a contest), so they
are estimates of the population the users were drawn from: another draw of
virtual users would move them a little. This module says how much, from the
per-user parts of every score (:func:`per_user_utility`, :func:`per_user_attack`).

The ranked quantities are minima and sums of minima (rules §9), and the
percentile interval of a bootstrapped minimum does not cover: when several
attacks on a set score alike (20 teams attack every set, so that is the normal
case) the resampled minimum is biased low and the truth lies above the interval
(measured at nominal 95%: 0.88 for 2 tied attacks, 0.46 for 5, 0.00 for 15).
So the intervals are built from per-attack intervals instead
(:func:`attack_bounds`, :func:`minimum_interval`):

- each attack's score sum(num)/sum(den) gets an Agresti-Coull centre and standard error
  (:func:`boundary_estimates`: z^2/2 pseudo-users at 0 and at 1), which hold where a score sits
  near or at 0 or 1 (plug-in standard errors there gave 0.05-0.89 coverage, and a zero width at
  exactly 0 or 1);
- the lower bound of a minimum is the lowest per-attack lower bound: it lies below the truth whenever
  the attack with the lowest true score has its own lower bound below its truth. This is the least
  favourable case (one attack far below the others), and the data cannot tell it from ties: a lower
  bound that assumes the attacks that look tied are tied missed the truth in 19% of sets with one
  attack 2 standard errors below 19 others. So with many independent tied attacks the interval stays
  about 2.2 times as wide as the oracle's (the width the estimated minimum's own sampling distribution
  needs), whatever the upper bound does;
- the upper bound is the lowest per-attack upper bound at the max-type multiplier of the attacks' joint
  distribution (:func:`joint_normal`, :func:`sum_constant`): all attacks of a set see the same users,
  so correlated attacks need less than Bonferroni's z(alpha/(2A)); only the attacks that can be the
  minimum count (estimate - 4 se below the lowest estimate + 4 se);
- the two sides miss in opposite cases (the upper bound when attacks tie, the lower bound when one lies
  far below), so alpha = 5% is shared between them as the joint distribution allows
  (:func:`split_tails`) instead of 2.5% each: one attack keeps z(alpha/2) on both sides;
- a leaderboard value is a weighted sum of set minima (the round's overall: the IDP set's s_I,min plus
  the TRP set's s_T,min; the weighted total: both over the rounds at their weights): one joint bound
  for the sum (:func:`sum_bounds`), each term's share of it by its weight times its standard error
  (alpha split n ways was too wide; equal shares with the 2019 weights 0.1 and 0.9 covered 0.84).

Every ranked quantity is non-decreasing in every attack score, so feeding the
per-attack bounds through the platform's own rules (``scoring.results.rule_values``)
gives the bounds of every ranked quantity. The same call carries the stored scores
(column 0, the published values) and B bootstrap replicates (resampling the users
of each set with replacement, every attack of a set on the same resample), which
give the swap probabilities (:func:`swap_probabilities`) and how often an award
goes to the same team (:func:`stability`). No Python loop runs per user or per
replicate; replicates are seeded, so a results job reproduces its numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy.special import ndtr, ndtri

from . import scores
from .results import (
    AWARD_RULES,
    IDP,
    LEADERBOARD_TOTAL,
    OVERALL,
    TRP,
    RuleValues,
    SetRef,
    leaderboard_name,
    not_counted_reason,
    rule_values,
)
from .seeds import derived_seed
from .vocabulary import AttackKind

REIDENTIFICATION, TRACE_INFERENCE = AttackKind.REIDENTIFICATION, AttackKind.TRACE_INFERENCE

#: Replicates per set (the issue asks for at least 1000).
REPLICATES = 1000
#: Two-sided level of the intervals.
LEVEL = 0.95
#: A place is "statistically tied" with the next when their swap probability is at least this.
TIE_PROBABILITY = 0.05
#: How the intervals are built, as the snapshot and the leaderboard's help text state it.
METHOD = "per-attack-bounds"
#: Standard-normal draws of the attacks' joint distribution behind each simultaneous multiplier.
JOINT_DRAWS = 4000


def resample_counts(m: int, replicates: int = REPLICATES, *, seed: int) -> np.ndarray:
    """(replicates, m) float64: how many times each of m users is drawn in each replicate (rows sum to m)."""
    if m < 1:
        raise ValueError("a bootstrap needs at least one user")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, m, size=(replicates, m))
    offsets = (np.arange(replicates, dtype=np.int64) * m)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=replicates * m).reshape(replicates, m).astype(np.float64)


def ratio_estimates(num, den=None) -> tuple[np.ndarray, np.ndarray]:
    """Scores sum(num)/sum(den) and their plug-in standard errors, over the last axis (the users).

    Args:
        num: (..., m) per-user numerators (1 - hit for s_I, weighted distances for s_T, utility for s_U).
        den: (..., m) per-user denominators, broadcast against ``num``; None: every user weighs 1.
    Returns:
        (estimate, se), each (...,): se = sqrt(sum((num - estimate * den)^2)) / sum(den), the
        delta-method standard error of a ratio, which the bootstrap's standard error tends to.
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.ones(num.shape[-1]) if den is None else np.asarray(den, dtype=np.float64)
    est = _scores(num, den)
    resid = num - est[..., None] * den
    return est, np.sqrt((resid * resid).sum(axis=-1)) / den.sum(axis=-1)


def _scores(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """(...,) the scores sum(num) / sum(den) over the last axis (float64 arrays broadcast together)."""
    return num.sum(axis=-1) / den.sum(axis=-1)


def _z(tail: float) -> float:
    """The standard normal quantile with ``tail`` above it."""
    return NormalDist().inv_cdf(1.0 - tail)


def boundary_estimates(num, den=None, *, z) -> tuple[np.ndarray, np.ndarray]:
    """Centres and standard errors of scores sum(num)/sum(den) that hold at 0 and 1 (Agresti-Coull).

    Every user's part num/den lies in [0, 1]. The sample gets z^2/2 pseudo-users scoring 0 and z^2/2
    scoring 1, each weighing the mean denominator; for s_I (den 1) this is the Agresti-Coull
    interval, whose centre +- z se covers a proportion near 0 and 1 where the plug-in standard error
    (0 for a score of exactly 0 or 1) does not. With 2000 users the pseudo-users move a mid-range
    score by about 1e-4.

    Args:
        num: (..., m) per-user numerators; den: (..., m) denominators broadcast against ``num``
            (None: every user weighs 1).
        z: the normal quantile the interval is built with (scalar or broadcast against (...)).
    Returns:
        (centre, se), each (...,), in score units.
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.ones(num.shape[-1]) if den is None else np.asarray(den, dtype=np.float64)
    den = np.broadcast_to(den, num.shape)
    total = den.sum(axis=-1)
    pseudo = np.asarray(z, dtype=np.float64) ** 2 / 2 * (total / num.shape[-1])
    grand = total + 2 * pseudo
    centre = (num.sum(axis=-1) + pseudo) / grand
    resid = num - centre[..., None] * den
    var = (resid * resid).sum(axis=-1) + pseudo * (total / num.shape[-1]) * (centre**2 + (1 - centre) ** 2)
    return centre, np.sqrt(var) / grand


def joint_normal(num, den=None, *, draws: int = JOINT_DRAWS, seed: int) -> np.ndarray:
    """(..., draws, A) float32 standard-normal draws with the correlation of the A attacks' scores.

    All attacks on a set see the same users, so their errors are correlated; the correlation is that
    of their per-user residuals num - score * den (what the joint bootstrap of the users converges
    to). An attack whose residuals are all 0 (a score of exactly 0 or 1) is taken as independent.

    Args:
        num: (..., A, m) per-user numerators; den: broadcast against ``num`` (None: 1).
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.ones(num.shape[-1]) if den is None else np.asarray(den, dtype=np.float64)
    est = _scores(num, den)
    resid = num - est[..., None] * den
    norm = np.sqrt((resid * resid).sum(axis=-1))
    unit = resid / np.where(norm > 0, norm, 1.0)[..., None]
    corr = np.einsum("...am,...bm->...ab", unit, unit)
    # The draws go to the attacks in an order of their own (score, then a fixed projection of their
    # residuals), so the same attacks listed in another order (a results job that combines stored parts,
    # one that recomputes) get the same draws, and so the same bounds to the last digit. Each entry of
    # norm and corr is a sum over the users alone, the same wherever its attacks are listed, so they are
    # put in that order here, (A,) and (A, A), rather than the (A, m) residuals before them.
    order = np.lexsort((resid @ _projection(num.shape[-1]), est), axis=-1)
    norm = np.take_along_axis(norm, order, axis=-1)
    corr = np.take_along_axis(np.take_along_axis(corr, order[..., :, None], axis=-2), order[..., None, :], axis=-1)
    eye = np.eye(num.shape[-2], dtype=bool)
    corr = np.where(eye, 1.0, np.where((norm[..., :, None] > 0) & (norm[..., None, :] > 0), corr, 0.0))
    # The symmetric square root: unique, unlike the eigenvectors' signs and bases, so a correlation that
    # differs in its last bits gives draws that differ in their last bits.
    vals, vecs = np.linalg.eigh(corr)
    root = np.einsum("...ak,...k,...bk->...ab", vecs, np.sqrt(np.clip(vals, 0.0, None)), vecs).astype(np.float32)
    g = np.random.default_rng(seed).standard_normal((*corr.shape[:-2], draws, num.shape[-2]), dtype=np.float32)
    # Row a of the root back to the attack's place in the list, (A, A) rather than the (draws, A) draws.
    root = np.take_along_axis(root, np.argsort(order, axis=-1)[..., :, None], axis=-2)
    return np.einsum("...ab,...sb->...sa", root, g)


def _projection(m: int) -> np.ndarray:
    """(m,) a fixed direction per number of users, to order attacks whose scores tie."""
    return np.random.default_rng(m).standard_normal(m)


def simultaneous_constant(z: np.ndarray, *, level: float = LEVEL) -> np.ndarray:
    """(...,) the multiplier c of the upper bounds score + c se of one set's attacks (max-type).

    When the attacks are tied (the least favourable case for an upper bound of a minimum), the
    minimum over a of (estimate_a + c se_a) falls below the true minimum when min_a (Z_a + c) < 0,
    so c is the (1 - alpha/2) quantile of -min_a Z_a. One attack: z(alpha/2); 20 independent
    attacks: about z(alpha/40) (what Bonferroni gives); correlated attacks: less.

    Args:
        z: (..., S, A) draws of :func:`joint_normal`.
    """
    return np.quantile(-np.asarray(z).min(axis=-1).astype(np.float64), 1.0 - (1.0 - level) / 2, axis=-1)


def sum_constant(draws: list, scale) -> np.ndarray:
    """(..., S) the multiplier c of the upper bounds of a weighted sum of K set minima that each joint draw needs.

    With every set's attacks tied (the least favourable case for an upper bound), sum_k w_k min_a
    (estimate_ka + c se_ka) falls below the true sum when sum_k w_k min_a (Z_ka + c) se_ka < 0. Tied
    attacks of a set have about the same standard error, so it is taken as the set's one ``scale``
    s_k = w_k se_k: the sum falls below when c < -sum_k s_k min_a Z_ka / sum_k s_k. A quantile of
    that over the draws (:func:`split_tails`) is one joint bound for the sum, not alpha split K ways.
    One term: -min_a Z_a, whose (1 - alpha/2) quantile is :func:`simultaneous_constant`.

    Args:
        draws: K arrays (..., S, A_k) of :func:`joint_normal` (independent sets: independent draws).
        scale: (K, ...) each term's weight times its standard error (score units).
    """
    if len(draws) == 1:
        return -np.asarray(draws[0]).min(axis=-1).astype(np.float64)
    s = np.asarray(scale, dtype=np.float64)
    lowest = np.stack([np.asarray(z).min(axis=-1) for z in draws]).astype(np.float64)   # (K, ..., S)
    total = s.sum(axis=0)   # 0 only when every weight is 0: the sum is then 0 whatever c
    need = -(s[..., None] * lowest).sum(axis=0) / np.where(total > 0, total, 1.0)[..., None]
    return need


def split_tails(need: np.ndarray, scale, *, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """(c, z_low), each (...,): the upper bounds' multiplier and the lower bounds' normal quantile,
    sharing alpha = 1 - level between the two sides as the attacks' joint distribution allows.

    The two sides miss in opposite cases: the upper bound in the tied case (probability alpha_U, c the
    (1 - alpha_U) quantile of ``need``), the lower bound in the separated case (one attack per set far
    below the others), where the upper bound misses only when sum_k s_k (Z_k + c) < 0, with probability
    Phi(-c sum s / sqrt(sum s^2)). So the lower bound can take alpha_L = alpha - that, and both cases
    miss at most alpha. Of alpha_U in alpha/2 ... alpha (11 steps) the one with the narrowest interval,
    c sum s + z_low sqrt(sum s^2), is taken: one attack gets z(alpha/2) on both sides, as before;
    20 independent tied attacks about c = 2.80 and z_low = 1.67 instead of 3.02 and 1.96.

    Args:
        need: (..., S) the multiplier each joint draw needs (:func:`sum_constant`).
        scale: (K, ...) each term's weight times its standard error.
    """
    alpha = 1.0 - level
    s = np.asarray(scale, dtype=np.float64)
    s_sum, s_norm = s.sum(axis=0), np.sqrt((s * s).sum(axis=0))
    ratio = np.divide(s_sum, s_norm, out=np.ones_like(s_sum), where=s_norm > 0)[..., None]
    tails = alpha * np.linspace(0.5, 1.0, 11)
    c = np.moveaxis(np.quantile(need, 1.0 - tails, axis=-1), 0, -1)           # (..., 11)
    alpha_low = alpha - ndtr(-c * ratio)
    z_low = np.where(alpha_low > 0, ndtri(1.0 - np.clip(alpha_low, 1e-300, None)), np.inf)
    best = np.argmin(c * s_sum[..., None] + z_low * s_norm[..., None], axis=-1)[..., None]
    return np.take_along_axis(c, best, axis=-1)[..., 0], np.take_along_axis(z_low, best, axis=-1)[..., 0]


def sum_bounds(terms: list, weights=None, *, level: float = LEVEL, seeds=None) -> list:
    """Per-attack bounds whose minima, weighted and summed, bound the weighted sum of K set minima.

    A leaderboard value is sum_k w_k min_a theta_ka over K sets (a challenge board: K = 1; a round's
    overall: the team's IDP set's s_I and TRP set's s_T, weights 1; the weighted total: both sets of
    every round, at the round's weight), the sets' users drawn independently. One joint bound for the
    sum, at ``level`` two-sided:

    - lower: attack a of term k at its Agresti-Coull centre - d_ka se_ka (:func:`boundary_estimates`),
      d_ka = z_low w_k se_ka / sqrt(w_k^2 se_ka^2 + sum_{j != k} w_j^2 min_b se_jb^2) (min over the
      attacks that can be the minimum). The least favourable case is one attack per set far below
      the others; the sum's lower bound then errs by sum_k w_k se_k (Z_k - d_k), and this d makes
      that exceed 0 with probability at most alpha_L = 1 - Phi(z_low) whichever attacks are the true
      minima (K = 1: d = z_low; K alike terms: z_low/sqrt(K));
    - upper: every attack at its centre + c se_ka with the sum's multiplier c (:func:`sum_constant`
      of the sets' :func:`joint_normal` draws), missing in the tied case with probability alpha_U;
    - c and z_low chosen together by :func:`split_tails`, so neither case misses more than alpha.

    Args:
        terms: K pairs (num (..., A_k, m_k), den broadcast against num, or None: 1), leading axes alike.
        weights: (K,) the terms' weights (None: 1 each).
        level: two-sided level of the interval of the sum.
        seeds: K seeds of the terms' joint draws (None: 0, 1, ...).
    Returns:
        K pairs (lower, upper), each (..., A_k) in [0, 1], each holding its attack's estimate.
    """
    k = len(terms)
    w = np.ones(k) if weights is None else np.asarray(weights, dtype=np.float64)
    seeds = range(k) if seeds is None else seeds
    z = _z((1.0 - level) / 2)
    parts = [(np.asarray(num, dtype=np.float64), den) for num, den in terms]
    est = [ratio_estimates(num, den)[0] for num, den in parts]
    se0 = [boundary_estimates(num, den, z=z)[1] for num, den in parts]
    # each term's scale: its smallest standard error among the attacks that can be its minimum (those
    # whose estimate - 4 se lies below the lowest estimate + 4 se: the true minimum is outside with
    # probability below 1e-4), so that a useless attack's small se near 1 does not count
    # (the same attacks are the only ones the upper bound's multiplier looks at: a set's useless attacks
    # far above its minimum cannot take the upper bound below the truth)
    near = [e - 4 * s <= (e + 4 * s).min(axis=-1, keepdims=True) for e, s in zip(est, se0)]
    scale = np.stack([wk * np.where(n, s, np.inf).min(axis=-1) for wk, n, s in zip(w, near, se0)])   # (K, ...)
    draws = [joint_normal(num, den, seed=s) for (num, den), s in zip(parts, seeds)]
    draws = [np.where(n[..., None, :], z, np.inf) for n, z in zip(near, draws)]
    c, z_low = split_tails(sum_constant(draws, scale), scale, level=level)
    floor = scale**2
    rest = floor.sum(axis=0)
    lowers = []
    for j, (num, den) in enumerate(parts):
        spread = np.sqrt((w[j] * se0[j]) ** 2 + (rest - floor[j])[..., None])
        d = z_low[..., None] * np.divide(w[j] * se0[j], spread, out=np.ones_like(spread), where=spread > 0)
        centre, se = boundary_estimates(num, den, z=d)
        lowers.append(np.minimum(np.clip(centre - d * se, 0.0, 1.0), est[j]))
    c = c[..., None]
    uppers = []
    for j, (num, den) in enumerate(parts):
        centre, se = boundary_estimates(num, den, z=c)
        uppers.append(np.maximum(np.clip(centre + c * se, 0.0, 1.0), est[j]))
    return list(zip(lowers, uppers))


def attack_bounds(num, den=None, *, level: float = LEVEL, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-attack (lower, upper) bounds whose minima bound the minimum of the attacks' true scores:
    :func:`sum_bounds` of one term.

    Args:
        num: (..., A, m) per-user numerators of the A counted attempts on one set in one kind;
            den: their denominators, broadcast against ``num`` (None: 1).
        level: two-sided level of the interval of the minimum.
        seed: seeds the joint draws behind the upper bounds' multiplier.
    Returns:
        (lower, upper), each (..., A), in [0, 1], each holding its attack's estimate: the
        Agresti-Coull bounds (:func:`boundary_estimates`), the upper at the max-type multiplier of
        the attacks' joint distribution, the lower at the normal quantile left by the upper's share
        of alpha (:func:`split_tails`; one attack: z(alpha/2) on both sides). The least favourable
        case for the lower bound of a minimum is one attack far below the others, for the upper
        bound all attacks tied.
    """
    return sum_bounds([(num, den)], level=level, seeds=[seed])[0]


def minimum_interval(num, den=None, *, level: float = LEVEL, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper), each (...,): interval at ``level`` of min_a (true score of attack a), from the
    attacks' per-user parts (..., A, m) (:func:`attack_bounds`, the minimum over a)."""
    lower, upper = attack_bounds(num, den, level=level, seed=seed)
    return lower.min(axis=-1), upper.min(axis=-1)


def swap_probabilities(published, replicates, *, higher_is_better: bool = True) -> np.ndarray:
    """How likely each adjacent pair of a ranking is in the other order in the population.

    Args:
        published: (n,) the ranked values, place 1 first (ties: equal values).
        replicates: (n, B) bootstrap replicates of the same values.
        higher_is_better: True for anonymizer rankings, False for attacker sums.
    Returns:
        (n-1,) float64: entry k is 2 * Phi(-gap / sd), capped at 1, with gap the published lead of
        place k+1 over place k+2 and sd the bootstrap standard deviation of that lead: the two-sided
        p-value of "the two teams are equal in the population". Two teams equal in the population
        get a value spread evenly over [0, 1] (mean 0.5): the lower team is as likely to be
        ahead as behind; a lead of many standard deviations gives about 0. An exact tie gives 1.

    (The share of replicates in which the lower place is ahead was used before: given the observed
    order it averages 0.25, not 0.5, for teams equal in the population.)
    """
    v = np.asarray(published, dtype=np.float64)
    r = np.asarray(replicates, dtype=np.float64)
    if r.ndim != 2 or v.shape != (r.shape[0],):
        raise ValueError(f"published must be (n,) and replicates (n, B), got {v.shape} and {r.shape}")
    sign = 1.0 if higher_is_better else -1.0
    gap = np.round(sign * (v[:-1] - v[1:]), 12)
    sd = (r[:-1] - r[1:]).std(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(sd > 0, 2.0 * ndtr(-gap / np.where(sd > 0, sd, 1.0)), np.where(gap <= 0, 1.0, 0.0))
    return np.minimum(p, 1.0).astype(np.float64)


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
        return _trace_parts(*scores.trace_inference_weighted(grid, truth, estimate, lambda_t=lambda_t,
                                                             hospital_weight=hospital_weight))
    raise ValueError(f"{kind!r} is not an attack kind")


def _trace_parts(weighted: np.ndarray, weights: np.ndarray) -> dict:
    return {"num": weighted.sum(axis=1), "den": weights.sum(axis=1)}


def scored_attack(kind: str, grid, estimate, *, true_users=None, truth=None, lambda_t: float = 2.0,
                  hospital_weight: float = 10.0) -> tuple[float, dict]:
    """An attack's score and its per-user parts in one pass: (the float
    ``scoring.scores.attack_score`` gives, the dict :func:`per_user_attack` gives).

    Trace inference computes the (m, L) per-event errors once for both (about 17 ms at
    2000 users x 400 events, twice per attack before).
    """
    if kind == TRACE_INFERENCE:
        if truth is None:
            raise ValueError("a trace-inference score needs the original traces")
        weighted, weights = scores.trace_inference_weighted(grid, truth, estimate, lambda_t=lambda_t,
                                                            hospital_weight=hospital_weight)
        return scores.weighted_error_ratio(weighted, weights), _trace_parts(weighted, weights)
    value = scores.attack_score(kind, grid, estimate, true_users=true_users, truth=truth, lambda_t=lambda_t,
                                hospital_weight=hospital_weight)
    return value, per_user_attack(kind, grid, estimate, true_users=true_users, truth=truth, lambda_t=lambda_t,
                                  hospital_weight=hospital_weight)


# --------------------------------------------------------------------------
# the whole results: intervals per set, swaps per leaderboard, award stability
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Columns:
    """Which columns of :class:`scoring.results.RuleValues` hold what (see :func:`replicate_values`).

    ``published``: the stored scores (column 0); ``bounds``: n -> (lower, upper) columns of the
    quantities that are a sum of n set minima (:func:`sum_bounds` of the groups of :func:`bound_groups`);
    ``bootstrap``: the slice of the B bootstrap replicates; ``attempts``: (AttackRow, (C,) its
    columns) of every counted attack row, as they went into the rules.
    """

    published: int
    bounds: dict
    bootstrap: slice
    attempts: tuple = ()


def bound_terms(results) -> dict[str, int]:
    """Leaderboard name -> how many set minima its value sums: a challenge board 1, a round's
    overall 2, the weighted total 2 per round."""
    rounds = [r for r, _ in results.round_weights]
    out = {LEADERBOARD_TOTAL: 2 * len(rounds)}
    for r in rounds:
        out[leaderboard_name(r)] = 2
        for c in (1, 2):
            out[leaderboard_name(r, c)] = 1
    return out


def bound_groups(results) -> dict[int, list]:
    """n -> the groups of set minima that one leaderboard value of n terms sums: lists of
    (SetRef, kind, weight). n = 1: no groups (every set minimum alone); 2: each team's IDP set (s_I) and
    TRP set (s_T) of a round, weights 1; 2R (R > 1 rounds): both sets of every round of a team, at the
    round's weight. The sets of a group are a team's own, so each set is in one group per n."""
    rounds = [r for r, _ in results.round_weights]
    weight = dict(results.round_weights)
    teams = sorted({s.set.team for s in results.sets})
    pair = ((IDP, REIDENTIFICATION), (TRP, TRACE_INFERENCE))
    groups = {2: [[(SetRef(r, t, c), kind, 1.0) for c, kind in pair] for t in teams for r in rounds]}
    if len(rounds) > 1:
        groups[2 * len(rounds)] = [[(SetRef(r, t, c), kind, float(weight[r])) for r in rounds for c, kind in pair]
                                   for t in teams]
    return groups


def replicate_values(results, attack_vectors: list, *, seed: int,
                     replicates: int = REPLICATES) -> tuple[RuleValues, Columns]:
    """The ranked quantities of ``results`` in every column: the stored scores, bounds, bootstrap.

    Args:
        results: a ``scoring.results.Results``.
        attack_vectors: (AttackRow, per-user dict or None) for every attack row the results were
            computed from (:func:`per_user_attack`); a row without parts keeps its score in every
            column (standard error 0).
        seed: set ``k`` is resampled with ``derived_seed(seed, k)``.
    Returns:
        (:class:`scoring.results.RuleValues`, :class:`Columns`): ``scoring.results.rule_values`` run
        once on all columns, so column 0 is exactly what ``results`` published.
    """
    B = int(replicates)
    terms = sorted(set(bound_terms(results).values()))
    bounds = {n: (1 + 2 * i, 2 + 2 * i) for i, n in enumerate(terms)}
    first_boot = 1 + 2 * len(terms)
    valid = {s.set: s.valid for s in results.sets}
    by_set: dict = {}
    for row, vec in attack_vectors:
        if row.set in valid and not not_counted_reason(row, valid[row.set]):
            by_set.setdefault((row.set, row.kind), []).append((row, vec))
    attempts, tables = [], {}
    drawn: dict = {}   # the set whose replicates were drawn last -> (replicates, m) counts: I and T share them
    for (ref, kind), rows in sorted(by_set.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        score = np.array([float(row.score) for row, _ in rows])
        table = np.repeat(score[:, None], first_boot + B, axis=1)  # a row without parts: its score everywhere
        have = [i for i, (_, vec) in enumerate(rows) if vec is not None]
        if have:
            num = np.stack([rows[i][1]["num"] for i in have])
            den = np.stack([rows[i][1].get("den", np.ones(num.shape[1])) for i in have])
            if ref not in drawn:
                drawn = {ref: resample_counts(num.shape[1], B, seed=derived_seed(seed, ref.key))}
            counts = drawn[ref]
            table[have, first_boot:] = (num @ counts.T) / _replicate_totals(den, counts)
            tables[(ref, kind)] = (table, have, num, den, derived_seed(seed, ref.key, kind, "joint"))
        attempts += [(row, table[i]) for i, (row, _) in enumerate(rows)]
    _fill_bounds(tables, bounds, bound_groups(results))
    values = rule_values(teams=results.teams, round_weights=dict(results.round_weights), valid=valid,
                         attempts=attempts, columns=first_boot + B)
    return values, Columns(published=0, bounds=bounds, bootstrap=slice(first_boot, first_boot + B),
                           attempts=tuple(attempts))


def _fill_bounds(tables: dict, bounds: dict, groups: dict) -> None:
    """Write the bounds columns of every attack row with per-user parts, in place.

    Args:
        tables: (SetRef, kind) -> (table (rows, C), row indices with parts, their num (A, m), den (A, m),
            the seed of the set's joint draws).
        bounds: n -> (lower column, upper column) (:class:`Columns`).
        groups: n -> the groups summed by a value of n terms (:func:`bound_groups`); a set minimum in
            no group of n (another kind than its challenge's, the benchmark's) gets its own bounds.
    """
    lo1, hi1 = bounds[1]
    for n, (lo, hi) in sorted(bounds.items()):
        done = set()
        for group in [[(ref, kind, 1.0)] for ref, kind in sorted(tables)] if n == 1 else groups.get(n, []):
            present = [(ref, kind, w) for ref, kind, w in group if (ref, kind) in tables]
            keys = [(ref, kind) for ref, kind, _ in present]
            found = sum_bounds([tables[k][2:4] for k in keys], [w for *_, w in present],
                               seeds=[tables[k][4] for k in keys]) if keys else []
            for key, (lower, upper) in zip(keys, found):
                table, have = tables[key][:2]
                table[have, lo], table[have, hi] = lower, upper
            done.update(keys)
        for key in set(tables) - done:   # in no group of n terms: the bounds of its own minimum
            table, have = tables[key][:2]
            table[have, lo], table[have, hi] = table[have, lo1], table[have, hi1]


def _replicate_totals(den: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(A, B) the denominators' totals in each replicate: ``den @ counts.T``, computed once when every
    attempt has the same per-user denominators (a set's T attacks all weigh its users by the original
    traces; an I attack weighs each user 1) and broadcast to the A attempts."""
    if (den == den[0]).all():
        return np.broadcast_to(den[:1] @ counts.T, (den.shape[0], counts.shape[0]))
    return den @ counts.T


def results_uncertainty(results, utility_vectors: dict, attack_vectors: list, *, seed: int,
                        replicates: int = REPLICATES) -> dict:
    """Intervals of every published set and leaderboard place, swap probabilities, award stability.

    Args:
        results: a ``scoring.results.Results``.
        utility_vectors: SetRef -> per-user dict of its s_U (:func:`per_user_utility`); a set
            without one keeps its s_U fixed (the benchmark: 1).
        attack_vectors: see :func:`replicate_values`.
        seed: the base seed of the bootstrap.
    Returns a JSON-ready dict: ``method`` (:data:`METHOD`), ``sets`` (key -> interval of s_u,
    s_i_min, s_t_min), ``leaderboards`` (name -> per place: interval, ``swap_next`` and
    ``tied_next``), ``awards`` (``name-place`` -> share of bootstrap replicates in which the winner
    holds that place).

    ``swap_next`` (None for the last place) is :func:`swap_probabilities` of this place and the next:
    ``min(1, 2 * Phi(-gap / sd))``, with gap this place's published lead over the next (>= 0, in
    the board's score units) and sd the standard deviation of that lead over the bootstrap
    replicates. It is the two-sided p-value of "the two teams are equal in the population": how
    likely a lead at least this large is between two equal teams (equal teams: 0.5 on average; a lead
    of 4 standard deviations: 2 Phi(-4) = 0.00006; an exact tie: 1). It is not the probability that the next
    place is ahead in the population (no such posterior is computed), nor the share of replicates in
    which it is ahead. ``tied_next`` is ``swap_next >= TIE_PROBABILITY`` (:data:`TIE_PROBABILITY`),
    the leaderboard's "≈".
    """
    values, cols = replicate_values(results, attack_vectors, seed=seed, replicates=replicates)
    boot = cols.bootstrap
    lo1, hi1 = cols.bounds[1]
    z = _z((1.0 - LEVEL) / 2)
    intervals: dict = {}
    for s in results.sets:
        ref = s.set
        u = utility_vectors.get(ref)
        if u is not None:
            est, se = ratio_estimates(u["num"])
            s_u = (float(max(est - z * se, 0.0)), float(min(est + z * se, 1.0)))
        else:
            s_u = (float(s.s_u), float(s.s_u))
        intervals[ref.key] = {"s_u": s_u, **{
            field: (float(values.set_min[(ref, kind)][lo1]), float(values.set_min[(ref, kind)][hi1]))
            for kind, field in ((REIDENTIFICATION, "s_i_min"), (TRACE_INFERENCE, "s_t_min"))}}

    terms = bound_terms(results)
    boards = {}
    for name, rows in results.leaderboards:
        if not rows:
            boards[name] = []
            continue
        lo, hi = cols.bounds[terms[name]]
        v = np.stack([values.board(name, st.team) for st in rows])
        swap = swap_probabilities(v[:, cols.published], v[:, boot]) if len(rows) > 1 else np.zeros(0)
        boards[name] = [{"team": st.team, "interval": (float(v[i, lo]), float(v[i, hi])),
                         "swap_next": float(swap[i]) if i < len(swap) else None,
                         "tied_next": bool(i < len(swap) and swap[i] >= TIE_PROBABILITY)}
                        for i, st in enumerate(rows)]

    rules = {rule.name: rule for rule in AWARD_RULES[results.variant]}
    awards = {}
    for a in results.awards:
        rule = rules[a.award]
        pool = [st.team for st in results.standing(a.award)]
        reps = np.stack([values.team_totals[t][rule.value][boot] for t in pool])
        i = pool.index(a.team)
        if a.award == OVERALL and a.place > 1:
            awards[f"{a.award}-{a.place}"] = place_probability(reps, i, a.place, higher_is_better=rule.higher_is_better)
        else:
            awards[f"{a.award}-{a.place}"] = stability(reps, i, higher_is_better=rule.higher_is_better)
    return {"method": METHOD, "replicates": int(replicates), "level": LEVEL, "tie_probability": TIE_PROBABILITY,
            "sets": intervals, "leaderboards": boards, "awards": awards}


def place_probability(replicates: np.ndarray, index: int, place: int, *, higher_is_better: bool = True) -> float:
    """Share of replicates in which candidate ``index`` of (n, B) ``replicates`` ranks exactly ``place``
    (1 + the number of candidates strictly better in that replicate)."""
    r = np.asarray(replicates, dtype=np.float64)
    better = (r > r[index]) if higher_is_better else (r < r[index])
    return float(((better.sum(axis=0) + 1) == place).mean())
