"""Intervals of a minimum cover, and swap probabilities mean what the leaderboard says (issue 22).

A coverage experiment with a known truth: a population of 200,000 users whose per-user outcomes
under every attack are drawn once (0/1 "not re-identified" for s_I, hospital-weighted distances for
s_T), so each attack's true score -- and the true minimum over the attacks -- is the population's.
A contest set is 2000 users drawn from it; 300 sets per case, all repetitions in one array. The
interval the platform publishes (``scoring.uncertainty.minimum_interval`` of the attacks' per-user
parts) must hold the true minimum in at least 93% of the sets at nominal 95%, for one attack,
well-separated attacks, 2, 5, 15 and 20 tied attacks (independent and correlated), one attack 2
standard errors below 19, near 0 and 1 (scores of 0.002-0.02 and 0.999, sets of 200 users), and for
leaderboard values (a round's overall, the weighted total of two rounds at 0.1 and 0.9). Each case
prints its coverage beside its mean width over the oracle's (the width the estimate's own sampling
distribution needs) and fails above its width ceiling:
``pytest -p no:xdist -m slow -s tests/scoring/test_interval_coverage.py``. The bootstrap percentile interval of
the minimum published first, and the plug-in standard errors published next, do not cover: the
tests measure them on the same experiment.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring.uncertainty import minimum_interval, ratio_estimates, resample_counts, swap_probabilities

POPULATION, M, REPETITIONS = 200_000, 2000, 300
NOMINAL, REQUIRED = 0.95, 0.93


def reidentification_population(rng, scores, correlated=False):
    """(A, POPULATION) 0/1 per user: 1 where attack a did NOT re-identify the user (s_I = mean).

    ``correlated``: the attacks share a per-user difficulty (a user hard for one attack is hard for
    the others, as with attacks built on the same visit statistics), correlation about 0.64."""
    p = np.asarray(scores, dtype=np.float64)[:, None]
    if not correlated:
        return (rng.random((len(scores), POPULATION)) < p).astype(np.float32)
    from scipy.special import ndtri
    latent = 0.8 * rng.standard_normal(POPULATION) + 0.6 * rng.standard_normal((len(scores), POPULATION))
    return (latent < ndtri(p)).astype(np.float32)


def trace_population(rng, scores):
    """((A, POPULATION) numerators, (POPULATION,) denominators) of s_T = sum(num) / sum(den):
    400 events per user, hospital events (5%) weighing 10, per-event min(1, d/lambda_T) in [0, 1]."""
    hospital = rng.binomial(400, 0.05, size=POPULATION)
    den = (400 - hospital) + 10.0 * hospital
    mean = np.asarray(scores, dtype=np.float64)[:, None]
    share = rng.beta(4 * mean / (1 - mean), 4, size=(len(scores), POPULATION))  # per-user mean distance share
    return (share * den).astype(np.float32), den.astype(np.float32)


def bonferroni_interval(est, se, level=NOMINAL):
    """The method published before: plug-in standard errors, the lowest score - z(alpha/2) se and the
    lowest score + z(alpha/(2A)) se over the A attacks (Bonferroni), clipped to [0, 1]."""
    from statistics import NormalDist
    a = est.shape[-1]
    z_lo, z_hi = (NormalDist().inv_cdf(1 - (1 - level) / d) for d in (2, 2 * a))
    return np.clip(est - z_lo * se, 0, 1).min(axis=-1), np.clip(est + z_hi * se, 0, 1).min(axis=-1)


def draw_sets(num, den, m, seed):
    """(REPETITIONS, A, m) numerators and (REPETITIONS, 1, m) denominators (None) of sets of m users."""
    users = np.random.default_rng(seed).integers(0, num.shape[1], size=(REPETITIONS, m))
    return np.moveaxis(num[:, users], 0, 1), None if den is None else den[users][:, None, :]


def coverage(num, den=None, *, m=M, seed=1, method="joint"):
    """(coverage, share wholly below the truth, mean width / the oracle's width) of REPETITIONS sets of m
    users: how often the published interval of the minimum holds the population minimum. The oracle's
    width is that of the central 95% of the estimated minimum's own sampling distribution (over the
    repetitions): what an interval would need if the distribution were known."""
    truth = ratio_estimates(num, den)[0].min()
    sample, sample_den = draw_sets(num, den, m, seed)
    est, se = ratio_estimates(sample, sample_den)
    if method == "joint":
        lo, hi = np.concatenate([np.stack(minimum_interval(sample[k:k + 100], None if sample_den is None
                                                            else sample_den[k:k + 100], seed=k))
                                 for k in range(0, REPETITIONS, 100)], axis=1)
    else:
        lo, hi = bonferroni_interval(est, se)
    oracle = np.diff(np.quantile(est.min(axis=-1), [0.025, 0.975]))[0]
    return (float(((lo <= truth) & (truth <= hi)).mean()), float((hi < truth).mean()),
            float((hi - lo).mean() / oracle) if oracle > 0 else float("inf"))


CASES = {
    "one attack": ([0.7], False),
    "well separated": ([0.55, 0.65, 0.75, 0.85], False),
    "2 tied": ([0.7] * 2, False),
    "5 tied": ([0.7] * 5, False),
    "15 tied": ([0.7] * 15, False),
    "15 tied, correlated": ([0.7] * 15, True),
    "20 attackers tied": ([0.7] * 20, False),
    "20 attackers, 6 judge near the minimum": ([0.7, 0.7, 0.705, 0.71, 0.72, 0.75] + [0.8] * 14, True),
    # the least favourable case for the lower bound that still looks like a tie: one attack about
    # 2 standard errors (0.02) below 19 others
    "20 attackers, one 2 se below the others": ([0.68] + [0.7] * 19, False),
}

#: Width over the oracle's that a case may not exceed. The issue's targets (1.3 for a minimum, 1.5
#: for a leaderboard value) hold where the attacks are separated, correlated or few; with 15-20
#: independent tied attacks no interval that also covers the least favourable case above can meet
#: them (its lower bound must sit z below the lowest estimate, the oracle's sits 0.96 standard errors
#: above it with 20 tied), so those cases keep the widths measured when the bounds were made joint
#: (2.24 for 20 tied s_I, 2.5-2.7 for sums) as a ceiling. Cases not named: no ceiling (near 0 the
#: oracle's width is a count or two of users, and a ratio to it says little).
WIDTH_CEILING = {
    "one attack": 1.3, "well separated": 1.3, "2 tied": 1.3, "5 tied": 1.7, "15 tied": 2.0,
    "15 tied, correlated": 1.55, "20 attackers tied": 2.3, "20 attackers, 6 judge near the minimum": 1.3,
    "20 attackers, one 2 se below the others": 2.3, "s_T 1 tied at 0.6": 1.3, "s_T 5 tied at 0.6": 1.75,
    "s_T 20 tied at 0.6": 2.2, "round overall, 1 attack each": 1.5, "round overall, 20 tied each": 2.75,
    "weighted total 0.1/0.9, 1 attack each": 1.5, "weighted total 0.1/0.9, 20 tied each": 2.6,
}

#: Scores near 0 and 1: (kind, attacks' true scores, users per set). Every one covered less than 93%
#: with plug-in standard errors except the last two s_I rows (measured 0.963 and 0.873 at 0.02 and
#: with one s_T attack at 0.01; the issue's draws gave 0.923 for the first).
BOUNDARY = {
    "s_I one attack at 0.999": ("i", [0.999], M),
    "s_I 5 tied at 0.002": ("i", [0.002] * 5, M),
    "s_I 20 tied at 0.002": ("i", [0.002] * 20, M),
    "s_I 20 tied at 0.005": ("i", [0.005] * 20, M),
    "s_I 20 tied at 0.01, 200 users": ("i", [0.01] * 20, 200),
    "s_T 20 tied at 0.01, 200 users": ("t", [0.01] * 20, 200),
    "s_I 20 tied at 0.02": ("i", [0.02] * 20, M),
    "s_T one attack at 0.01, 200 users": ("t", [0.01], 200),
}


def report(case, method, result):
    """Print one row of the coverage and width table (``pytest -s`` shows it) and, for the published
    method, check the width against its ceiling (:data:`WIDTH_CEILING`)."""
    cov, below, width = result
    ceiling = WIDTH_CEILING.get(case) if method == "joint" else None
    print(f"\n{case:42s} {method:10s} coverage {cov:.3f}  below {below:.3f}  width/oracle {width:.2f}"
          + (f" (ceiling {ceiling:.2f})" if ceiling else ""))
    assert ceiling is None or width <= ceiling, (case, width, ceiling)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_the_interval_of_a_minimum_of_s_i_covers(case):
    scores, correlated = CASES[case]
    rng = np.random.default_rng(len(case) * 7919)
    result = coverage(reidentification_population(rng, scores, correlated))
    report(case, "joint", result)
    assert result[0] >= REQUIRED, (case, result)


@pytest.mark.slow
@pytest.mark.parametrize("tied", [1, 5, 20])
def test_the_interval_of_a_minimum_of_s_t_covers(tied):
    rng = np.random.default_rng(100 + tied)
    num, den = trace_population(rng, [0.6] * tied)
    result = coverage(num, den)
    report(f"s_T {tied} tied at 0.6", "joint", result)
    assert result[0] >= REQUIRED, (tied, result)


def boundary_population(case):
    kind, scores, m = BOUNDARY[case]
    rng = np.random.default_rng(len(case) * 104_729)
    if kind == "i":
        return reidentification_population(rng, scores), None, m
    return (*trace_population(rng, scores), m)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BOUNDARY))
def test_intervals_near_0_and_1_cover(case):
    num, den, m = boundary_population(case)
    result = coverage(num, den, m=m)
    report(case, "joint", result)
    assert result[0] >= REQUIRED, (case, result)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BOUNDARY)[:6])
def test_plug_in_standard_errors_do_not_cover_near_0_and_1(case):
    """The experiment has the power to fail: the method published before (plug-in standard errors,
    Bonferroni) covers less than 93% in these cases, the truth outside where the score sits at 0 or 1."""
    num, den, m = boundary_population(case)
    result = coverage(num, den, m=m, method="bonferroni")
    report(case, "bonferroni", result)
    assert result[0] < REQUIRED, (case, result)


def test_a_score_of_exactly_0_or_1_gets_an_interval_of_positive_width():
    for value in (0.0, 1.0):
        lo, hi = minimum_interval(np.full((1, M), value))
        assert hi - lo > 0.001 and lo <= value <= hi, (value, lo, hi)


def percentile_of_the_minimum(num, *, replicates=100, repetitions=150, seed=2):
    """The method published before issue 22, on the same experiment: the 2.5% and 97.5% quantiles of
    the bootstrapped minimum (every attack on the same resample of the set's users). Returns
    (coverage, share below). One resample per repetition (loops over repetitions, not users; fewer
    repetitions than the covering method's test: the failure it shows is large)."""
    truth = num.mean(axis=1).min()
    rng = np.random.default_rng(seed)
    hit = below = 0
    for r in range(repetitions):
        sample = num[:, rng.integers(0, num.shape[1], size=M)].astype(np.float64)
        w = resample_counts(M, replicates, seed=seed * 100_003 + r)
        boot = (w @ sample.T / M).min(axis=1)
        lo, hi = np.quantile(boot, [0.025, 0.975])
        hit += lo <= truth <= hi
        below += hi < truth
    return hit / repetitions, below / repetitions


def test_the_old_percentile_interval_fails_the_same_experiment():
    """The experiment has the power to fail: the percentile interval of the bootstrapped minimum of
    5 tied attacks covers far less than 93%, and the truth lies above it (the issue measured 0.46)."""
    rng = np.random.default_rng(5 * 7919)
    num = reidentification_population(rng, [0.7] * 5)
    cov, below = percentile_of_the_minimum(num)
    assert cov < 0.7 and below > 0.25, (cov, below)


# ---------------------------------------------------------------------------------------------
# swap probabilities: the probability that the next place is ahead in the population
# ---------------------------------------------------------------------------------------------
def swap_experiment(true_a, true_b, *, replicates=400, seed=3):
    """Mean published swap probability of two teams whose (single-attack) scores are true_a, true_b
    in the population, over REPETITIONS contests; each team's bootstrap replicates are exact
    (a resampled mean of 0/1 outcomes is Binomial(M, observed mean) / M)."""
    rng = np.random.default_rng(seed)
    observed = rng.binomial(M, [true_a, true_b], size=(REPETITIONS, 2)) / M
    boot = rng.binomial(M, observed[:, :, None], size=(REPETITIONS, 2, replicates)) / M
    swaps, shares = [], []
    for r in range(REPETITIONS):  # one call per contest: the ranking orders each contest's two teams
        order = np.argsort(-observed[r], kind="stable")
        swaps.append(swap_probabilities(observed[r][order], boot[r][order])[0])
        upper, lower = boot[r][order]
        shares.append((lower > upper).mean() + 0.5 * (lower == upper).mean())
    return float(np.mean(swaps)), float(np.mean(shares))


def test_swap_probability_is_one_half_for_equal_teams_and_zero_for_clearly_separated_ones():
    equal, old_equal = swap_experiment(0.7, 0.7)
    assert 0.44 <= equal <= 0.56, equal
    # what the page showed before: the share of replicates in which the lower place is ahead,
    # given the observed order -- about 0.25 for equal teams (the issue measured 0.26)
    assert old_equal < 0.33, old_equal
    apart, _ = swap_experiment(0.70, 0.76)  # 0.06 apart, about 4 standard errors of the difference
    assert apart < 0.01, apart


def sum_coverage(tied, weights, seed):
    """(coverage, share wholly below the truth, mean width / the oracle's width) of a leaderboard value:
    sum_r w_r (s_I,min of an IDP set + s_T,min of a TRP set), each set of M users drawn from its own
    population with ``tied`` attacks (s_I at 0.7, standard error 0.010; s_T at 0.6, 0.003), bounded by
    ``sum_bounds`` as the results job bounds a team's round overall (weights 1) and weighted total."""
    from scoring.uncertainty import sum_bounds
    rng = np.random.default_rng(seed)
    populations = [part for _ in weights for part in ((reidentification_population(rng, [0.7] * tied), None),
                                                       trace_population(rng, [0.6] * tied))]
    w = np.repeat(weights, 2)
    truth = sum(wk * ratio_estimates(num, den)[0].min() for wk, (num, den) in zip(w, populations))
    samples = [draw_sets(num, den, M, seed=seed + 10 + k) for k, (num, den) in enumerate(populations)]
    est = sum(wk * ratio_estimates(s, d)[0].min(axis=-1) for wk, (s, d) in zip(w, samples))
    lo, hi = np.zeros(REPETITIONS), np.zeros(REPETITIONS)
    for k in range(0, REPETITIONS, 100):
        parts = [(s[k:k + 100], None if d is None else d[k:k + 100]) for s, d in samples]
        for wk, (low, high) in zip(w, sum_bounds(parts, w, seeds=[k + j for j in range(len(parts))])):
            lo[k:k + 100] += wk * low.min(axis=-1)
            hi[k:k + 100] += wk * high.min(axis=-1)
    oracle = np.diff(np.quantile(est, [0.025, 0.975]))[0]
    return (float(((lo <= truth) & (truth <= hi)).mean()), float((hi < truth).mean()),
            float((hi - lo).mean() / oracle))


#: Leaderboard values: (attacks per set, round weights). One round: a round's overall; 0.1 and 0.9:
#: the weighted total of the 2019 rounds, whose unequal weights alpha split n ways did not cover
#: (0.84 with one attack per set: each term's bound at z/sqrt(4) assumes alike terms).
SUMS = {
    "round overall, 1 attack each": (1, [1.0]),
    "round overall, 20 tied each": (20, [1.0]),
    "weighted total 0.1/0.9, 1 attack each": (1, [0.1, 0.9]),
    "weighted total 0.1/0.9, 20 tied each": (20, [0.1, 0.9]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(SUMS))
def test_the_interval_of_a_leaderboard_value_covers(case):
    """A round's overall is s_I,min of the IDP set plus s_T,min of the TRP set (independent users), the
    weighted total sums both over the rounds at their weights: one joint bound for the sum
    (``scoring.uncertainty.sum_bounds``) holds the true sum."""
    tied, weights = SUMS[case]
    result = sum_coverage(tied, weights, seed=77 + tied + len(weights))
    report(case, "joint", result)
    assert result[0] >= REQUIRED, result
