"""Tests of scoring.analyses: hand-worked tiny examples, POT as the oracle of the sliced W1, real-data sanity."""
from __future__ import annotations

import math

import numpy as np
import pytest

from scoring import analyses as an
from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, SetTable, Traces


@pytest.fixture(scope="module")
def ot():
    """POT, the reference library these tests compare with, imported when one of them runs: it loads
    scipy.stats (about 1 s), which every test process paid at collection while it was imported here."""
    return pytest.importorskip("ot")


def line_grid(n):
    """n x 1 grid of 1 km x 1 km cells (91 km per degree of longitude, 111 per degree of latitude)."""
    return Grid(nx=n, ny=1, min_x=139.0, max_x=139.0 + n / 91, min_y=35.0, max_y=35.0 + 1 / 111, hospitals=())


SQ = Grid(nx=2, ny=2, min_x=139.0, max_x=139.0 + 2 / 91, min_y=35.0, max_y=35.0 + 2 / 111, hospitals=())


def anon(user_ids, time_ids, cells, M):
    """AnonymizedTraces from cells: int (region), tuple (generalized set) or None (deletion)."""
    generalized = sorted({tuple(sorted(c)) for row in cells for c in row if isinstance(c, tuple)})
    table = SetTable.from_sets(M, [list(g) for g in generalized])
    gid = {g: M + 1 + i for i, g in enumerate(generalized)}
    ev = [[M if c is None else gid[tuple(sorted(c))] if isinstance(c, tuple) else c for c in row] for row in cells]
    return AnonymizedTraces(np.asarray(user_ids), np.asarray(time_ids), np.asarray(ev, dtype=np.int32), table)


# Population example on the 2 x 2 grid (M = 4), S = 2 slots a day, two days (time ids 1..4).
O_POP = Traces(np.array([1, 2]), np.array([1, 2, 3, 4]), np.array([[0, 1, 0, 2], [0, 0, 3, 3]], dtype=np.int32))
A_POP = anon([1, 2], [1, 2, 3, 4], [[(0, 1), None, 0, (1, 2, 3)], [0, 1, 3, 3]], 4)


def test_population_hand_worked():
    # O, slot 0 (time ids 1, 3): regions 0, 0, 0, 3 -> [3/4, 0, 0, 1/4]
    #    slot 1 (time ids 2, 4): regions 1, 2, 0, 3 -> [1/4] * 4
    np.testing.assert_allclose(an.population(SQ, O_POP, 2), [[0.75, 0, 0, 0.25], [0.25] * 4])
    # A, slot 0: {0,1} -> 1/2 + 1/2; 0; 0; 3 -> r0 2.5, r1 0.5, r3 1 of 4 -> [5/8, 1/8, 0, 1/4]
    #    slot 1: deletion (nothing); {1,2,3} -> 1/3 each; 1; 3 -> r1 4/3, r2 1/3, r3 4/3 of 3
    np.testing.assert_allclose(an.population(SQ, A_POP, 2),
                               [[5 / 8, 1 / 8, 0, 1 / 4], [0, 4 / 9, 1 / 9, 4 / 9]], atol=1e-15)


def test_population_all_deleted_slot_is_zero():
    a = anon([1], [1, 2], [[None, 3]], 4)
    np.testing.assert_array_equal(an.population(SQ, a, 2), [[0, 0, 0, 0], [0, 0, 0, 1]])


