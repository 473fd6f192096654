"""Tiny hand-made traces for algorithm tests: a 4 x 4 grid and builders from nested lists."""
from __future__ import annotations

import numpy as np

from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, SetTable, Traces

GRID = Grid(nx=4, ny=4, min_x=139.68, max_x=139.72, min_y=35.65, max_y=35.69, hospitals=())
M = GRID.M
DEL = M  # the deletion set id


def traces(rows, first_time_id=1, user_ids=None) -> Traces:
    """Plain traces from an (m, L) nested list of 0-based regions; users 1..m unless given."""
    regions = np.asarray(rows, dtype=np.int32)
    m, L = regions.shape
    uids = np.arange(1, m + 1) if user_ids is None else np.asarray(user_ids)
    return Traces(uids.astype(np.int64), np.arange(first_time_id, first_time_id + L, dtype=np.int64), regions)


def pubtraces(events, generalized=(), first_time_id=1) -> AnonymizedTraces:
    """Pubtraces (pseudonyms n+1..2n) from an (n, L) nested list of set ids; sets > M from ``generalized``."""
    ev = np.asarray(events, dtype=np.int32)
    n, L = ev.shape
    return AnonymizedTraces(np.arange(n + 1, 2 * n + 1, dtype=np.int64),
                            np.arange(first_time_id, first_time_id + L, dtype=np.int64),
                            ev, SetTable.from_sets(M, list(generalized)))
