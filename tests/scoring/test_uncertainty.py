"""Bootstrap intervals, swap probabilities and award stability (scoring.uncertainty)."""
from __future__ import annotations

import numpy as np
import pytest

from scoring.uncertainty import bootstrap_set, interval, resample_counts, stability, swap_probabilities


def per_user(m: int, seed: int = 0):
    """Per-user values of a set: utility, 3 re-identification attacks, 2 trace attacks."""
    rng = np.random.default_rng(seed)
    utility = rng.beta(8, 3, size=m)
    hits = rng.random((3, m)) < np.array([[0.1], [0.4], [0.3]])
    den = np.where(rng.random(m) < 0.05, 10.0, 1.0) * 40
    num = rng.beta(5, 2, size=(2, m)) * den
    return utility, hits, num, den


def full_sample(utility, hits, num, den):
    return utility.mean(), (1 - hits.mean(axis=1)).min(), (num.sum(axis=1) / den.sum()).min()


def test_resample_counts_are_multinomial_draws_of_m_users():
    w = resample_counts(50, 200, seed=1)
    assert w.shape == (200, 50)
    assert np.all(w.sum(axis=1) == 50)
    assert np.all(w >= 0) and np.all(w == np.round(w))
    assert abs(w.mean() - 1.0) < 1e-12
    assert np.array_equal(w, resample_counts(50, 200, seed=1))
    assert not np.array_equal(w, resample_counts(50, 200, seed=2))


def test_replicates_equal_a_direct_computation_on_the_resample():
    utility, hits, num, den = per_user(40)
    reps = bootstrap_set(m=40, seed=5, replicates=30, utility=utility, reidentified=hits,
                         trace_num=num, trace_den=den)
    w = resample_counts(40, 30, seed=5)
    for b in (0, 7, 29):
        idx = np.repeat(np.arange(40), w[b].astype(int))
        assert reps.s_u[b] == pytest.approx(utility[idx].mean())
        assert reps.s_i_min[b] == pytest.approx((1 - hits[:, idx].mean(axis=1)).min())
        assert reps.s_t_min[b] == pytest.approx((num[:, idx].sum(axis=1) / den[idx].sum()).min())


def test_intervals_cover_the_full_sample_value_and_shrink_with_more_users():
    widths = {}
    for m in (200, 2000):
        utility, hits, num, den = per_user(m, seed=m)
        point = full_sample(utility, hits, num, den)
        reps = bootstrap_set(m=m, seed=1, replicates=1000, utility=utility, reidentified=hits,
                             trace_num=num, trace_den=den)
        widths[m] = []
        for value, samples in zip(point, (reps.s_u, reps.s_i_min, reps.s_t_min)):
            lo, hi = interval(samples)
            assert lo <= value <= hi
            widths[m].append(hi - lo)
    # sqrt(10) fewer users' noise: every interval at least twice as narrow.
    for narrow, wide in zip(widths[2000], widths[200]):
        assert narrow < wide / 2


def test_a_kind_without_attacks_has_no_replicates():
    utility, _, _, _ = per_user(10)
    reps = bootstrap_set(m=10, seed=0, replicates=20, utility=utility)
    assert reps.s_i_min is None and reps.s_t_min is None and reps.s_u.shape == (20,)
    with pytest.raises(ValueError, match="trace_den"):
        bootstrap_set(m=10, seed=0, trace_num=np.ones((1, 10)))


def test_swap_probabilities():
    rng = np.random.default_rng(0)
    apart = np.stack([rng.normal(0.9, 0.01, 1000), rng.normal(0.5, 0.01, 1000)])
    same = np.stack([rng.normal(0.7, 0.01, 1000), rng.normal(0.7, 0.01, 1000)])
    identical = np.full((2, 1000), 1.0)
    assert swap_probabilities(apart)[0] == 0.0
    assert 0.4 < swap_probabilities(same)[0] < 0.6
    assert swap_probabilities(identical)[0] == 0.5
    # Attacker sums: lower is better, so the same rows in reverse order never swap.
    assert swap_probabilities(apart[::-1], higher_is_better=False)[0] == 0.0
    with pytest.raises(ValueError):
        swap_probabilities(np.ones(5))


def test_stability_shares_ties():
    r = np.array([[1.0, 1.0, 0.2, 0.9], [0.5, 1.0, 0.9, 0.1]])
    assert stability(r, 0) == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert stability(r, 1) == pytest.approx((0 + 0.5 + 1 + 0) / 4)
    assert stability(r, 1, higher_is_better=False) == pytest.approx((1 + 0.5 + 0 + 1) / 4)
