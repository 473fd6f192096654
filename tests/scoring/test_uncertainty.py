"""Per-attack estimates and bounds, swap probabilities and award stability (scoring.uncertainty)."""
from __future__ import annotations

import numpy as np
import pytest

from scoring.uncertainty import (
    attack_bounds,
    minimum_interval,
    ratio_estimates,
    resample_counts,
    stability,
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


def test_attack_bounds_one_attack_is_the_normal_interval_ties_widen_only_the_upper_side():
    lo, hi = minimum_interval(np.array([0.5]), np.array([0.01]))
    assert (float(lo), float(hi)) == pytest.approx((0.5 - 1.959964 * 0.01, 0.5 + 1.959964 * 0.01), abs=1e-6)
    lo5, hi5 = minimum_interval(np.full(5, 0.5), np.full(5, 0.01))
    assert lo5 == pytest.approx(lo) and hi5 > hi            # Bonferroni over the 5 attempts, upper side only
    assert hi5 == pytest.approx(0.5 + 2.575829 * 0.01, abs=1e-6)  # z(0.05 / 10)
    # a far weaker attack cannot lower the bounds of the minimum
    lo2, hi2 = minimum_interval(np.array([0.5, 0.9]), np.array([0.01, 0.01]))
    assert lo2 == pytest.approx(lo)
    # a sum of n minima takes each term at alpha / n; bounds stay in [0, 1]
    lo_n, hi_n = attack_bounds(np.array([0.5]), np.array([0.01]), terms=4)
    assert lo_n[0] < lo and hi_n[0] > hi
    assert attack_bounds(np.array([0.999]), np.array([0.01]))[1][0] == 1.0


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
