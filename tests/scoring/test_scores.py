"""The three scores (rules §7) on hand-worked examples and against a naive per-event reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from scoring import scores
from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, SetTable, Traces

GRID = Grid()
W = 0.12 / 32 * 91          # km, one cell east  (d(1,2) = 0.34125)
H = 0.10 / 32 * 111         # km, one cell north (d(1,33) = 0.346875)
FAR = math.hypot(31 * W, 31 * H)   # d(1, 1024), about 15.1 km


def one_user(regions, events=None, sets=None):
    regions = np.array([regions], dtype=np.int32)
    truth = Traces(np.array([1]), np.arange(1, regions.shape[1] + 1), regions)
    if events is None:
        return truth
    return truth, AnonymizedTraces(truth.user_ids, truth.time_ids, np.array([events], dtype=np.int32),
                                   sets or SetTable.singletons(GRID.M))


def test_utility_hand_worked_single_regions_and_deletion():
    # Events: exact, one cell east, one cell north-east, deleted.
    truth, anon = one_user([0, 0, 0, 0], [0, 1, 33, GRID.M])
    per = scores.utility_per_event(GRID, truth, anon)
    expected = [1.0, 1 - W / 2, 1 - math.hypot(W, H) / 2, 0.0]
    assert per.shape == (1, 4)
    assert np.allclose(per[0], expected, rtol=0, atol=1e-12)
    assert scores.utility(GRID, truth, anon) == pytest.approx(sum(expected) / 4, abs=1e-12)
    # A region farther than lambda_U = 2 km is worth nothing.
    truth, anon = one_user([0], [1023])
    assert scores.utility(GRID, truth, anon) == 0.0


def test_utility_of_generalization_both_conventions():
    # Set {1, 2, 34} (0-based 0, 1, 33) for original region 1: all members within 2 km, so
    # both conventions agree: g(mean d) = mean g(d).
    near = SetTable.from_sets(GRID.M, [[0, 1, 33], [0, 1023]])
    truth, anon = one_user([0], [GRID.M + 1], near)
    mean_d = (0 + W + math.hypot(W, H)) / 3
    for conv in scores.CONVENTIONS:
        assert scores.utility(GRID, truth, anon, convention=conv) == pytest.approx(1 - mean_d / 2, abs=1e-12)
    # Set {1, 1024}: mean distance FAR/2 > 2 km gives 0 under mean-distance (the paper),
    # while mean-loss (the 2019 program) averages g(0) = 1 and g(FAR) = 0 to 0.5.
    truth, anon = one_user([0], [GRID.M + 2], near)
    assert scores.utility(GRID, truth, anon, convention="mean-distance") == 0.0
    assert scores.utility(GRID, truth, anon, convention="mean-loss") == 0.5
    assert scores.utility(GRID, truth, anon) == 0.0          # mean-distance is the default
    # lambda_U is a setting: with lambda_U = 20 km, mean-distance gives 1 - (FAR/2)/20.
    assert scores.utility(GRID, truth, anon, lambda_u=20.0) == pytest.approx(1 - FAR / 2 / 20, abs=1e-12)


def test_paper_figure6_utility_example():
    # alpha_{1,3} = (d(x2,x2) + d(x2,x4) + d(x2,x5)) / 3 for original x2 generalized to {x2, x4, x5}.
    sets = SetTable.from_sets(GRID.M, [[1, 3, 4]])
    truth, anon = one_user([1], [GRID.M + 1], sets)
    alpha = (0 + 2 * W + 3 * W) / 3
    assert scores.utility(GRID, truth, anon) == pytest.approx(1 - alpha / 2, abs=1e-12)


def test_validity_threshold():
    assert scores.is_valid(0.7) and scores.is_valid(0.9) and not scores.is_valid(0.6999999999)
    assert scores.is_valid(0.5, s_req=0.5) and not scores.is_valid(0.49, s_req=0.5)


def test_reidentification_paper_figure6():
    # f = {(2001,2), (2002,3), (2003,1)}, f_hat = {(2001,2), (2002,2), (2003,1)}: s_I = 1 - 2/3.
    assert scores.reidentification([2, 3, 1], [2, 2, 1]) == pytest.approx(1 / 3, abs=1e-15)
    assert scores.reidentification([1, 2], [1, 2]) == 0.0
    assert scores.reidentification([1, 2], [2, 1]) == 1.0
    with pytest.raises(ValueError):
        scores.reidentification([1, 2], [1])


def test_trace_inference_hospital_weight_from_the_original_region():
    # Region 2 (index 1) is a hospital, region 1 (index 0) is not.
    assert GRID.hospital_mask[1] and not GRID.hospital_mask[0]
    truth = one_user([1, 0])
    exact_hospital_far_other = Traces(truth.user_ids, truth.time_ids, np.array([[1, 1023]], dtype=np.int32))
    # Weights 10 and 1: (10 * 0 + 1 * 1) / 11.
    assert scores.trace_inference(GRID, truth, exact_hospital_far_other) == pytest.approx(1 / 11, abs=1e-15)
    assert scores.trace_inference(GRID, truth, exact_hospital_far_other, hospital_weight=1) == 0.5
    # Guessing a hospital does not weigh the event: the weight comes from the original region.
    truth = one_user([0, 0])
    guess = Traces(truth.user_ids, truth.time_ids, np.array([[1, 1]], dtype=np.int32))
    assert scores.trace_inference(GRID, truth, guess) == pytest.approx(W / 2, abs=1e-12)
    # Perfect inference scores 0; lambda_T caps each event at 1.
    assert scores.trace_inference(GRID, truth, truth) == 0.0
    far = Traces(truth.user_ids, truth.time_ids, np.array([[1023, 1023]], dtype=np.int32))
    assert scores.trace_inference(GRID, truth, far) == 1.0
    assert scores.trace_inference(GRID, truth, far, lambda_t=100.0) == pytest.approx(FAR / 100, abs=1e-12)


def naive_utility(grid, truth, anon, convention, lam=2.0):
    """Per-event Python reference (tests only)."""
    total = 0.0
    for i in range(truth.m):
        for j in range(truth.L):
            o = truth.regions[i, j]
            members = anon.sets.set_members(int(anon.events[i, j]))
            if len(members) == 0:
                u = 0.0
            elif convention == "mean-distance":
                u = max(0.0, 1 - np.mean([grid.distance[o, r] for r in members]) / lam)
            else:
                u = np.mean([max(0.0, 1 - grid.distance[o, r] / lam) for r in members])
            total += u
    return total / truth.regions.size


def random_anon(seed, m=15, L=20, n_sets=12):
    rng = np.random.default_rng(seed)
    truth = Traces(np.arange(1, m + 1), np.arange(1, L + 1), rng.integers(0, GRID.M, (m, L)).astype(np.int32))
    gens = []
    for _ in range(n_sets):
        centre = rng.integers(0, GRID.M)
        near = np.flatnonzero(GRID.distance[centre] < rng.uniform(0.5, 4.0))
        gens.append(rng.choice(near, size=min(len(near), rng.integers(2, 12)), replace=False))
    sets = SetTable.from_sets(GRID.M, gens)
    kind = rng.random((m, L))
    events = np.where(kind < 0.3, truth.regions,
                      np.where(kind < 0.4, GRID.M, np.where(kind < 0.5, rng.integers(0, GRID.M, (m, L)),
                                                            GRID.M + 1 + rng.integers(0, n_sets, (m, L)))))
    return truth, AnonymizedTraces(truth.user_ids, truth.time_ids, events.astype(np.int32), sets)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("convention", scores.CONVENTIONS)
def test_vectorised_utility_matches_a_per_event_reference(seed, convention, monkeypatch):
    truth, anon = random_anon(seed)
    expected = naive_utility(GRID, truth, anon, convention)
    assert scores.utility(GRID, truth, anon, convention=convention) == pytest.approx(expected, abs=1e-12)
    # The same through many small member batches (the memory bound on huge uploads).
    monkeypatch.setattr(scores, "_BATCH_MEMBERS", 7)
    assert scores.utility(GRID, truth, anon, convention=convention) == pytest.approx(expected, abs=1e-12)


def test_trace_inference_matches_a_per_event_reference():
    rng = np.random.default_rng(5)
    truth = Traces(np.arange(1, 11), np.arange(1, 31), rng.integers(0, GRID.M, (10, 30)).astype(np.int32))
    truth.regions[0, :5] = 1                       # make sure hospital events occur
    est = Traces(truth.user_ids, truth.time_ids,
                 np.where(rng.random((10, 30)) < 0.5, truth.regions,
                          rng.integers(0, GRID.M, (10, 30))).astype(np.int32))
    num = den = 0.0
    for i in range(10):
        for j in range(30):
            w = 10.0 if GRID.hospital_mask[truth.regions[i, j]] else 1.0
            num += w * min(1.0, GRID.distance[truth.regions[i, j], est.regions[i, j]] / 2.0)
            den += w
    assert scores.trace_inference(GRID, truth, est) == pytest.approx(num / den, abs=1e-12)


def test_misaligned_inputs_are_refused():
    truth, anon = random_anon(0, m=3, L=4)
    other = Traces(truth.user_ids, truth.time_ids[:3], truth.regions[:, :3])
    with pytest.raises(ValueError):
        scores.utility(GRID, other, anon)
    with pytest.raises(ValueError):
        scores.trace_inference(GRID, truth, other)
    shifted = Traces(truth.user_ids + 1, truth.time_ids, truth.regions)
    with pytest.raises(ValueError):
        scores.trace_inference(GRID, truth, shifted)
    with pytest.raises(ValueError):
        scores.utility(GRID, truth, anon, convention="median")


@pytest.mark.parametrize("lam", [2.0, 0.5, 7.0])
def test_per_event_values_are_the_formula_bit_for_bit_for_every_threshold(lam):
    """s_T's and s_U's per-event values come from a per-(grid, threshold) table of region pairs: they
    are g(d(o, r)) exactly, and a second threshold (or grid) gets its own table, not the first one's."""
    rng = np.random.default_rng(int(lam * 10))
    for grid in (Grid(), Grid(nx=5, ny=3, hospitals=(2, 7))):
        o = rng.integers(0, grid.M, size=(30, 12)).astype(np.int32)
        e = rng.integers(0, grid.M, size=(30, 12)).astype(np.int32)
        users, times = np.arange(1, 31), np.arange(1, 13)
        truth, estimate = Traces(users, times, o), Traces(users, times, e)
        got_t = scores.trace_inference_per_event(grid, truth, estimate, lambda_t=lam)
        assert np.array_equal(got_t, np.minimum(1.0, grid.distance[o, e] / lam))
        anon = AnonymizedTraces(users, times, e, SetTable.singletons(grid.M))
        got_u = scores.utility_per_event(grid, truth, anon, lambda_u=lam)
        assert np.array_equal(got_u, np.maximum(0.0, 1.0 - grid.distance[o, e] / lam))
