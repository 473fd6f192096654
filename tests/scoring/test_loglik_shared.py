"""The judge's VisitProb and HomeProb attacks share their re-identification's log-likelihoods (issue 23):
I2 and T2 (I3 and T3) on the same inputs compute the matrix once, and decide exactly as if each computed
its own; the 2019 sampled mode never shares (its own random stream)."""
from __future__ import annotations

import numpy as np

from scoring.algorithms import attacks
from scoring.algorithms.registry import get
from scoring.grid import Grid, TimeAxis
from scoring.traces import AnonymizedTraces, Traces


def _inputs():
    grid = Grid()
    rng = np.random.default_rng(3)
    axis = TimeAxis(slots_per_day=20, ref_days=2, org_days=2)
    homes = rng.integers(0, grid.M, size=(60, 1))
    moves = rng.integers(0, grid.M, size=(60, 80))
    regions = np.where(rng.random((60, 80)) < 0.6, homes, moves).astype(np.int32)
    reference = Traces(np.arange(1, 61), axis.ref_time_ids(), regions[:, :40])
    pub = AnonymizedTraces.from_traces(Traces(np.arange(61, 121), axis.org_time_ids(), regions[:, 40:]), grid.M)
    return grid, reference, pub


def test_i2_and_t2_compute_one_log_likelihood_and_decide_as_alone(monkeypatch):
    grid, reference, pub = _inputs()
    calls = []
    real = attacks.log_likelihood

    def counting(*args, **kwargs):
        calls.append(kwargs.get("sample_2019", False))
        return real(*args, **kwargs)
    monkeypatch.setattr(attacks, "log_likelihood", counting)
    attacks._LOGLIK_MEMO.clear()
    shared = {name: get(name).run(grid, reference, pub, seed=5) for name in
              ("I2-VisitProb", "I3-HomeProb", "T2-VisitProb", "T3-HomeProb")}
    assert len(calls) == 2                                     # VisitProb's and HomeProb's, once each
    alone = {}
    for name in shared:
        attacks._LOGLIK_MEMO.clear()
        alone[name] = get(name).run(grid, reference, pub, seed=5)
    assert len(calls) == 6
    for name in ("I2-VisitProb", "I3-HomeProb"):
        assert np.array_equal(shared[name], alone[name])
    for name in ("T2-VisitProb", "T3-HomeProb"):
        assert np.array_equal(shared[name].regions, alone[name].regions)

    calls.clear()
    for name in ("I2-VisitProb", "T2-VisitProb"):
        get(name).run(grid, reference, pub, seed=5, sample_2019=True)
    assert calls == [True, True]                               # sampled runs are never shared
    _grid, _reference, other = _inputs()                      # equal data, another object
    calls.clear()
    get("I2-VisitProb").run(grid, reference, other, seed=5)    # computed again, never mistaken for the first
    assert calls == [False]