def test_tp_tv_hand_worked():
    # full L1: slot 0: |3/4-5/8| + |0-1/8| = 1/4; slot 1: 1/4 + 7/36 + 5/36 + 7/36 = 7/9
    assert an.tp_tv(SQ, O_POP, A_POP, 2) == pytest.approx((1 / 4 + 7 / 9) / 2)
    # top 1: slot 0 top is r0 -> 1/8; slot 1 all tie at 1/4 -> lowest index r0 -> |1/4 - 0| = 1/4
    assert an.tp_tv_top50(SQ, O_POP, A_POP, 2, top=1) == pytest.approx((1 / 8 + 1 / 4) / 2)
    # top 2: slot 0 r0, r3 -> 1/8 + 0; slot 1 r0, r1 -> 1/4 + 7/36 = 4/9
    assert an.tp_tv_top50(SQ, O_POP, A_POP, 2, top=2) == pytest.approx((1 / 8 + 4 / 9) / 2)
    # top 50 > M: every region, i.e. the full L1
    assert an.tp_tv_top50(SQ, O_POP, A_POP, 2) == pytest.approx(an.tp_tv(SQ, O_POP, A_POP, 2))
    # identical traces: 0
    assert an.tp_tv_top50(SQ, O_POP, O_POP, 2) == 0.0


def test_transition_matrix_hand_worked():
    # consecutive same-day pairs: (1,2) on day 0 and (3,4) on day 1; (2,3) crosses midnight.
    # O: user 1: 0->1, 0->2; user 2: 0->0, 3->3
    T = an.transition_matrix(SQ, O_POP, 2)
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[0, 2] = expected[0, 0] = expected[3, 3] = 1
    np.testing.assert_array_equal(T, expected)
    # A: user 1: {0,1} -> deletion: nothing; 0 -> {1,2,3}: 1/3 each
    #    user 2: {0,2} -> {1,3}: 1/4 on each of (0,1) (0,3) (2,1) (2,3); 3 -> 3: 1
    a = anon([1, 2], [1, 2, 3, 4], [[(0, 1), None, 0, (1, 2, 3)], [(0, 2), (1, 3), 3, 3]], 4)
    T = an.transition_matrix(SQ, a, 2)
    expected = np.array([[0, 1 / 3 + 1 / 4, 1 / 3, 1 / 3 + 1 / 4],
                         [0, 0, 0, 0],
                         [0, 1 / 4, 0, 1 / 4],
                         [0, 0, 0, 1]])
    np.testing.assert_allclose(T, expected, atol=1e-15)
    # row normalisation: row 1 is empty -> self-loop
    P = an.row_normalise(T)
    np.testing.assert_allclose(P, [[0, 7 / 18, 4 / 18, 7 / 18], [0, 1, 0, 0], [0, .5, 0, .5], [0, 0, 0, 1]])


def test_transition_matrix_needs_consecutive_time_ids():
    # time ids 1 and 3 (a gap) and 2 -> 3 across day boundary (S = 2): no transitions
    t = Traces(np.array([1]), np.array([1, 3]), np.array([[0, 1]], dtype=np.int32))
    assert an.transition_matrix(SQ, t, 2).sum() == 0
    t = Traces(np.array([1]), np.array([2, 3]), np.array([[0, 1]], dtype=np.int32))
    assert an.transition_matrix(SQ, t, 2).sum() == 0
    t = Traces(np.array([1]), np.array([3, 4]), np.array([[0, 1]], dtype=np.int32))
    assert an.transition_matrix(SQ, t, 2)[0, 1] == 1


# --------------------------------------------------------------------------
# sliced W1
# --------------------------------------------------------------------------
X_LINE = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
E_X = np.array([[1.0], [0.0]])   # the single direction (1, 0): the exact 1-D W1


@pytest.mark.parametrize("p, q, w1", [
    ([1, 0, 0, 0], [0, 0, 0, 1], 3.0),                  # a point moved 3
    ([.5, .5, 0, 0], [0, 0, .5, .5], 2.0),              # half moved 2 each
    ([.25, .25, .25, .25], [1, 0, 0, 0], 1.5),          # 0.25 * (0 + 1 + 2 + 3)
    ([.5, 0, 0, .5], [0, .5, .5, 0], 1.0),              # 0->1 and 3->2
    ([0, 1, 0, 0], [0, 1, 0, 0], 0.0),
])
def test_sliced_w1_exact_1d(p, q, w1):
    got = an.sliced_w1_rows(np.array([p], float), np.array([q], float), X_LINE, E_X)
    assert got[0] == pytest.approx(w1, abs=1e-15)
    # a direction at angle phi scales a distance along x by |cos phi|
    phi = 0.3
    d = np.array([[math.cos(phi)], [math.sin(phi)]])
    assert an.sliced_w1_rows(np.array([p], float), np.array([q], float), X_LINE, d)[0] == \
        pytest.approx(w1 * math.cos(phi), abs=1e-14)


