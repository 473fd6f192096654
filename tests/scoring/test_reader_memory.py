"""Reading an upload of distinct generalized sets in bounded memory (issue 25 item 3).

164 MB of distinct 55-region sets took the teams' worker to 3.8 GB: the reader's token arrays (int64
offsets, values, line numbers, sort order) cost about 20 bytes per byte of cell text. The distinct
texts are now parsed in slices of ``PARSE_CHUNK_BYTES``; the result does not depend on the slicing.
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from scoring.io import cells as cells_module
from scoring.io import read_anotraces
from scoring.traces import Traces


class _Grid:
    M = 1024


def _distinct_sets_upload(m: int, L: int, size: int = 55, seed: int = 1) -> tuple[bytes, Traces]:
    rng = np.random.default_rng(seed)
    members = np.argsort(rng.random((m * L, 1024)), axis=1)[:, :size] + 1  # distinct sets, 55 regions each
    rows = [b" ".join(b"%d" % v for v in row) for row in members.tolist()]
    rows[::7] = [b"%d" % (i % 1024 + 1) for i in range(len(rows[::7]))]       # some single regions
    rows[3::11] = [b"*"] * len(rows[3::11])                                   # and deletions
    truth = Traces(np.arange(1, m + 1), np.arange(1, L + 1), np.zeros((m, L), dtype=np.int32))
    return b"reg_id\n" + b"\n".join(rows) + b"\n", truth


def test_the_result_does_not_depend_on_the_slicing(monkeypatch):
    content, truth = _distinct_sets_upload(40, 50)
    whole = read_anotraces(content, _Grid, truth)
    monkeypatch.setattr(cells_module, "PARSE_CHUNK_BYTES", 4096)  # many slices
    sliced = read_anotraces(content, _Grid, truth)
    assert np.array_equal(whole.events, sliced.events)
    assert np.array_equal(whole.sets.indptr, sliced.sets.indptr)
    assert np.array_equal(whole.sets.members, sliced.sets.members)


@pytest.mark.parametrize("chunk", [1 << 18])
def test_the_parse_peak_is_bounded_by_the_slice_not_the_file(monkeypatch, chunk):
    content, truth = _distinct_sets_upload(100, 200)  # about 4 MB of distinct sets
    monkeypatch.setattr(cells_module, "PARSE_CHUNK_BYTES", chunk)
    read_anotraces(content, _Grid, truth)  # warm-up (imports, caches)
    tracemalloc.start()
    try:
        anon = read_anotraces(content, _Grid, truth)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(anon.sets.indptr) > 15_000  # the distinct sets are there
    # Parsed in one piece (before) the peak was 17.2 times the file; in slices it is 4.1 times: the lines,
    # the distinct texts' dictionary, the compact sets and one slice's tokens.
    assert peak < 6 * len(content), (peak / len(content))
