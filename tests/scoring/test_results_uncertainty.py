"""Uncertainty of whole results (scoring.uncertainty.results_uncertainty) and the per-user parts of scores."""
from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from scoring import scores
from scoring.grid import Grid
from scoring.results import LEADERBOARD_TOTAL, AttackRow, SetRef, UtilityRow, compute_results
from scoring.seeds import derived_seed
from scoring.traces import Traces
from scoring.uncertainty import (
    minimum_interval,
    per_user_attack,
    results_uncertainty,
    scored_attack,
)
from scoring.vocabulary import AttackKind

RE, TR = AttackKind.REIDENTIFICATION, AttackKind.TRACE_INFERENCE
T0 = datetime(2019, 10, 1, 12, 0, tzinfo=UTC)


def _round(m: int, seed: int = 0):
    """Three teams; teams 1 and 2 have the same per-user parts (a dead heat), team 3 is far weaker.
    Team 2 also attacks team 3's IDP set; team 3's TRP set is invalid."""
    rng = np.random.default_rng(seed)
    missed = {1: rng.random((2, m)) < [[0.8], [0.9]], 3: rng.random((2, m)) < [[0.3], [0.5]]}
    missed[2] = missed[1]
    den = np.where(rng.random(m) < 0.05, 10.0, 1.0) * 40
    trace = {1: rng.beta(5, 2, size=(2, m)) * den, 3: rng.beta(1, 4, size=(2, m)) * den}
    trace[2] = trace[1]
    util = rng.beta(9, 2, size=m)
    utility, attacks, uvec, avec = [], [], {}, []
    for team in (1, 2, 3):
        for c in (1, 2):
            ref = SetRef(1, team, c)
            valid = not (team == 3 and c == 2)
            utility.append(UtilityRow(ref, float(util.mean()), valid, T0))
            uvec[ref] = {"num": util}
            if not valid:
                continue
            for k, name in enumerate(("I1", "I2")):
                parts = {"num": missed[team][k].astype(float)}
                row = AttackRow(ref, name, RE, float(parts["num"].mean()), T0)
                attacks.append(row)
                avec.append((row, parts))
            for k, name in enumerate(("T1", "T2")):
                parts = {"num": trace[team][k], "den": den}
                row = AttackRow(ref, name, TR, float(parts["num"].sum() / den.sum()), T0)
                attacks.append(row)
                avec.append((row, parts))
    team_attack = {"num": (rng.random(m) < 0.2).astype(float)}
    row = AttackRow(SetRef(1, 3, 1), 2, RE, float(team_attack["num"].mean()), T0)
    attacks.append(row)
    avec.append((row, team_attack))
    res = compute_results(teams=[1, 2, 3], round_weights={1: 1.0}, utility=utility, attacks=attacks,
                          tie_break="team-id")
    return res, uvec, avec


def test_intervals_hold_the_published_values_and_bound_the_minimum_from_per_attack_intervals():
    res, uvec, avec = _round(400)
    u = results_uncertainty(res, uvec, avec, seed=7)
    assert u["replicates"] == 1000 and u["method"] == "per-attack-bounds"
    for s in res.sets:
        iv = u["sets"][s.set.key]
        for field in ("s_u", "s_i_min", "s_t_min"):
            lo, hi = iv[field]
            assert lo <= getattr(s, field) <= hi, (s.set.key, field)
    assert u["sets"][SetRef(1, 3, 2).key]["s_t_min"] == (0.0, 0.0)  # invalid: 0 in every column
    # a set's interval is the minimum_interval of all its counted attempts, judge and team alike
    ref = SetRef(1, 3, 1)
    for kind, field in ((RE, "s_i_min"), (TR, "s_t_min")):
        rows = [(r, v) for r, v in avec if r.set == ref and r.kind == kind]
        assert len(rows) == (3 if kind == RE else 2)
        num = np.stack([v["num"] for _, v in rows])
        den = np.stack([v.get("den", np.ones(num.shape[1])) for _, v in rows])
        lo, hi = minimum_interval(num, den, seed=derived_seed(7, ref.key, kind, "joint"))
        assert u["sets"][ref.key][field] == pytest.approx((float(lo), float(hi)), abs=1e-12)


