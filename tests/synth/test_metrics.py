"""Realism metrics on hand-worked tiny examples (synth/metrics.py)."""
from __future__ import annotations

import numpy as np
import pytest

from scoring import analyses
from scoring.grid import Grid
from scoring.traces import Traces
from synth import metrics


def T(rows, time_ids=None):
    rows = np.asarray(rows, dtype=np.int32)
    t = np.arange(1, rows.shape[1] + 1) if time_ids is None else np.asarray(time_ids)
    return Traces(np.arange(1, rows.shape[0] + 1), t, rows)


LINE2 = Grid(nx=2, ny=1, hospitals=())      # regions 0 and 1, one grid unit apart
LINE3 = Grid(nx=3, ny=1, hospitals=())


def test_tp_tv_and_top50_hand_worked():
    # S = 2. Real: slot 0 -> (1, 0), slot 1 -> (1/2, 1/2). Synthetic: slot 0 -> (1/2, 1/2), slot 1 -> (0, 1).
    real = T([[0, 1], [0, 0]])
    syn = T([[1, 1], [0, 1]])
    assert metrics.tp_tv(LINE2, real, syn, 2) == pytest.approx((1.0 + 1.0) / 2)
    # Top-1 region of the real slot: slot 0 region 0 (|1 - 1/2|), slot 1 tie -> region 0 (|1/2 - 0|).
    assert metrics.tp_tv_top50(LINE2, real, syn, 2, top=1) == pytest.approx(0.5)
    # With every region in the top set it is TP-TV; identical traces give 0.
    assert metrics.tp_tv_top50(LINE2, real, syn, 2) == pytest.approx(1.0)
    assert metrics.tp_tv(LINE2, real, real, 2) == 0.0


def test_tp_tv_pools_days_by_slot_of_day():
    # Two days of S = 1: the slot's population pools both days.
    real = T([[0, 1]])
    syn = T([[1, 0]])
    assert metrics.tp_tv(LINE2, real, syn, 1) == 0.0


def test_tm_emd_hand_worked():
    # One day of two slots. Real transitions: 0->1 and 0->0, so row 0 = (1/2, 1/2), row 1 is empty
    # (self-loop (0, 1)). Synthetic: 1->1 and 0->1: row 0 = (0, 1), row 1 = (0, 1).
    real = T([[0, 1], [0, 0]])
    syn = T([[1, 1], [0, 1]])
    # Row 0: half the mass moves one grid unit along x; projected on theta the shift is |theta_x|.
    theta = analyses.random_projections(50, 0)
    expected = (0.5 * np.abs(theta[0]).mean() + 0.0) / 2
    assert metrics.tm_emd(LINE2, real, syn, 2) == pytest.approx(expected, rel=1e-12)
    assert metrics.tm_emd(LINE2, real, real, 2) == 0.0


def test_vf_histograms_hand_worked():
    # B = 4. User 1 spends 3/4 in region 0 (bin 2: (1/2, 3/4]) and 1/4 in region 1 (bin 0: (0, 1/4]);
    # user 2 never leaves region 0 (fraction 1: not counted).
    real = T([[0, 0, 0, 1], [0, 0, 0, 0]])
    h = metrics.visit_fraction_histograms(real, 3, bins=4, min_events=1)
    expected = np.zeros((3, 4))
    expected[0, 2] = 1
    expected[1, 0] = 1
    np.testing.assert_array_equal(h, expected)
    # Users with fewer events than min_events are skipped.
    assert metrics.visit_fraction_histograms(real, 3, bins=4, min_events=5).sum() == 0


