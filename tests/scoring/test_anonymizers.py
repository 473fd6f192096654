"""The sample anonymizers A1-A6 (rules §10): exact definitions and statistical fidelity.

Statistical checks use fixed seeds (so they are deterministic) and tolerances
of 5 standard errors unless stated: a correct implementation passes them for
all but a ~1e-6 share of seeds, a wrong keep rate, block or radius law fails.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from scoring.algorithms import anonymizers as an
from scoring.algorithms.registry import get
from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, Traces

GRID = Grid()  # the 2019 Tokyo grid, 32 x 32, 37 hospitals


def random_traces(m=50, L=30, seed=0, grid=GRID) -> Traces:
    rng = np.random.default_rng(seed)
    return Traces(np.arange(1, m + 1, dtype=np.int64), np.arange(41, 41 + L, dtype=np.int64),
                  rng.integers(0, grid.M, size=(m, L)).astype(np.int32))


def clustered_traces(m=300, L=60, seed=0, grid=GRID) -> Traces:
    """Users with a home, a work place and errands near them (what k-means should find structure in)."""
    rng = np.random.default_rng(seed)
    home = rng.integers(0, grid.M, size=m)
    work = rng.integers(0, grid.M, size=m)
    slot = np.arange(L) % 20
    at_work = (slot >= 2) & (slot < 16)
    base = np.where(at_work[None, :], work[:, None], home[:, None])
    jitter_x = rng.integers(-1, 2, size=(m, L)) * (rng.random((m, L)) < 0.3)
    jitter_y = rng.integers(-1, 2, size=(m, L)) * (rng.random((m, L)) < 0.3)
    x = np.clip(grid.x_of(base) + jitter_x, 0, grid.nx - 1)
    y = np.clip(grid.y_of(base) + jitter_y, 0, grid.ny - 1)
    return Traces(np.arange(1, m + 1, dtype=np.int64), np.arange(1, L + 1, dtype=np.int64),
                  grid.index_of(x, y).astype(np.int32))


def single_regions(anon: AnonymizedTraces) -> np.ndarray:
    assert (anon.events < anon.sets.M).all(), "expected single regions only"
    return anon.events


def mean_utility(grid: Grid, truth: Traces, anon: AnonymizedTraces) -> float:
    """s_U of single-region/deletion outputs (both conventions agree there), computed here independently."""
    ev = anon.events
    d = grid.distance[truth.regions, np.minimum(ev, grid.M - 1)]
    return float(np.where(ev < grid.M, np.maximum(0.0, 1.0 - d / 2.0), 0.0).mean())


# ------------------------------------------------------------------------------ registry

def test_all_six_are_registered_with_their_parameters():
    expected = {
        "A1-none": [],
        "A2-MRLH": ["mu_x", "mu_y", "lambda", "sample_2019"],
        "A3-kRR": ["eps", "sample_2019"],
        "A4-PL": ["l", "r", "sample_2019"],
        "A5-YA": ["p", "sample_2019"],
        "A6-kmeans": ["k", "s_req", "margin", "rings", "hospitals", "avoid_mates", "iterations", "lambda_u"],
    }
    for name, params in expected.items():
        alg = get(name)
        assert alg.kind == "anonymizer"
        assert [p.name for p in alg.params] == params
        assert alg.doc, f"{name} has no documentation"
    assert get("A6-kmeans").defaults()["k"] == 100
    assert get("A6-kmeans").defaults()["s_req"] == 0.7


@pytest.mark.parametrize("name,overrides", [
    ("A1-none", {}), ("A2-MRLH", {"mu_x": 1, "mu_y": 2, "lambda": 0.3}), ("A3-kRR", {"eps": 4.0}),
    ("A4-PL", {"l": 2.0, "r": 1.0}), ("A5-YA", {"p": 0.6}), ("A6-kmeans", {"k": 10}),
])
def test_deterministic_given_seed_and_same_users_and_times(name, overrides):
    truth = clustered_traces(m=120, L=40)
    alg = get(name)
    a = alg.run(GRID, truth, seed=7, **overrides)
    b = alg.run(GRID, truth, seed=7, **overrides)
    np.testing.assert_array_equal(a.events, b.events)
    np.testing.assert_array_equal(a.sets.indptr, b.sets.indptr)
    np.testing.assert_array_equal(a.sets.members, b.sets.members)
    np.testing.assert_array_equal(a.user_ids, truth.user_ids)
    np.testing.assert_array_equal(a.time_ids, truth.time_ids)
    assert a.events.dtype == np.int32 and a.events.shape == truth.regions.shape
    if name != "A1-none":
        c = alg.run(GRID, truth, seed=8, **overrides)
        assert not np.array_equal(a.events, c.events), "a different seed should give different output"


def test_string_parameters_from_the_command_line_are_parsed():
    truth = random_traces()
    a = get("A2-MRLH").run(GRID, truth, seed=1, mu_x="1", mu_y="0", **{"lambda": "0"})
    assert a.sets.sizes[a.events].max() == 2


@pytest.mark.parametrize("name,overrides,fragment", [
    ("A2-MRLH", {"lambda": 1.5}, "lambda"), ("A2-MRLH", {"mu_x": -1}, "mu_x"),
    ("A3-kRR", {"eps": -1.0}, "eps"), ("A4-PL", {"l": 0.0}, "l"), ("A5-YA", {"p": 2.0}, "p"),
    ("A6-kmeans", {"s_req": 1.5}, "s_req"), ("A6-kmeans", {"k": 0}, "k"),
])
def test_bad_parameters_are_named(name, overrides, fragment):
    with pytest.raises(ValueError, match=fragment):
        get(name).run(GRID, random_traces(), seed=1, **overrides)


def test_regions_outside_the_grid_are_rejected():
    bad = Traces(np.array([1]), np.array([1]), np.array([[GRID.M]], dtype=np.int32))
    with pytest.raises(ValueError, match="outside 0..1023"):
        an.krr(GRID, bad, np.random.default_rng(0), eps=1.0)


# ------------------------------------------------------------------------------ A1

def test_a1_is_the_identity_and_does_not_alias_the_input():
    truth = random_traces()
    out = an.none(GRID, truth, np.random.default_rng(0))
    np.testing.assert_array_equal(single_regions(out), truth.regions)
    assert out.sets.n_sets == GRID.M + 1
    out.events[0, 0] = (truth.regions[0, 0] + 1) % GRID.M
    assert out.events[0, 0] != truth.regions[0, 0]


# ------------------------------------------------------------------------------ A2

def test_a2_paper_example_x2_becomes_x1_x2_x33_x34():
    # Paper 4.1: MRLH(1,1,.) maps region 2 (0-based 1) to {1, 2, 33, 34} (0-based {0, 1, 32, 33}).
    truth = Traces(np.array([1]), np.array([1]), np.array([[1]], dtype=np.int32))
    out = an.mrlh(GRID, truth, np.random.default_rng(0), mu_x=1, mu_y=1, **{"lambda": 0.0})
    assert out.events[0, 0] == GRID.M + 1
    assert out.sets.set_members(out.events[0, 0]).tolist() == [0, 1, 32, 33]


@pytest.mark.parametrize("mu_x,mu_y", [(1, 1), (2, 1), (0, 3), (4, 4), (5, 5)])
def test_a2_block_shapes(mu_x, mu_y):
    truth = Traces(np.array([1, 2]), np.arange(1, 513),
                   np.arange(GRID.M, dtype=np.int32).reshape(2, 512))        # every region once
    out = an.mrlh(GRID, truth, np.random.default_rng(0), mu_x=mu_x, mu_y=mu_y, **{"lambda": 0.0})
    sets = out.sets
    n_blocks = (GRID.nx >> mu_x) * (GRID.ny >> mu_y)
    assert sets.n_sets == GRID.M + 1 + n_blocks          # one interned set per block, no duplicates
    assert len(np.unique(out.events)) == n_blocks
    for r in (0, 31, 500, 1023):
        members = sets.set_members(out.events.ravel()[r])
        assert len(members) == (1 << mu_x) * (1 << mu_y)
        xs, ys = GRID.x_of(members), GRID.y_of(members)
        assert r in members
        assert set(xs >> mu_x) == {GRID.x_of(r) >> mu_x} and set(ys >> mu_y) == {GRID.y_of(r) >> mu_y}
        assert len(set(xs)) == 1 << mu_x and len(set(ys)) == 1 << mu_y
        assert (np.diff(members) > 0).all()


def test_a2_blocks_are_cut_at_a_border_and_a_one_region_block_is_a_single_region():
    grid = Grid(nx=5, ny=3, hospitals=(1,))
    truth = Traces(np.array([1]), np.arange(1, 16), np.arange(15, dtype=np.int32)[None, :])
    out = an.mrlh(grid, truth, np.random.default_rng(0), mu_x=1, mu_y=1, **{"lambda": 0.0})
    sizes = out.sets.sizes[out.events[0]]
    # x in {0,1},{2,3},{4}; y in {0,1},{2}: block sizes 4,4,2 / 2,2,1
    expected = np.array([[4, 4, 4, 4, 2], [4, 4, 4, 4, 2], [2, 2, 2, 2, 1]]).ravel()
    np.testing.assert_array_equal(sizes, expected)
    assert out.events[0, 14] == 14                      # the lone corner region stays itself


def test_a2_mu_zero_is_the_region_or_a_deletion_at_rate_lambda():
    truth = random_traces(m=400, L=250, seed=3)
    lam = 0.3
    out = an.mrlh(GRID, truth, np.random.default_rng(1), mu_x=0, mu_y=0, **{"lambda": lam})
    deleted = out.events == GRID.M
    np.testing.assert_array_equal(out.events[~deleted], truth.regions[~deleted])
    assert out.sets.n_sets == GRID.M + 1
    n = deleted.size
    assert abs(deleted.mean() - lam) < 5 * math.sqrt(lam * (1 - lam) / n)


def test_a2_deletion_rate_with_generalization():
    truth = random_traces(m=400, L=250, seed=4)
    out = an.mrlh(GRID, truth, np.random.default_rng(2), mu_x=1, mu_y=1, **{"lambda": 0.8})
    deleted = out.events == GRID.M
    assert abs(deleted.mean() - 0.8) < 5 * math.sqrt(0.8 * 0.2 / deleted.size)
    kept = ~deleted
    assert (out.sets.sizes[out.events[kept]] == 4).all()


# ------------------------------------------------------------------------------ A3

@pytest.mark.parametrize("eps", [1.0, 6.0, 8.0, 12.0])
def test_a3_keep_rate_is_e_eps_over_m_minus_1_plus_e_eps(eps):
    truth = random_traces(m=500, L=400, seed=5)
    out = single_regions(an.krr(GRID, truth, np.random.default_rng(3), eps=eps))
    p = math.exp(eps) / (GRID.M - 1 + math.exp(eps))
    assert an.krr_keep_probability(eps, GRID.M) == pytest.approx(p, rel=1e-12)
    n = out.size
    assert abs((out == truth.regions).mean() - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_a3_replacement_is_uniform_over_the_other_regions():
    truth = Traces(np.arange(1, 201), np.arange(1, 1001), np.full((200, 1000), 77, dtype=np.int32))
    out = single_regions(an.krr(GRID, truth, np.random.default_rng(4), eps=0.0))
    counts = np.bincount(out.ravel(), minlength=GRID.M)
    # eps = 0: keep with probability 1/M, i.e. uniform over all M regions (original included)
    assert stats.chisquare(counts).pvalue > 1e-4
    others = np.delete(counts, 77)
    assert stats.chisquare(others).pvalue > 1e-4


def test_a3_huge_eps_keeps_everything():
    truth = random_traces()
    out = an.krr(GRID, truth, np.random.default_rng(0), eps=1000.0)
    np.testing.assert_array_equal(out.events, truth.regions)


# ------------------------------------------------------------------------------ A4

@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_a4_radius_sampler_is_the_planar_laplace_law(eps):
    radius = an.planar_laplace_radius(eps, 200_000, np.random.default_rng(5))
    # The planar Laplace radius is Gamma(shape 2, scale 1/eps): mean 2/eps, variance 2/eps^2.
    se = math.sqrt(2.0) / eps / math.sqrt(radius.size)
    assert abs(radius.mean() - 2.0 / eps) < 5 * se
    assert radius.min() >= 0
    assert stats.kstest(radius, stats.gamma(2, scale=1 / eps).cdf).pvalue > 1e-4


def test_a4_after_discretisation_the_mean_displacement_is_about_2_over_eps():
    # Events at the grid centre, eps = 2 per km (mean 1 km, almost never reaching the border 5.5 km away).
    centre = GRID.index_of(16, 16)
    truth = Traces(np.arange(1, 201), np.arange(1, 501), np.full((200, 500), centre, dtype=np.int32))
    out = single_regions(an.planar_laplace(GRID, truth, np.random.default_rng(6), l=2.0, r=1.0))
    d = GRID.distance[centre, out]
    # Snapping to a ~0.34 km cell moves each point by at most half a cell diagonal; on average much less.
    assert abs(d.mean() - 1.0) < 0.05
    # The direction is uniform: as many events land north as south, east as west.
    dx = GRID.x_of(out) - 16
    dy = GRID.y_of(out) - 16
    n = out.size
    assert abs((dx > 0).mean() - (dx < 0).mean()) < 5 / math.sqrt(n)
    assert abs((dy > 0).mean() - (dy < 0).mean()) < 5 / math.sqrt(n)


def test_a4_points_outside_the_box_clamp_to_the_border():
    corner = 0
    truth = Traces(np.arange(1, 101), np.arange(1, 101), np.full((100, 100), corner, dtype=np.int32))
    out = single_regions(an.planar_laplace(GRID, truth, np.random.default_rng(7), l=0.1, r=1.0))
    assert out.min() >= 0 and out.max() < GRID.M
    on_border = (GRID.x_of(out) == 0) | (GRID.y_of(out) == 0) | (GRID.x_of(out) == 31) | (GRID.y_of(out) == 31)
    assert on_border.mean() > 0.5          # mean radius 20 km from a corner: most points fall outside


def test_a4_r_scales_epsilon():
    truth = random_traces(m=200, L=200, seed=8)
    a = an.planar_laplace(GRID, truth, np.random.default_rng(9), l=4.0, r=1.0)
    b = an.planar_laplace(GRID, truth, np.random.default_rng(9), l=8.0, r=2.0)
    np.testing.assert_array_equal(a.events, b.events)   # same epsilon = l/r, same draws


# ------------------------------------------------------------------------------ A5

def test_a5_permutes_only_the_first_p_m_users_whole_traces():
    truth = random_traces(m=40, L=20, seed=9)
    out = single_regions(an.yamaoka(GRID, truth, np.random.default_rng(10), p=0.5))
    np.testing.assert_array_equal(out[20:], truth.regions[20:])
    rows = {tuple(r) for r in truth.regions[:20]}
    assert {tuple(r) for r in out[:20]} == rows and len(rows) == 20
    assert (out[:20] != truth.regions[:20]).any(axis=1).sum() > 10


def test_a5_first_users_are_by_user_id_not_by_row():
    truth = random_traces(m=10, L=5, seed=1)
    shuffled = Traces(truth.user_ids[::-1].copy(), truth.time_ids, truth.regions[::-1].copy())
    out = single_regions(an.yamaoka(GRID, shuffled, np.random.default_rng(0), p=0.3))
    np.testing.assert_array_equal(out[:7], shuffled.regions[:7])        # user ids 10..4 untouched
    assert {tuple(r) for r in out[7:]} == {tuple(r) for r in shuffled.regions[7:]}


def test_a5_count_is_floor_p_m_robust_to_rounding():
    assert an.yamaoka_count(0.29, 100) == 29
    assert an.yamaoka_count(0.7, 2000) == 1400
    assert an.yamaoka_count(0.333, 10) == 3
    assert an.yamaoka_count(1.0, 2000) == 2000
    assert an.yamaoka_count(0.0, 2000) == 0
    truth = random_traces()
    np.testing.assert_array_equal(an.yamaoka(GRID, truth, np.random.default_rng(0), p=0.0).events,
                                  truth.regions)


def test_a5_the_permutation_is_uniform():
    truth = Traces(np.arange(1, 4), np.array([1]), np.array([[0], [1], [2]], dtype=np.int32))
    rng = np.random.default_rng(11)
    seen = {}
    for _ in range(6000):  # 6000 tiny draws: a loop over trials, not over events
        key = tuple(an.yamaoka(GRID, truth, rng, p=1.0).events[:, 0])
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == 6
    assert stats.chisquare(list(seen.values())).pvalue > 1e-4


# ------------------------------------------------------------------------------ A6

def test_kmeans_recovers_separated_clusters_and_never_leaves_one_empty():
    rng = np.random.default_rng(12)
    centres = rng.normal(size=(5, 20)) * 50
    X = np.repeat(centres, 40, axis=0) + rng.normal(size=(200, 20))
    labels, found = an.kmeans(X, 5, np.random.default_rng(0))
    for c in range(5):
        assert len(set(labels[c * 40:(c + 1) * 40])) == 1
    assert len(set(labels)) == 5
    # sparse input (visit counts) gives the same clustering as dense
    sparse_labels, sparse_found = an.kmeans(sp.csr_matrix(X), 5, np.random.default_rng(0))
    np.testing.assert_array_equal(sparse_labels, labels)
    np.testing.assert_allclose(sparse_found, found)
    # more clusters than distinct points: every cluster still gets a point
    labels, _ = an.kmeans(np.repeat(np.eye(3), 4, axis=0), 10, np.random.default_rng(0))
    assert np.bincount(labels, minlength=10).min() >= 1


def test_nearest_other_hospital():
    near = an.nearest_other_hospital(GRID)
    hosp = np.flatnonzero(GRID.hospital_mask)
    assert GRID.hospital_mask[near[hosp]].all() and (near[hosp] != hosp).all()
    d = GRID.distance[np.ix_(hosp, hosp)] + np.diag(np.full(len(hosp), np.inf))
    np.testing.assert_allclose(GRID.distance[hosp, near[hosp]], d.min(axis=1))
    others = np.flatnonzero(~GRID.hospital_mask)
    np.testing.assert_array_equal(near[others], others)


def test_a6_meets_the_utility_requirement_with_its_margin():
    truth = clustered_traces()
    for s_req in (0.6, 0.7, 0.9):
        out = an.kmeans_anonymize(GRID, truth, np.random.default_rng(13), k=20, s_req=s_req, margin=0.005)
        s_u = mean_utility(GRID, truth, out)
        assert s_u >= s_req + 0.005 - 1e-12
        assert s_u < s_req + 0.02          # the budget is spent, not wasted


def test_a6_moves_are_short_and_hospitals_go_to_the_nearest_other_hospital():
    truth = clustered_traces(seed=2)
    out = single_regions(an.kmeans_anonymize(GRID, truth, np.random.default_rng(14), k=20, rings=2))
    o = truth.regions
    hosp = GRID.hospital_mask[o]
    assert hosp.any()
    np.testing.assert_array_equal(out[hosp], an.nearest_other_hospital(GRID)[o[hosp]])
    steps = np.maximum(np.abs(GRID.x_of(out) - GRID.x_of(o)), np.abs(GRID.y_of(out) - GRID.y_of(o)))
    assert steps[~hosp].max() <= 2
    assert (steps[~hosp] >= 1).mean() > 0.9       # with s_req = 0.7 nearly every event moves


def test_a6_pulls_visit_vectors_toward_the_cluster_mean():
    truth = clustered_traces(seed=3)
    rng = np.random.default_rng(15)
    out = single_regions(an.kmeans_anonymize(GRID, truth, rng, k=30, hospitals=False))

    def counts(regions):
        m, L = regions.shape
        return np.bincount(np.repeat(np.arange(m), L) * GRID.M + regions.ravel(),
                           minlength=m * GRID.M).reshape(m, GRID.M).astype(float)

    before, after = counts(truth.regions), counts(out)
    # k-means is the first use of the anonymizer's generator, so this is its own clustering
    labels, _ = an.kmeans(before, 30, np.random.default_rng(15))
    def spread(C):
        means = np.stack([C[labels == c].mean(axis=0) for c in range(30)])
        return np.linalg.norm(C - means[labels], axis=1).mean()
    assert spread(after) < spread(before)


def test_a6_hospital_replacement_alone_over_budget_is_cut_to_fit():
    hosp = np.flatnonzero(GRID.hospital_mask)
    truth = Traces(np.arange(1, 51), np.arange(1, 41),
                   np.random.default_rng(0).choice(hosp, size=(50, 40)).astype(np.int32))
    out = an.kmeans_anonymize(GRID, truth, np.random.default_rng(16), k=5, s_req=0.95, margin=0.0)
    assert mean_utility(GRID, truth, out) >= 0.95 - 1e-12
    moved = out.events != truth.regions
    assert 0 < moved.mean() < 1
    np.testing.assert_array_equal(out.events[moved], an.nearest_other_hospital(GRID)[truth.regions[moved]])


def test_a6_avoid_mates_keeps_moved_events_away_from_cluster_mates_at_the_same_time():
    truth = clustered_traces(m=300, L=60, seed=4)
    o = truth.regions

    def mate_hits(avoid):
        rng = np.random.default_rng(17)
        out = single_regions(an.kmeans_anonymize(GRID, truth, rng, k=20, avoid_mates=avoid, hospitals=False))
        labels, _ = an.kmeans(sp.csr_matrix(np.bincount(
            np.repeat(np.arange(truth.m), truth.L) * GRID.M + o.ravel(),
            minlength=truth.m * GRID.M).reshape(truth.m, GRID.M).astype(float)), 20, np.random.default_rng(17))
        moved = out != o
        # (cluster, time, region) of every original event; a moved event "hits" when its new
        # region holds a cluster mate at that time
        L = truth.L
        base = (np.repeat(labels, L) * L + np.tile(np.arange(L), truth.m)) * GRID.M
        occupied = np.isin(base + out.ravel(), base + o.ravel())
        return occupied[moved.ravel()].mean()

    assert mate_hits(True) < 0.5 * mate_hits(False)
