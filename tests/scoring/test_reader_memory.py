"""Reading an upload of distinct generalized sets in bounded memory (issue 25 item 3).

164 MB of distinct 55-region sets took the teams' worker to 3.8 GB: the reader's token arrays (int64
offsets, values, line numbers, sort order) cost about 20 bytes per byte of cell text. The distinct
texts are now parsed in slices of ``PARSE_CHUNK_BYTES``; the result does not depend on the slicing.
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from scoring.errors import ValidationError
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


def _with_a_repeat(content: bytes, row: int) -> tuple[bytes, int, bytes]:
    """``content`` with the set on data row ``row`` (0-based) naming its first region twice: (file, its line, cell)."""
    lines = content.split(b"\n")
    cell = lines[1 + row]
    bad = cell + b" " + cell.split(b" ")[0]
    lines[1 + row] = bad
    return b"\n".join(lines), 2 + row, bad


def _peak(content: bytes, truth: Traces) -> tuple[int, object]:
    """Peak bytes traced while reading ``content``, and what the read returned or raised."""
    tracemalloc.start()
    try:
        try:
            outcome = read_anotraces(content, _Grid, truth)
        except ValidationError as exc:
            outcome = exc
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, outcome


def test_one_repeated_region_costs_no_more_than_a_well_formed_file(monkeypatch):
    """One set naming a region twice is reported with its line and value, parsed in the memory of a
    well-formed file: the other sets still go through the vectorised slices, not one by one."""
    monkeypatch.setattr(cells_module, "PARSE_CHUNK_BYTES", 1 << 18)  # slices well under the file
    content, truth = _distinct_sets_upload(100, 200)  # about 4 MB of distinct 55-region sets
    malformed, line, cell = _with_a_repeat(content, 12_346)  # a set (not a single region or *)
    read_anotraces(content, _Grid, truth)  # warm-up (imports, caches)
    well_peak, anon = _peak(content, truth)
    bad_peak, error = _peak(malformed, truth)
    assert not isinstance(anon, ValidationError)
    assert isinstance(error, ValidationError)
    found = [i for i in error.issues if i.code == "set_repeat"]
    assert len(found) == 1 and found[0].line == line, error.issues
    assert cell.split(b" ")[0].decode() in str(found[0]) and str(line) in str(found[0])
    # Parsed cell by cell (before) the malformed file's peak was several times the well-formed one's.
    assert bad_peak < 1.3 * well_peak, (bad_peak / well_peak)


TRICKY_CELLS = [b"*", b"", b"7", b"0", b"1025", b"1024", b"1 2", b"2 1", b"1  2", b" 1", b"1 ", b"1 1", b"3 2 3",
                b"1 *", b"*1", b"a", b"1 a", b"0001", b"0000000001", b"1234567890", b"\xd9\xa1", b"1\t2",
                b"-1", b"+1", b"1 2 1024 1023", b"1 0"]


@pytest.mark.parametrize("allow_sets", [True, False])
def test_the_vectorised_verdict_is_the_cell_parsers(allow_sets):
    """Whatever the slices set aside as bad is what the cell-by-cell parser calls an error, and the rest
    parse to the same sets, alone or among others."""
    M = 1024
    key_set, sizes, members, bad = cells_module._parse_distinct(TRICKY_CELLS, M, allow_sets)
    sets = np.split(members, np.cumsum(sizes)[:-1]) if len(sizes) else []
    for k, text in enumerate(TRICKY_CELLS):
        status, payload = cells_module._parse_cell(text, M, allow_sets)
        assert (status == "err") == (k in bad), text
        if status == "ok" and len(payload) != 1:
            assert key_set[k] == M if not payload else tuple(sets[key_set[k] - M - 1]) == payload, text
        elif status == "ok":
            assert key_set[k] == payload[0], text
