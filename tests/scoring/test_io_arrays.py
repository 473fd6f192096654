"""The judge's parsed copies (scoring.io.arrays): exact round trips, and nothing else is accepted."""
from __future__ import annotations

import io

import numpy as np
import pytest

from scoring.io import arrays
from scoring.traces import AnonymizedTraces, Traces
from tests.scoring.builders import DEL, pubtraces, traces


def _same(a, b):
    """Every array of ``a`` and ``b`` equal, with the same dtype (a copy that widened int32 to int64
    would double the memory of every job that loads it)."""
    names = ("user_ids", "time_ids", "regions") if isinstance(a, Traces) else ("user_ids", "time_ids", "events")
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    if isinstance(a, AnonymizedTraces):
        assert a.sets.M == b.sets.M
        for name in ("indptr", "members"):
            x, y = getattr(a.sets, name), getattr(b.sets, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name


def test_plain_and_obfuscated_traces_come_back_exactly():
    plain = traces([[0, 1, 2], [5, 5, 15]], user_ids=np.array([3, 9]))
    back = arrays.from_bytes(arrays.to_bytes(plain), Traces)
    assert isinstance(back, Traces)
    _same(plain, back)
    obf = pubtraces([[0, 17, DEL], [18, 3, 17]], generalized=[(1, 2), (4, 5, 6)])
    back = arrays.from_bytes(arrays.to_bytes(obf), AnonymizedTraces)
    assert isinstance(back, AnonymizedTraces)
    _same(obf, back)
    assert back.sets.set_members(18).tolist() == [4, 5, 6]


def test_another_layout_or_other_bytes_are_refused():
    plain = traces([[0, 1]])
    with pytest.raises(ValueError, match="expected 'pubtraces/1'"):
        arrays.from_bytes(arrays.to_bytes(plain), AnonymizedTraces)
    with pytest.raises(ValueError):
        arrays.from_bytes(b"user_id,time_id,reg_id\n1,1,1\n", Traces)
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)   # never unpickled
    with pytest.raises(ValueError):
        arrays.from_bytes(pickled.getvalue(), Traces)
    with pytest.raises(TypeError):
        arrays.to_bytes(np.zeros(3))
