"""The judge's VisitProb and HomeProb attacks share their re-identification's log-likelihoods (issue 23):
I2 and T2 (I3 and T3) on the same inputs compute the matrix once, and decide exactly as if each computed
its own; the 2019 sampled mode never shares (its own random stream)."""
from __future__ import annotations

import numpy as np

from scoring.algorithms import attacks
from scoring.algorithms.registry import get
from scoring.grid import Grid, TimeAxis
from scoring.pseudonymize import pseudonymize
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


def test_another_pseudonymization_of_the_same_set_reuses_the_rows_and_decides_as_alone(monkeypatch):
    """The privacy preview attacks several pseudonymizations of one anonymized set: the later ones take
    the stored likelihood rows in their own pseudonym order (no new product) and every attack's output
    is the one it gives with nothing stored. With generalized sets and deletions, and two users with
    the very same events (either row matches either)."""
    grid, reference, plain = _inputs()
    anon = get("A2-MRLH").run(grid, Traces(reference.user_ids, plain.time_ids, plain.events.astype(np.int32)),
                              seed=1, mu_x=1, mu_y=1, **{"lambda": 0.3})
    events = anon.events.copy()
    events[7] = events[3]                                      # two users with the same events
    events[10, ::3] = 5                                        # and some single regions among the sets
    anon = AnonymizedTraces(anon.user_ids, anon.time_ids, events, anon.sets)
    calls = []
    real = attacks.log_likelihood

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(attacks, "log_likelihood", counting)
    names = ("I2-VisitProb", "I3-HomeProb", "T2-VisitProb", "T3-HomeProb")
    attacks._LOGLIK_MEMO.clear()
    draws = [pseudonymize(anon, seed=k).pubtraces for k in range(3)]
    shared = [{name: get(name).run(grid, reference, pub, seed=5) for name in names} for pub in draws]
    assert len(calls) == 2                                     # VisitProb's and HomeProb's, for all draws
    for pub, outputs in zip(draws, shared, strict=True):
        for name in names:
            attacks._LOGLIK_MEMO.clear()
            alone = get(name).run(grid, reference, pub, seed=5)
            if name.startswith("I"):
                assert np.array_equal(outputs[name], alone), name
            else:
                assert np.array_equal(outputs[name].regions, alone.regions), name

    attacks._LOGLIK_MEMO.clear()
    get("I2-VisitProb").run(grid, reference, draws[0], seed=5)
    changed = draws[1].events.copy()
    changed[0, 0] = changed[0, 1] if changed[0, 0] != changed[0, 1] else grid.M  # one event differs
    calls.clear()
    get("I2-VisitProb").run(grid, reference, AnonymizedTraces(draws[1].user_ids, draws[1].time_ids, changed,
                                                              draws[1].sets), seed=5)
    assert calls == [1]                                        # not the same rows: computed