def test_projections_are_pots(ot):
    for seed in (0, 1, 42):
        np.testing.assert_array_equal(an.random_projections(50, seed),
                                      ot.sliced.get_random_projections(2, 50, seed=seed))


@pytest.mark.parametrize("method", ["dense", "sparse", "auto"])
def test_sliced_w1_matches_pot_per_row(method, ot):
    grid = Grid()   # 32 x 32
    rng = np.random.default_rng(3)
    X = grid.xy.astype(float)
    # sparse random rows, like transition rows, a dense row, plus one exact self-loop pair
    P = rng.random((12, grid.M)) * (rng.random((12, grid.M)) < 0.02)
    Q = rng.random((12, grid.M)) * (rng.random((12, grid.M)) < 0.05)
    Q[1] = rng.random(grid.M)
    P[0] = 0
    P[0, 7] = 1
    Q[0] = P[0]
    P /= P.sum(1, keepdims=True)
    Q /= Q.sum(1, keepdims=True)
    for seed in (0, 5):
        got = an.sliced_w1_rows(P, Q, X, an.random_projections(50, seed), method=method)
        want = [ot.sliced_wasserstein_distance(X, X, P[i], Q[i], n_projections=50, p=1, seed=seed)
                for i in range(len(P))]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        assert got[0] == 0.0


def test_tm_emd_matches_pot_on_traces(ot):
    grid = Grid(nx=6, ny=5, min_x=139.0, max_x=139.06, min_y=35.0, max_y=35.05, hospitals=())
    rng = np.random.default_rng(11)
    o = Traces(np.arange(1, 31), np.arange(1, 13), rng.integers(0, grid.M, (30, 12)).astype(np.int32))
    a = an.uniform_baseline(grid, o, seed=2)
    P = an.row_normalise(an.transition_matrix(grid, o, 4))
    Q = an.row_normalise(an.transition_matrix(grid, a, 4))
    X = grid.xy.astype(float)
    want = np.mean([ot.sliced_wasserstein_distance(X, X, P[i], Q[i], n_projections=50, p=1, seed=9)
                    for i in range(grid.M)])
    assert an.tm_emd(grid, o, a, 4, seed=9) == pytest.approx(want, rel=1e-10)
    assert an.tm_emd(grid, o, o, 4) == 0.0


def test_tm_emd_on_the_rows_with_mass_is_the_whole_matrixs_exactly():
    """tm_emd makes dense only the rows with mass on some side; the value is the one of the whole (M, M)
    matrices to the last bit, with deletions, rows empty on one side only and sets of several regions."""
    grid = Grid()   # 32 x 32
    rng = np.random.default_rng(5)
    o = Traces(np.arange(1, 41), np.arange(1, 41), rng.integers(0, 300, (40, 40)).astype(np.int32))
    a = anon(o.user_ids, o.time_ids, [[None if v % 7 == 0 else ((v, v + 1) if v % 5 == 0 else v + 2) for v in r]
                                      for r in o.regions.tolist()], grid.M)
    proj = an.random_projections(50, 0)
    for other in (a, an.uniform_baseline(grid, o, seed=3)):
        P = an.row_normalise(an.transition_matrix(grid, o, 20))
        Q = an.row_normalise(an.transition_matrix(grid, other, 20))
        assert an.tm_emd(grid, o, other, 20) == an.sliced_w1_rows(P, Q, grid.xy.astype(float), proj).mean()


