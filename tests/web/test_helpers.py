"""Small pure helpers of the pages, against hand-worked examples."""
from __future__ import annotations

import numpy as np
import pytest

from contest.web.common import heat_style
from contest.web.team import population_shares
from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, SetTable, Traces


def test_heat_style_ends_of_the_scale_and_readable_text():
    assert heat_style(None) == ""
    assert heat_style(0.0) == "background:rgb(68,1,84);color:#fff"
    assert heat_style(1.0) == "background:rgb(253,231,37);color:#000"
    assert heat_style(2.0) == heat_style(1.0)  # clamped


def test_population_shares_counts_sets_fractionally_and_ignores_deletions():
    grid = Grid(nx=2, ny=2, min_x=0.0, max_x=1.0, min_y=0.0, max_y=1.0, km_lat=1.0, km_lon=1.0, hospitals=())
    M = grid.M
    truth = Traces(np.array([1, 2]), np.array([1, 2]), np.array([[0, 1], [1, 3]], dtype=np.int32))
    assert population_shares(grid, truth).tolist() == [0.25, 0.5, 0.0, 0.25]
    sets = SetTable.from_sets(M, [np.array([0, 1, 2, 3], dtype=np.int32)])  # set id M+1 = all four
    events = np.array([[0, M], [M + 1, 3]], dtype=np.int32)  # region 0, deletion, {0,1,2,3}, region 3
    anon = AnonymizedTraces(np.array([1, 2]), np.array([1, 2]), events, sets)
    # counts: region 0: 1 + 1/4, regions 1, 2: 1/4, region 3: 1 + 1/4 -> total 3 (deletion ignored)
    assert population_shares(grid, anon) == pytest.approx(np.array([1.25, 0.25, 0.25, 1.25]) / 3)
    only_first = population_shares(grid, anon, np.array([True, False]))
    assert only_first == pytest.approx(np.array([1.25, 0.25, 0.25, 0.25]) / 2)
