"""The city model against the 2019 people-flow sample (synth/realism.py, synth/README.md).

Stated tolerances (the README table gives the measured values):
- distinct regions per user per 35 slots: within 4 of the sample's mean;
- share of time in the top region: within 0.02 of the sample's mean;
- probability of staying in one region between slots: within 0.04;
- population L1: overall <= 0.85, per slot (TP-TV) and over 4x4-cell
  blocks clearly below the uniform-random baseline;
- and on every statistic closer to the sample than uniform-random traces.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring.grid import Grid
from scoring.traces import Traces
from synth import realism


@pytest.fixture(scope="module")
def table(pwscup2019):
    return realism.compare(pwscup2019 / "peopleflow", seed=0)


def test_city_model_is_near_the_people_flow_sample(table):
    sample = table.row("people-flow train (reference)")
    city = table.row("city model")
    uniform = table.row("uniform random")
    assert abs(city["distinct_mean"] - sample["distinct_mean"]) <= 4.0
    assert abs(city["top_share_mean"] - sample["top_share_mean"]) <= 0.02
    assert abs(city["stay"] - sample["stay"]) <= 0.04
    assert city["pop_l1"] <= 0.85
    assert city["pop_l1"] <= uniform["pop_l1"] - 0.1
    assert city["pop_l1_slot"] <= uniform["pop_l1_slot"] - 0.08
    assert city["pop_l1_4x4"] <= min(0.45, 0.7 * uniform["pop_l1_4x4"])
    for stat in ("distinct_mean", "distinct_median", "top_share_mean", "top_share_median", "stay"):
        assert abs(city[stat] - sample[stat]) < 0.6 * abs(uniform[stat] - sample[stat]), stat


def test_noise_floor_and_contest_day_rows(table):
    test = table.row("people-flow test (noise floor)")
    city = table.row("city model")
    contest = table.row("city model, contest day (8:00-17:30)")
    assert test["pop_l1"] < city["pop_l1"]
    assert np.isnan(contest["pop_l1_slot"])
    assert abs(contest["top_share_mean"] - table.row("people-flow train (reference)")["top_share_mean"]) <= 0.03
    text = table.to_text()
    assert text.count("\n") == 1 + len(table.rows)
    with pytest.raises(KeyError):
        table.row("nothing")


def test_trace_stats_hand_worked():
    # One user, window 4: regions 0 0 1 2 -> 3 distinct, top share 2/4, 1 stay out of 3 steps.
    tr = Traces(np.array([1]), np.arange(1, 5), np.array([[0, 0, 1, 2]], dtype=np.int32))
    s = realism.trace_stats(tr, 4, window=4)
    assert s["distinct_mean"] == 3 and s["top_share_mean"] == 0.5
    assert s["stay"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="fewer than a window"):
        realism.trace_stats(tr, 4, window=5)


def test_block_population():
    g = Grid(nx=5, ny=4, hospitals=())
    p = np.full(20, 1 / 20)
    b = realism.block_population(p, g, block=4)
    np.testing.assert_allclose(b, [16 / 20, 4 / 20])