@pytest.mark.parametrize("method", ["dense", "sparse"])
@pytest.mark.parametrize("p, q, w1", [([1, 0, 0, 0], [0, 0, 0, 1], 3.0), ([.25, .25, .25, .25], [1, 0, 0, 0], 1.5)])
def test_sliced_w1_methods_exact_1d(method, p, q, w1):
    got = an.sliced_w1_rows(np.array([p, q], float), np.array([q, q], float), X_LINE, E_X, method=method)
    np.testing.assert_allclose(got, [w1, 0.0], atol=1e-15)


def test_tm_emd_hand_worked_on_a_line():
    # 4 x 1 line; O: one transition 0 -> 1; A: 0 -> 3. Row 0 differs by a point moved 2 along x;
    # rows 1-3 are empty in both -> self-loops -> 0. Mean over 4 rows = 2 * mean_k |theta_x,k| / 4.
    grid = line_grid(4)
    o = Traces(np.array([1]), np.array([1, 2]), np.array([[0, 1]], dtype=np.int32))
    a = Traces(np.array([1]), np.array([1, 2]), np.array([[0, 3]], dtype=np.int32))
    theta_x = np.abs(an.random_projections(50, 0)[0])
    assert an.tm_emd(grid, o, a, 2) == pytest.approx(2 * theta_x.mean() / 4, rel=1e-12)


# --------------------------------------------------------------------------
# POI accuracy
# --------------------------------------------------------------------------
def test_poi_accuracy_hand_worked():
    # 7 x 1 line of 1 km cells; POIs in regions 0, 1, 1, 3, 4.
    grid = line_grid(7)
    pois = [0, 1, 1, 3, 4]
    o = Traces(np.array([1]), np.arange(1, 6), np.array([[1, 4, 2, 6, 0]], dtype=np.int32))
    a = anon([1], np.arange(1, 6), [[3, (0, 1), None, 5, 0]], 7)
    # ev1: o=1, POIs within 1 km: regions 0,1,2 -> 3 POIs; within 2 km of 3: regions 1..5 -> region 1's 2 -> 2/3
    # ev2: o=4, nearby regions 3,4,5 -> 2 POIs; within 2 km of {0,1}: regions 0..3 -> region 3's 1 -> 1/2
    # ev3: o=2, nearby regions 1,2,3 -> 3 POIs; deletion -> 0
    # ev4: o=6, nearby regions 5,6 -> no POI: skipped
    # ev5: o=0, nearby regions 0,1 -> 3 POIs; a=0 reaches 0..2 -> 1
    assert an.poi_accuracy(grid, o, a, pois) == pytest.approx((2 / 3 + 1 / 2 + 0 + 1) / 4)
    # identical traces: every nearby POI is served
    assert an.poi_accuracy(grid, o, o, pois) == 1.0
    # no POI near any event
    assert math.isnan(an.poi_accuracy(grid, o, o, []))
    with pytest.raises(ValueError, match="POI region index 9"):
        an.poi_accuracy(grid, o, a, [9])


def test_poi_accuracy_chunking_and_radii():
    grid = Grid()
    rng = np.random.default_rng(5)
    o = Traces(np.arange(1, 41), np.arange(1, 21), rng.integers(0, grid.M, (40, 20)).astype(np.int32))
    a = an.uniform_baseline(grid, o, seed=1)
    pois = rng.integers(0, grid.M, 300)
    whole = an.poi_accuracy(grid, o, a, pois)
    assert an.poi_accuracy(grid, o, a, pois, chunk=7) == pytest.approx(whole, rel=1e-12)
    # r2 beyond the grid's diameter serves everything
    assert an.poi_accuracy(grid, o, a, pois, r2=100.0) == 1.0
    assert 0.0 < whole < 1.0


def test_misaligned_traces_are_rejected():
    o = Traces(np.array([1]), np.arange(1, 3), np.array([[0, 1]], dtype=np.int32))
    a = Traces(np.array([2]), np.arange(1, 3), np.array([[0, 1]], dtype=np.int32))
    with pytest.raises(ValueError, match="same user ids"):
        an.poi_accuracy(line_grid(4), o, a, [0])


