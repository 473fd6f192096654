"""The synthesizers' one distance between points (synth.common.point_distances): the same floats, bit for bit, as
the sum over the last axis of the squared differences it replaced, so every seeded set keeps its bytes."""
from __future__ import annotations

import numpy as np

from scoring.grid import Grid
from synth.common import point_distances


def test_the_distances_are_the_reduction_s_to_the_last_bit():
    rng = np.random.default_rng(7)
    a, b = rng.uniform(-50, 50, size=(300, 2)), rng.uniform(-50, 50, size=(40, 2))
    reduced = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    assert np.array_equal(point_distances(a[:, None, :], b[None, :, :]), reduced)
    xy = Grid().xy.astype(np.float64)
    grid_reduced = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))     # cells apart, as SGLT measures
    assert np.array_equal(point_distances(xy[:, None, :], xy[None, :, :]), grid_reduced)
    assert np.array_equal(point_distances(a[:5], a[5:10]), np.sqrt(((a[:5] - a[5:10]) ** 2).sum(-1)))   # pairs, no broadcast


def test_a_distance_is_what_pythagoras_gives():
    assert point_distances(np.array([0.0, 0.0]), np.array([3.0, 4.0])) == 5.0
