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