# --------------------------------------------------------------------------
# brute-force oracles (a plain loop per event) on random mixed traces
# --------------------------------------------------------------------------
def random_mixed(grid, m, L, seed):
    """Anonymized traces mixing single regions, generalized sets (2-5 regions) and deletions."""
    rng = np.random.default_rng(seed)
    cells = []
    for _ in range(m):
        row = []
        for _ in range(L):
            u = rng.random()
            if u < 0.15:
                row.append(None)
            elif u < 0.5:
                row.append(tuple(rng.choice(grid.M, size=rng.integers(2, 6), replace=False).tolist()))
            else:
                row.append(int(rng.integers(grid.M)))
        cells.append(row)
    return anon(np.arange(1, m + 1), np.arange(1, L + 1), cells, grid.M), cells


def members(cell):
    return [] if cell is None else list(cell) if isinstance(cell, tuple) else [cell]


def test_population_and_transitions_match_loops():
    grid = Grid(nx=4, ny=4, min_x=139.0, max_x=139.04, min_y=35.0, max_y=35.04, hospitals=())
    S, L = 3, 9
    a, cells = random_mixed(grid, 6, L, seed=1)
    pop = np.zeros((S, grid.M))
    T = np.zeros((grid.M, grid.M))
    for row in cells:
        for j, cell in enumerate(row):          # time id j + 1
            for r in members(cell):
                pop[j % S, r] += 1 / len(members(cell))
            if j + 1 < L and j // S == (j + 1) // S:
                for x in members(cell):
                    for y in members(row[j + 1]):
                        T[x, y] += 1 / (len(members(cell)) * len(members(row[j + 1])))
    pop /= pop.sum(1, keepdims=True)
    np.testing.assert_allclose(an.population(grid, a, S), pop, atol=1e-14)
    np.testing.assert_allclose(an.transition_matrix(grid, a, S), T, atol=1e-14)


def test_poi_accuracy_matches_loop():
    grid = Grid(nx=8, ny=8, hospitals=())   # 8 x 8 over the Tokyo box: cells about 1.4 x 1.4 km
    a, cells = random_mixed(grid, 10, 12, seed=2)
    rng = np.random.default_rng(4)
    o = Traces(np.arange(1, 11), np.arange(1, 13), rng.integers(0, grid.M, (10, 12)).astype(np.int32))
    pois = rng.integers(0, grid.M, 40)
    D = grid.distance
    shares = []
    for i in range(10):
        for j in range(12):
            near = [p for p in pois if D[o.regions[i, j], p] <= 1.5]
            if not near:
                continue
            served = [p for p in near if any(D[g, p] <= 2.5 for g in members(cells[i][j]))]
            shares.append(len(served) / len(near))
    want = float(np.mean(shares))
    assert an.poi_accuracy(grid, o, a, pois, r1=1.5, r2=2.5) == pytest.approx(want, rel=1e-12)
    assert an.poi_accuracy(grid, o, a, pois, r1=1.5, r2=2.5, chunk=3) == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------
G64 = Grid(nx=8, ny=8, hospitals=())


def test_reference_baseline_replays_reference_days():
    # S = 2; reference: 1 day (time ids 1, 2), 3 users; original: 2 days (time ids 3..6), users 1 and 3
    ref = Traces(np.array([1, 2, 3]), np.array([1, 2]), np.array([[10, 11], [20, 21], [30, 31]], dtype=np.int32))
    org = Traces(np.array([1, 3]), np.array([3, 4, 5, 6]), np.zeros((2, 4), dtype=np.int32))
    b = an.reference_baseline(G64, ref, org, 2)
    np.testing.assert_array_equal(b.events, [[10, 11, 10, 11], [30, 31, 30, 31]])
    np.testing.assert_array_equal(b.time_ids, org.time_ids)
    np.testing.assert_array_equal(b.user_ids, org.user_ids)
    # two reference days for two original days: day by day
    ref2 = Traces(np.array([1]), np.array([1, 2, 3, 4]), np.array([[1, 2, 3, 4]], dtype=np.int32))
    org2 = Traces(np.array([1]), np.array([5, 6, 7, 8]), np.zeros((1, 4), dtype=np.int32))
    np.testing.assert_array_equal(an.reference_baseline(G64, ref2, org2, 2).events, [[1, 2, 3, 4]])
    with pytest.raises(ValueError, match="lack users"):
        an.reference_baseline(G64, ref, Traces(np.array([4]), np.array([3]), np.zeros((1, 1), np.int32)), 2)


