"""Small pure helpers of the pages, against hand-worked examples."""
from __future__ import annotations

import numpy as np
import pytest

from contest.web.common import heat_style
from contest.web.team import _shares
from scoring.analyses import population_counts
from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, SetTable, Traces


def test_heat_style_ends_of_the_scale_and_readable_text():
    assert heat_style(None) == ""
    assert heat_style(0.0) == "background:rgb(68,1,84);color:#fff"
    assert heat_style(1.0) == "background:rgb(253,231,37);color:#000"
    assert heat_style(2.0) == heat_style(1.0)  # clamped


def test_map_shares_come_from_the_one_population_count():
    """The map page's shares are scoring.analyses.population_counts per slot of the day or summed."""
    grid = Grid(nx=2, ny=2, min_x=0.0, max_x=1.0, min_y=0.0, max_y=1.0, km_lat=1.0, km_lon=1.0, hospitals=())
    M = grid.M
    truth = Traces(np.array([1, 2]), np.array([1, 2]), np.array([[0, 1], [1, 3]], dtype=np.int32))
    counts = population_counts(grid, truth, 2)  # time id 1 is slot 0, time id 2 slot 1
    assert counts.tolist() == [[1, 1, 0, 0], [0, 1, 0, 1]]
    assert _shares(counts, None).tolist() == [0.25, 0.5, 0.0, 0.25]
    assert _shares(counts, 1).tolist() == [0.0, 0.5, 0.0, 0.5]
    sets = SetTable.from_sets(M, [np.array([0, 1, 2, 3], dtype=np.int32)])  # set id M+1 = all four
    events = np.array([[0, M], [M + 1, 3]], dtype=np.int32)  # region 0, deletion, {0,1,2,3}, region 3
    anon = AnonymizedTraces(np.array([1, 2]), np.array([1, 2]), events, sets)
    # whole day: region 0: 1 + 1/4, regions 1, 2: 1/4, region 3: 1 + 1/4 -> total 3 (deletion ignored)
    assert _shares(population_counts(grid, anon, 2), None) == pytest.approx(np.array([1.25, 0.25, 0.25, 1.25]) / 3)
    assert _shares(population_counts(grid, anon, 2), 0) == pytest.approx(np.array([1.25, 0.25, 0.25, 0.25]) / 2)
    assert _shares(np.zeros((2, M)), 0).tolist() == [0.0] * M  # a slot without mass stays zero
