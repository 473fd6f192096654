"""Per-attack estimates and bounds, swap probabilities and award stability (scoring.uncertainty)."""
from __future__ import annotations

import numpy as np
import pytest

from scoring.uncertainty import (
    attack_bounds,
    boundary_estimates,
    joint_normal,
    minimum_interval,
    ratio_estimates,
    resample_counts,
    simultaneous_constant,
    stability,
    sum_bounds,
    swap_probabilities,
)


def test_resample_counts_are_multinomial_draws_of_m_users():
    w = resample_counts(50, 200, seed=1)
    assert w.shape == (200, 50)
    assert np.all(w.sum(axis=1) == 50)
    assert np.all(w >= 0) and np.all(w == np.round(w))
    assert abs(w.mean() - 1.0) < 1e-12
    assert np.array_equal(w, resample_counts(50, 200, seed=1))
    assert not np.array_equal(w, resample_counts(50, 200, seed=2))


def test_ratio_estimates_are_the_scores_and_the_bootstrap_standard_error():
    rng = np.random.default_rng(0)
    m = 1000
    den = np.where(rng.random(m) < 0.05, 10.0, 1.0) * 40
    num = rng.beta(5, 2, size=(2, m)) * den
    missed = (rng.random(m) < 0.3).astype(float)
    est, se = ratio_estimates(num, den)
    assert est == pytest.approx(num.sum(axis=1) / den.sum(), abs=1e-15)
    est_i, se_i = ratio_estimates(missed)
    assert est_i == pytest.approx(missed.mean(), abs=1e-15)
    assert se_i == pytest.approx(missed.std() / np.sqrt(m), rel=1e-12)
    # the bootstrap's standard deviation tends to the plug-in standard error
    w = resample_counts(m, 4000, seed=3)
    boot = (num @ w.T) / (w @ den)
    assert boot.std(axis=1) == pytest.approx(se, rel=0.05)
    # leading axes broadcast: (R, A, m) repetitions x attacks x users
    est3, se3 = ratio_estimates(np.stack([num, num]), den)
    assert est3.shape == (2, 2) and np.array_equal(se3[1], se)


def test_attack_bounds_one_attack_is_agresti_coull_ties_widen_only_the_upper_side():
    rng = np.random.default_rng(4)
    missed = (rng.random((5, 2000)) < 0.5).astype(float)
    lo, hi = minimum_interval(missed[:1])
    centre, se = boundary_estimates(missed[:1], z=1.959964)
    assert (float(lo), float(hi)) == pytest.approx((centre[0] - 1.959964 * se[0], centre[0] + 1.959964 * se[0]),
                                                   abs=2e-4)  # the upper multiplier is simulated
    lo5, hi5 = minimum_interval(missed)
    # the lower bound is the lowest attack's own; the upper multiplier is max-type over 5 independent attacks
    assert lo5 == pytest.approx(attack_bounds(missed)[0].min(), abs=1e-15)
    assert hi5 > minimum_interval(missed[[int(missed.mean(axis=1).argmin())]])[1]
    # a far weaker attack cannot lower the bounds of the minimum (it changes the simulated draws
    # the multipliers come from by simulation noise, not the attacks they look at)
    strong = np.vstack([missed[:1], np.ones((1, 2000))])
    assert np.allclose(minimum_interval(strong), (lo, hi), atol=1e-3)   # a tenth of a standard error
    # a sum of n alike minima: lower bound at z/sqrt(n) (closer), upper at the sum's joint multiplier
    (lo_n, hi_n), *_ = sum_bounds([(missed[:1], None)] * 4, seeds=[1, 2, 3, 4])
    assert lo_n[0] > lo and hi_n[0] < hi
    # unequal weights (the weighted total's 0.1 and 0.9): the heavy term's lower bound nears its own
    # z(alpha/2), not z/sqrt(n) as alike terms would give
    (_, _), (lo_h, _) = sum_bounds([(missed[:1], None), (missed[1:2], None)], [0.1, 0.9], seeds=[1, 2])
    (_, _), (lo_e, _) = sum_bounds([(missed[:1], None), (missed[1:2], None)], seeds=[1, 2])
    assert lo_h[0] < lo_e[0]
    # bounds stay in [0, 1] and a score of exactly 0 or 1 gets a positive width
    assert attack_bounds(np.ones((1, 2000)))[1][0] == 1.0 and attack_bounds(np.ones((1, 2000)))[0][0] < 0.999
    assert attack_bounds(np.zeros((1, 2000)))[1][0] > 0.001


def test_joint_draws_carry_the_attacks_correlation():
    rng = np.random.default_rng(5)
    base = (rng.random(4000) < 0.6).astype(float)
    same = np.vstack([base, base, (rng.random(4000) < 0.6)])
    z = joint_normal(same, seed=1)
    assert z.shape == (4000, 3)
    corr = np.corrcoef(z.T)
    # the draws' correlation is the data's (0.023 between the independent attacks), within 4 standard
    # errors of 4000 draws
    assert corr[0, 1] == pytest.approx(1.0, abs=1e-3)
    assert abs(corr[0, 2] - np.corrcoef(same[0], same[2])[0, 1]) < 4 / np.sqrt(4000)
    # identical attacks: the max-type multiplier is one attack's z(alpha/2), not Bonferroni's z(alpha/4)
    assert simultaneous_constant(joint_normal(same[:2], seed=2)) == pytest.approx(1.96, abs=0.08)
    assert simultaneous_constant(joint_normal(same[[0, 2]], seed=2)) == pytest.approx(2.24, abs=0.08)


def test_swap_probabilities_are_two_sided_and_exact_ties_are_certain():
    rng = np.random.default_rng(0)
    apart = np.stack([rng.normal(0.9, 0.01, 1000), rng.normal(0.5, 0.01, 1000)])
    assert swap_probabilities([0.9, 0.5], apart)[0] < 1e-6
    # a lead of one standard deviation of the difference: 2 * Phi(-1)
    one_sd = np.stack([rng.normal(0.71, 0.01, 20000), rng.normal(0.70, 0.0, 20000)])
    assert swap_probabilities([0.71, 0.70], one_sd)[0] == pytest.approx(0.3173, abs=0.01)
    assert swap_probabilities([1.0, 1.0], np.full((2, 1000), 1.0))[0] == 1.0
    # attacker sums: lower is better
    assert swap_probabilities([0.5, 0.9], apart[::-1], higher_is_better=False)[0] < 1e-6
    with pytest.raises(ValueError, match="published"):
        swap_probabilities([0.5], apart)


def test_stability_shares_dead_heats():
    reps = np.array([[1.0, 0.5, 0.7], [1.0, 0.9, 0.2]])
    assert stability(reps, 0) == pytest.approx((0.5 + 0 + 1) / 3)


def test_the_same_attacks_in_another_order_get_the_same_draws():
    """A results job that combines stored parts and one that recomputes may list a set's attacks in
    another order: each attack gets the same draws, so the bounds agree to the last digit."""
    rng = np.random.default_rng(0)
    num = (rng.random((5, 50)) < 0.3).astype(float)
    num[2] = num[1]                                           # two attacks tied, user for user
    perm = np.array([3, 0, 4, 2, 1])
    assert np.array_equal(joint_normal(num[perm], seed=3), joint_normal(num, seed=3)[:, perm])
    lower, upper = attack_bounds(num, seed=3)
    lower_p, upper_p = attack_bounds(num[perm], seed=3)
    assert np.array_equal(lower_p, lower[perm]) and np.array_equal(upper_p, upper[perm])