def test_uniform_baseline():
    grid = Grid()
    like = Traces(np.arange(1, 501), np.arange(1, 41), np.zeros((500, 40), dtype=np.int32))
    u1 = an.uniform_baseline(grid, like, seed=3)
    assert u1.events.shape == (500, 40) and u1.events.min() >= 0 and u1.events.max() < grid.M
    np.testing.assert_array_equal(u1.events, an.uniform_baseline(grid, like, seed=3).events)
    assert not np.array_equal(u1.events, an.uniform_baseline(grid, like, seed=4).events)
    # 20000 draws over 1024 regions: every quarter of the grid gets about a quarter
    share = np.bincount(u1.events.ravel() * 4 // grid.M, minlength=4) / u1.events.size
    np.testing.assert_allclose(share, 0.25, atol=0.02)


# --------------------------------------------------------------------------
# correlation and fairness
# --------------------------------------------------------------------------
def test_correlation_hand_worked():
    # dx = (-1, 0, 1), dy = (-7/3, -1/3, 8/3): sum dx dy = 5, sum dx^2 = 2, sum dy^2 = 114/9
    assert an.correlation([1, 2, 3], [2, 4, 7]) == pytest.approx(5 / math.sqrt(2 * 114 / 9))
    assert an.correlation([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(an.correlation([1, 1, 1], [1, 2, 3]))
    assert math.isnan(an.correlation([1], [2]))
    with pytest.raises(ValueError, match="paired"):
        an.correlation([1, 2], [1, 2, 3])


def test_fairness_hand_worked():
    # values 0.1, 0.3: mean 0.2, deviations +-0.1 -> population SD 0.1, sample SD sqrt(0.02)
    assert an.fairness({1: 0.1, 2: 0.3}) == pytest.approx(0.1)
    assert an.fairness([0.1, 0.3], ddof=1) == pytest.approx(math.sqrt(0.02))
    assert an.fairness([0.5, 0.5, 0.5]) == 0.0
    assert math.isnan(an.fairness([]))


# --------------------------------------------------------------------------
# real data: the Osaka practice set (2000 users x 40 + 40 slots)
# --------------------------------------------------------------------------
def _load(path, grid):
    a = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    users, times = np.unique(a[:, 0]), np.unique(a[:, 1])
    regions = a[:, 2].reshape(len(users), len(times)) - 1
    return Traces(users, times, regions.astype(np.int32))


def test_osaka_baselines_order(pwscup2019, osaka_grid):
    grid = osaka_grid
    org = _load(pwscup2019 / "osaka" / "orgtraces_team001_data01_IDP.csv", grid)
    ref = _load(pwscup2019 / "osaka" / "reftraces_team001_data01_IDP.csv", grid)
    S = 20
    reference = an.reference_baseline(grid, ref, org, S)
    uniform = an.uniform_baseline(grid, org, seed=0)
    pois = np.random.default_rng(0).integers(0, grid.M, 2000)
    same = an.utility_analyses(grid, org, org, S, pois)
    assert same == {"tp_tv_top50": 0.0, "tm_emd": 0.0, "poi_accuracy": 1.0}
    r = an.utility_analyses(grid, org, reference, S, pois)
    u = an.utility_analyses(grid, org, uniform, S, pois)
    # the paper's Fig. 13: the reference traces keep the statistics far better than uniform noise
    assert 0 < r["tp_tv_top50"] < u["tp_tv_top50"]
    assert 0 < r["tm_emd"] < u["tm_emd"]
    assert 0 < u["poi_accuracy"] < 1 and 0 < r["poi_accuracy"] < 1