def test_vf_tv_hand_worked():
    real = T([[0, 0, 0, 1], [0, 0, 0, 0]])      # region 0: bin 2; region 1: bin 0
    syn = T([[0, 0, 0, 1], [2, 2, 2, 0]])       # region 0: bins 2 and 0; region 1: bin 0; region 2: bin 2
    # Region 0: |0 - 1/2| + |1 - 1/2| = 1; region 1: 0; region 2 has no real histogram: skipped.
    assert metrics.vf_tv(LINE3, real, syn, bins=4, min_events=1) == pytest.approx(0.5)
    # A synthetic set that never visits region 1 counts as "all mass in the first bin" there.
    syn2 = T([[0, 0, 0, 2], [0, 0, 2, 2]])      # region 0: bins 2 and 1; region 1: none
    # Region 0: real (0, 0, 1, 0) vs (0, 1/2, 1/2, 0) -> 1; region 1: real (1, 0, 0, 0) vs (1, 0, 0, 0) -> 0.
    assert metrics.vf_tv(LINE3, real, syn2, bins=4, min_events=1) == pytest.approx(0.5)
    assert np.isnan(metrics.vf_tv(LINE3, real, syn, bins=4, min_events=5))


def test_diversity_hand_worked():
    # h = 2 pairs. Per-user distributions over 2 regions.
    team1 = T([[0, 0], [0, 1]])                 # (1, 0), (1/2, 1/2)
    team2 = T([[0, 0], [1, 1], [1, 1], [0, 0]])  # (1, 0), (0, 1), (0, 1), (1, 0)
    d = metrics.diversity(LINE2, team1, team2)
    # Same: user1 vs user1 = 0; user2 vs user2 = |1/2 - 0| + |1/2 - 1| = 1.
    # Diff: user1 vs user3 = 2; user2 vs user4 = 1.
    assert d["pairs"] == 1  # min(2, 4) // 2
    assert d["same_tv"] == pytest.approx(0.0)
    assert d["diff_tv"] == pytest.approx(2.0)
    d = metrics.diversity(LINE2, T([[0, 0], [0, 1], [1, 1], [1, 1]]), team2)
    assert d["pairs"] == 2
    assert d["same_tv"] == pytest.approx((0 + 1) / 2)
    assert d["diff_tv"] == pytest.approx((2 + 1) / 2)
    assert d["same_std"] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        metrics.diversity(LINE2, T([[0, 0]]), team2)


def test_home_stay_and_home_estimate():
    # S = 2, two days: time ids 1, 2 (day 1) and 3, 4 (day 2).
    tr = T([[0, 1, 0, 0],
            [1, 1, 0, 1]])
    homes = np.array([0, 1])
    # Slot 0: user 1 home on both days, user 2 home on day 1 -> 3/4; slot 1: user 1 on day 2, user 2 both -> 3/4.
    np.testing.assert_allclose(metrics.home_stay(tr, homes, 2), [0.75, 0.75])
    np.testing.assert_allclose(metrics.home_stay(tr, np.array([1, 0]), 2), [0.25, 0.25])
    np.testing.assert_array_equal(metrics.estimate_homes(tr, 2), [0, 1])
    with pytest.raises(ValueError):
        metrics.home_stay(tr, np.array([0]), 2)
    # A slot of the day the traces never cover has no probability.
    only_first = T([[0, 0], [1, 0]], time_ids=[1, 3])
    out = metrics.home_stay(only_first, homes, 2)
    assert out[0] == pytest.approx(0.75) and np.isnan(out[1])


def test_compute_all_matches_the_parts():
    rng = np.random.default_rng(3)
    grid = Grid(nx=4, ny=4, hospitals=())
    real = T(rng.integers(0, 16, size=(6, 20)))
    syn = T(rng.integers(0, 16, size=(8, 10)))
    other = T(rng.integers(0, 16, size=(8, 10)))
    out = metrics.compute_all(real, syn, grid, 10, homes=np.zeros(8, dtype=int), other_team=other)
    assert out["tp_tv"] == metrics.tp_tv(grid, real, syn, 10)
    assert out["tp_tv_top50"] == metrics.tp_tv_top50(grid, real, syn, 10)
    assert out["tm_emd"] == metrics.tm_emd(grid, real, syn, 10)
    assert out["vf_tv"] == metrics.vf_tv(grid, real, syn)
    assert out["home_stay"] == metrics.home_stay(syn, np.zeros(8, dtype=int), 10).tolist()
    assert len(out["home_stay_real"]) == 10
    assert out["diversity"] == metrics.diversity(grid, syn, other)
    assert metrics.compute_all(real, syn, grid, 10)["diversity"] is None
