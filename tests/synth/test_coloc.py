"""Co-location-aware traces with DP (seed 003): noise scales, trimming, Privelet, planting, budget, seeds."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from scoring.grid import Grid
from scoring.traces import Traces
from synth import coloc
from synth.city import CityModel

GRID = Grid(nx=12, ny=12, hospitals=())


@pytest.fixture(scope="module")
def traces():
    return CityModel(GRID, seed=2).simulate(80, 4, seed=3)


def test_friendship_noise_has_the_node_dp_scale():
    n, eps1 = 40, 0.5
    iu = np.array(list(itertools.combinations(range(n), 2)))
    edges = iu[::2]                                                        # p = 0.5
    p = coloc.friendship_probability(n, edges)
    assert p == pytest.approx(len(edges) * 2 / (n * (n - 1)))
    scale = coloc.friendship_scale(n, eps1)
    assert scale == pytest.approx(2 / (n * eps1))                          # Proposition 1: sensitivity 2/n
    rng = np.random.default_rng(0)
    draws = np.array([coloc.noisy_friendship_probability(n, edges, eps1, rng) for _ in range(4000)])
    assert np.abs(draws - p).mean() == pytest.approx(scale, rel=0.06)      # E|Lap(b)| = b


def test_colocation_matrix_laplace_scale_and_read_instants(traces):
    eps2, c = 0.5, 7
    model = coloc.train(traces, GRID, eps2=eps2, c=c, min_users=60, seed=1)
    flat = np.asarray(traces.regions)
    edges = coloc.infer_friends(flat, 3)
    assert model.training_stats["friendships"] == len(edges) > 0
    read = coloc.read_instants(traces.time_ids, 20, c)
    assert list(read) == [0, 1, 22, 23, 44, 45, 66]             # slots 0..6, spread over the 4 days
    Q = coloc.colocation_counts(flat, edges, read, (np.asarray(traces.time_ids) - 1) % 20, 20, GRID.M)
    col, x = coloc.colocation_sites(flat[:, read], edges)
    assert Q.sum() == len(col) > 0 and Q.max() <= 1               # a site counts once, whoever is there
    together = [(flat[a, read[k]] == x_) & (flat[b, read[k]] == x_) for a, b in edges for k, x_ in zip(col, x)]
    assert np.array(together).reshape(len(edges), len(col)).any(axis=0).all()
    assert np.abs(model.Q - Q).mean() == pytest.approx(c / eps2, rel=0.05)  # Proposition 2: Lap(c / eps2)
    entry = model.ledger()["mechanisms"][1]
    assert entry["scale"] == pytest.approx(c / eps2) and entry["sensitivity"] == c


def test_transition_trimming_depends_on_the_user_alone(traces):
    counts = coloc.transition_counts(traces, 20, GRID.M, 5, salt=9)
    assert counts.sum() == 5 * traces.m
    user, t, _s, _d = coloc.user_transitions(traces, 20)
    assert len(user) == traces.m * 4 * 19                         # 19 transitions a day, none across days
    # Dropping users 0..39 leaves the others' kept transitions as they were.
    rest = Traces(traces.user_ids[40:], traces.time_ids, np.asarray(traces.regions)[40:])
    one = Traces(traces.user_ids[40:41], traces.time_ids, np.asarray(traces.regions)[40:41])
    alone = coloc.transition_counts(one, 20, GRID.M, 5, salt=9)
    assert alone.sum() == 5
    assert np.all(coloc.transition_counts(rest, 20, GRID.M, 5, salt=9) >= alone)


def test_privelet_transform_and_noise_scales():
    H = coloc.Hierarchy.of(coloc.block_hierarchy(GRID, sizes=(3, 6)), GRID.M)
    assert H.height == 4
    rng = np.random.default_rng(0)
    Q = rng.poisson(2.0, size=(5, GRID.M)).astype(float)
    assert np.allclose(H.inverse(H.transform(Q)), Q)
    # Each coefficient gets Lap(lambda / W): W = 1 at the base, f / (2f - 2) below a node of f children.
    lam = 4.0
    zero = H.transform(np.zeros((3000, GRID.M)))
    coefs = H.add_noise(zero, lam, rng)
    weights = H.weights()
    assert np.abs(coefs[0]).mean() == pytest.approx(lam, rel=0.06)
    for c, w in zip(coefs[1:], weights[1:]):
        assert np.abs(c).mean() == pytest.approx(float(np.mean(lam / w)), rel=0.06)
    # Mean subtraction makes the noisy coefficients a transform again: leaves sum to the noisy base.
    out = H.inverse(H.mean_subtract(coefs))
    assert np.allclose(out.sum(axis=1), coefs[0][:, 0])
    assert np.allclose(H.transform(out)[1], H.mean_subtract(coefs)[1])
    # Generalized sensitivity h: one count changes sum W |delta coef| by exactly the height.
    one = np.zeros((1, GRID.M))
    one[0, 37] = 1.0
    moved = sum(float((w * np.abs(c[0])).sum()) for c, w in zip(H.transform(one), weights))
    assert moved == pytest.approx(H.height)


def test_budget_counts_the_traces_twice(traces):
    inferred = coloc.train(traces, GRID, eps1=0.5, eps2=1.0, eps3=2.0, min_users=80, seed=0)
    led = inferred.ledger()
    assert led["totals"] == {"training traces": 3.5}                       # p' came from the traces too
    assert led["per_user"] == 3.5
    friends = np.array([[0, 1], [1, 2], [3, 4]])
    given = coloc.train(traces, GRID, friends=friends, eps1=0.5, eps2=1.0, eps3=1.0, min_users=40, seed=0)
    led = given.ledger()
    # Q' reads the graph too (eps1 + eps2), the traces twice (eps2 + eps3, not eps2)
    assert led["totals"] == {"friendship graph": 1.5, "training traces": 2.0} and led["per_user"] == 2.5
    assert [m["scale"] for m in led["mechanisms"]] == pytest.approx([2 / (40 * 0.5), 5.0, 5.0])
    assert given.training_stats["friendships"] == 3 and not given.params["friends_inferred"]


def test_erdos_renyi_graph():
    rng = np.random.default_rng(0)
    e = coloc.erdos_renyi(300, 0.05, rng)
    assert (e[:, 0] < e[:, 1]).all() and e.max() < 300 and len(np.unique(e, axis=0)) == len(e)
    assert len(e) / (300 * 299 / 2) == pytest.approx(0.05, rel=0.08)


def test_colocations_planted_as_asked(traces):
    model = coloc.train(traces, GRID, eps1=50.0, min_users=80, seed=0)
    syn = coloc.ColocSynthesizer(model, theta=120)
    out = syn.sample_set(150, 3, np.random.default_rng(3))
    ev, friends = syn.events, syn.friends
    assert len(ev) == 120 == syn.stats["colocations_planted"]
    flat = out.reshape(150, -1)
    assert (flat[ev[:, 0], ev[:, 2]] == ev[:, 3]).all() and (flat[ev[:, 1], ev[:, 2]] == ev[:, 3]).all()
    fk = set(map(tuple, friends.tolist()))
    assert all((a, b) in fk for a, b in ev[:, :2].tolist())
    assert len(np.unique(ev[:, [0, 1, 2]], axis=0)) == len(ev)            # each (pair, instant) once


def test_constrained_viterbi_is_the_best_path_through_the_points():
    rng = np.random.default_rng(5)
    grid = Grid(nx=2, ny=2, hospitals=())
    prob = rng.dirichlet(np.ones(4), size=4)
    succ = np.tile(np.arange(4), (4, 1))
    start = coloc.stationary(succ, prob)
    model = coloc.ColocModel(p_friend=0.1, Q=np.ones((4, 4)), succ=succ, prob=prob, start=start, nx=2, ny=2,
                             slot_start_minute=480, slot_minutes=30, grid_box=None)
    syn = coloc.ColocSynthesizer(model, slots=4, par_v=1.0)
    fixed = np.array([[-1, 2, -1, -1], [3, -1, -1, 0], [-1, -1, -1, -1]])
    got = syn._viterbi_days(fixed, rng)
    for f, path in zip(fixed, got):
        best, arg = -np.inf, None
        for cand in itertools.product(range(4), repeat=4):
            if any(fv >= 0 and fv != cv for fv, cv in zip(f, cand)):
                continue
            lp = np.log(start[cand[0]]) + sum(np.log(prob[a, b]) for a, b in zip(cand, cand[1:]))
            if lp > best:
                best, arg = lp, cand
        assert tuple(path) == arg
    del grid


def test_reproducible_by_seed(traces, tmp_path):
    a = coloc.train(traces, GRID, mechanism="wavelet", min_users=80, seed=4)
    b = coloc.train(traces, GRID, mechanism="wavelet", min_users=80, seed=4)
    assert np.array_equal(a.Q, b.Q) and a.p_friend == b.p_friend
    a.save(tmp_path / "a.npz")
    a = coloc.ColocModel.load(tmp_path / "a.npz")
    x = coloc.ColocSynthesizer(a, theta=30).sample_set(40, 2, np.random.default_rng([1, 2, 3]))
    y = coloc.ColocSynthesizer(b, theta=30).sample_set(40, 2, np.random.default_rng([1, 2, 3]))
    z = coloc.ColocSynthesizer(b, theta=30).sample_set(40, 2, np.random.default_rng([1, 2, 4]))
    assert np.array_equal(x, y) and not np.array_equal(x, z)


def test_bad_parameters_are_clear_errors(traces):
    with pytest.raises(ValueError, match="eps2 must be > 0"):
        coloc.train(traces, GRID, eps2=0)
    with pytest.raises(ValueError, match="mechanism 'gauss'"):
        coloc.train(traces, GRID, mechanism="gauss")
    with pytest.raises(ValueError, match="at least min_users = 100 users .* got 80"):
        coloc.train(traces, GRID)


def test_unseeded_training_draws_its_noise_from_the_operating_system(traces):
    a = coloc.train(traces, GRID, min_users=80)
    b = coloc.train(traces, GRID, min_users=80)
    # Two trainings without a seed draw different noise; with one, the same.
    assert not np.array_equal(a.Q, b.Q)
    seeded = [coloc.train(traces, GRID, min_users=80, seed=5) for _ in range(2)]
    assert np.array_equal(seeded[0].Q, seeded[1].Q)
