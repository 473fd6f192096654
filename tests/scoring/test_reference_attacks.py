"""The stronger reference attacks (rules §10): fuzzy TF-IDF, matching, frequent regions, replay, refinement."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from scoring.algorithms import get
from scoring.algorithms import reference_attacks as ra
from scoring.traces import SetTable
from tests.scoring.builders import DEL, GRID, M, pubtraces, traces  # noqa: E402,F401


def test_fuzzy_kernel_matches_the_papers_figure_11():
    k = ra.fuzzy_kernel(eta0=0.2, lambda0=0.5)
    assert k[1, 1] == 1.0
    assert round(k[0, 1], 3) == 0.121  # "count for x8 by 0.121" (paper 5.3, Figure 11)
    assert k[0, 0] == pytest.approx(0.2 * math.exp(-0.5 * math.sqrt(2)))
    default = ra.fuzzy_kernel()
    assert default[1, 0] == pytest.approx(0.33 * math.exp(-1.0))


def test_fuzzy_counts_spread_to_the_8_neighbours_and_stop_at_the_border():
    counts = np.zeros((1, M))
    counts[0, 0] = 2.0  # corner (x=0, y=0)
    counts[0, 10] = 1.0  # interior (x=2, y=2)
    out = ra.fuzzy_counts(GRID, counts)[0]
    h1, h2 = 0.33 * math.exp(-1), 0.33 * math.exp(-math.sqrt(2))
    assert out[0] == pytest.approx(2.0)
    assert out[1] == pytest.approx(2 * h1) and out[4] == pytest.approx(2 * h1)
    assert out[5] == pytest.approx(2 * h2 + h2)  # diagonal of both visits
    assert out[15] == pytest.approx(h2) and out[11] == pytest.approx(h1)
    assert out.sum() == pytest.approx(2 * (1 + 2 * h1 + h2) + (1 + 4 * h1 + 4 * h2))


def test_event_counts_spread_sets_and_ignore_deletions():
    pub = pubtraces([[3, M + 1, DEL, 3]], [(0, 1, 4, 5)])
    c = ra.event_counts(pub)[0]
    assert c[3] == 2.0 and c[0] == c[1] == c[4] == c[5] == 0.25 and c.sum() == 3.0


def test_tfidf_hand_worked():
    counts = np.array([[1.0, 0.0], [3.0, 1.0]])
    xi = np.array([2, 1])
    f = ra.tfidf(counts, xi, 2, "raw", "log")  # idf = [log 1, log 2] = [0, log 2]
    np.testing.assert_allclose(f, [[0.0, 0.0], [0.0, 1.0]])
    g = ra.tfidf(counts, xi, 2, "log", "none")
    np.testing.assert_allclose(g[1], np.log1p([3.0, 1.0]) / np.linalg.norm(np.log1p([3.0, 1.0])))
    with pytest.raises(ValueError, match="tf"):
        ra.tfidf(counts, xi, 2, "sqrt", "none")


def test_i4_reidentifies_unobfuscated_traces_exactly():
    rng = np.random.default_rng(1)
    ref = traces(rng.integers(0, M, size=(30, 60)), user_ids=np.arange(1, 31))
    perm = rng.permutation(30)
    pub = pubtraces(ref.regions[perm])
    est = get("I4-FuzzyTFIDF").run(GRID, ref, pub, seed=0)
    np.testing.assert_array_equal(est, ref.user_ids[perm])


def test_assignment_matching_is_optimal():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(6, 6))
    cols = ra.match(scores, "assignment")
    best = max(itertools.permutations(range(6)), key=lambda p: scores[np.arange(6), list(p)].sum())
    assert scores[np.arange(6), cols].sum() == pytest.approx(scores[np.arange(6), list(best)].sum())
    assert len(set(cols)) == 6
    with pytest.raises(ValueError, match="matching"):
        ra.match(scores, "hungarian")


def test_i5_is_one_to_one_where_i2_repeats():
    # Two users with the same home; I2 gives both pseudonyms user 1, I5 a distinct user each.
    ref = traces([[0, 0, 0, 1], [0, 0, 0, 2]])
    pub = pubtraces([[0, 0, 0, 0], [0, 0, 2, 0]])
    assert list(get("I2-VisitProb").run(GRID, ref, pub, seed=0)) == [1, 2]
    pub = pubtraces([[0, 0, 0, 0], [0, 0, 0, 0]])
    assert list(get("I2-VisitProb").run(GRID, ref, pub, seed=0)) == [1, 1]
    assert sorted(get("I5-Matching").run(GRID, ref, pub, seed=0)) == [1, 2]


def test_t4_frequent_region_replacement_and_fallbacks():
    # S = 2 slots a day, 2 reference days. Slot 0: region 3 both days (frequent: 2 > 0.5 * 2).
    # Slot 1: region 5 then 6 (modal count 1, not frequent).
    ref = traces([[3, 5, 3, 6]])
    pub = pubtraces([[10, M + 1, 11, DEL]], [(6, 7)], first_time_id=5)
    est = get("T4-FrequentRegion").run(GRID, ref, pub, seed=0, slots_per_day=2)
    # 10 -> frequent 3; set {6,7} -> 6 (visited at slot 1 in R); 11 -> 3; deletion -> medoid of {5, 6},
    # a tie broken by the earlier day: 5.
    np.testing.assert_array_equal(est.regions[0], [3, 6, 3, 5])
    # With an unreachable threshold, the single regions stay.
    est = get("T4-FrequentRegion").run(GRID, ref, pub, seed=0, slots_per_day=2, threshold=1.0)
    np.testing.assert_array_equal(est.regions[0], [10, 6, 11, 5])


def test_t5_replays_the_reference_medoid_per_slot():
    # One slot a day, three reference days at regions 0, 1 and 15: the medoid is 1.
    ref = traces([[0, 1, 15], [7, 7, 2]])
    pub = pubtraces([[4, 4], [DEL, DEL]], first_time_id=4)
    est = get("T5-ReferenceReplay").run(GRID, ref, pub, seed=0, slots_per_day=1)
    np.testing.assert_array_equal(est.regions, [[1, 1], [7, 7]])
    np.testing.assert_array_equal(est.time_ids, [4, 5])


def test_t6_uses_t2s_event_rules_with_optimal_matching():
    ref = traces([[0, 0, 0, 1], [0, 0, 0, 2]])
    pub = pubtraces([[0, 0, 0, 0], [0, M + 1, DEL, 0]], [(8, 9)])
    est = get("T6-Matching").run(GRID, ref, pub, seed=0)
    rows = {tuple(r) for r in est.regions.tolist()}
    assert (0, 0, 0, 0) in rows
    other = [r for r in est.regions.tolist() if r != [0, 0, 0, 0]][0]
    assert other[0] == 0 and other[1] in (8, 9) and other[3] == 0


def test_coarse_cells_take_each_regions_most_frequent_set():
    gens = [(0, 1), (1, 2, 3)]
    ev = np.array([[M + 1, M + 2, M + 2, 5]])
    table = SetTable.from_sets(M, gens)
    cell = ra.coarse_cells(table, ev)
    assert cell[0] == M + 1 and cell[1] == M + 2 and cell[2] == M + 2 and cell[3] == M + 2
    assert cell[5] == -6  # never generalized: its own cell


def test_best_member_ties_go_to_the_lowest_region():
    table = SetTable.from_sets(M, [(2, 7, 9), (1, 3)])
    keys = np.array([0, 1, 0])
    sets = np.array([M + 1, M + 1, M + 2])
    value = np.zeros((2, M))
    value[1, 9] = 1.0
    chosen = ra._best_member(table, keys, sets, lambda k, r: value[k, r])
    np.testing.assert_array_equal(chosen, [2, 9, 1])


def test_t7_refines_blocks_to_the_regions_people_actually_visit():
    # Every block {0,1,4,5} visit of these users is in fact region 5, every {10,11,14,15} visit 10:
    # the reference (all fine) teaches the map; a uniform guess would be right 1 time in 4.
    rng = np.random.default_rng(0)
    m, L = 20, 40
    fine = np.where(rng.random((m, L)) < 0.5, 5, 10)
    ref = traces(fine)
    blocks = [(0, 1, 4, 5), (10, 11, 14, 15)]
    events = np.where(fine == 5, M + 1, M + 2)
    events[:, :3] = DEL
    pub = pubtraces(events, blocks, first_time_id=L + 1)
    est = get("T7-Refinement").run(GRID, ref, pub, seed=0, slots_per_day=20)
    assert est.regions.shape == (m, L)
    gen_cols = slice(3, None)
    # Each etraces row is some pseudonym's; rows are right wherever the set's refined member is.
    assert set(np.unique(est.regions[:, gen_cols])) <= {5, 10}
    # Without the reference and with no event left fine, nothing can be learned: the map is 0 and the
    # choice falls to the lowest member.
    est = get("T7-Refinement").run(GRID, ref, pub, seed=0, slots_per_day=20, use_reference=False)
    assert set(np.unique(est.regions[:, gen_cols])) <= {0, 10}


def test_trace_inference_needs_one_to_one_matching():
    ref = traces([[0, 1]])
    pub = pubtraces([[0, 1]])
    with pytest.raises(ValueError, match="one-to-one"):
        get("T4-FrequentRegion").run(GRID, ref, pub, seed=0, matching="nn")