def test_intervals_shrink_with_more_users():
    def width(m):
        res, uvec, avec = _round(m, seed=3)
        lo, hi = results_uncertainty(res, uvec, avec, seed=1)["sets"][SetRef(1, 1, 1).key]["s_i_min"]
        return hi - lo
    assert width(1600) < 0.6 * width(100)


def test_a_dead_heat_is_flagged_and_a_clear_gap_is_not():
    res, uvec, avec = _round(400)
    u = results_uncertainty(res, uvec, avec, seed=7)
    total = u["leaderboards"][LEADERBOARD_TOTAL]
    assert [row["team"] for row in total] == [st.team for st in dict(res.leaderboards)[LEADERBOARD_TOTAL]]
    assert [row["team"] for row in total][2] == 3
    assert total[0]["swap_next"] == 1.0 and total[0]["tied_next"] is True  # teams 1 and 2: same parts
    assert total[1]["swap_next"] < 1e-6 and total[1]["tied_next"] is False  # team 3 far behind
    assert total[2]["swap_next"] is None
    lo, hi = total[2]["interval"]
    assert lo <= res.team_total(3).overall <= hi
    # the overall winner holds place 1 in about half the replicates; team 3's third place is certain
    assert 0.3 < u["awards"]["overall-1"] < 0.7
    assert u["awards"]["overall-3"] == 1.0


def test_per_user_parts_sum_to_the_scores(osaka_grid):
    grid: Grid = osaka_grid
    rng = np.random.default_rng(2)
    m, L = 30, 8
    truth = Traces(np.arange(1, m + 1), np.arange(1, L + 1), rng.integers(0, grid.M, size=(m, L)))
    estimate = Traces(truth.user_ids, truth.time_ids, rng.integers(0, grid.M, size=(m, L)))
    parts = per_user_attack(TR, grid, estimate, truth=truth, hospital_weight=10.0)
    assert parts["num"].sum() / parts["den"].sum() == pytest.approx(
        scores.trace_inference(grid, truth, estimate, hospital_weight=10.0), abs=1e-12)
    f = rng.permutation(np.arange(1, m + 1))
    guess = np.where(rng.random(m) < 0.4, f, np.roll(f, 1))
    parts = per_user_attack(RE, grid, guess, true_users=f)
    assert parts["num"].mean() == pytest.approx(scores.reidentification(f, guess), abs=1e-12)
    # users in ascending id: user f[i] was named correctly iff guess[i] == f[i]
    assert all(parts["num"][f[i] - 1] == float(guess[i] != f[i]) for i in range(m))


def test_scored_attack_gives_the_score_and_the_parts_of_the_two_separate_calls(osaka_grid):
    """One pass (what uploads, the judge's attacks and the preview store) gives the very float of
    ``scores.attack_score`` and the arrays of ``per_user_attack``, for both kinds."""
    grid: Grid = osaka_grid
    rng = np.random.default_rng(5)
    m, L = 40, 12
    truth = Traces(np.arange(1, m + 1), np.arange(1, L + 1), rng.integers(0, grid.M, size=(m, L)))
    estimate = Traces(truth.user_ids, truth.time_ids, rng.integers(0, grid.M, size=(m, L)))
    f = rng.permutation(np.arange(1, m + 1))
    guess = np.where(rng.random(m) < 0.4, f, np.roll(f, 1))
    for kind, output, secret in ((TR, estimate, {"truth": truth}), (RE, guess, {"true_users": f})):
        value, parts = scored_attack(kind, grid, output, lambda_t=1.5, hospital_weight=7.0, **secret)
        assert value == scores.attack_score(kind, grid, output, lambda_t=1.5, hospital_weight=7.0, **secret)
        expected = per_user_attack(kind, grid, output, lambda_t=1.5, hospital_weight=7.0, **secret)
        assert parts.keys() == expected.keys()
        for name in parts:
            np.testing.assert_array_equal(parts[name], expected[name])
    with pytest.raises(ValueError, match="original traces"):
        scored_attack(TR, grid, estimate)
