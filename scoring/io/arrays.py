"""Parsed traces as bytes and back: the arrays of a :class:`~scoring.traces.Traces` or an
:class:`~scoring.traces.AnonymizedTraces`, one ``.npy`` array after another.

Not a contest file (rules §5 files are CSV): the judge's own copy of a file it has
already read and validated, so that reading it again costs a load, not a parse
(``contest.services.data``). Loading never unpickles (``allow_pickle=False``) and
checks the layout it expects, so bytes of another layout raise ``ValueError``.
"""
from __future__ import annotations

import io

import numpy as np

from scoring.traces import AnonymizedTraces, SetTable, Traces

#: The layout's name and version: bumped if the arrays written below change.
LAYOUT = {Traces: "traces/1", AnonymizedTraces: "pubtraces/1"}


def to_bytes(value: Traces | AnonymizedTraces) -> bytes:
    """The arrays of ``value`` (plain: user_ids, time_ids, regions; obfuscated: user_ids, time_ids,
    events, M, indptr, members) as consecutive ``.npy`` arrays, preceded by the layout's name."""
    if isinstance(value, Traces):
        arrays = [value.user_ids, value.time_ids, value.regions]
    elif isinstance(value, AnonymizedTraces):
        arrays = [value.user_ids, value.time_ids, value.events, np.int64(value.sets.M), value.sets.indptr,
                  value.sets.members]
    else:
        raise TypeError(f"expected Traces or AnonymizedTraces, got {type(value).__name__}")
    out = io.BytesIO()
    np.save(out, np.array(LAYOUT[type(value)]), allow_pickle=False)
    for a in arrays:
        np.save(out, np.asarray(a), allow_pickle=False)
    return out.getvalue()


def from_bytes(data: bytes, kind: type) -> Traces | AnonymizedTraces:
    """What :func:`to_bytes` wrote of a ``kind`` (``Traces`` or ``AnonymizedTraces``); ``ValueError`` if
    the bytes hold another layout."""
    f = io.BytesIO(data)
    layout = str(np.load(f, allow_pickle=False))
    if layout != LAYOUT.get(kind):
        raise ValueError(f"the arrays are {layout!r}, expected {LAYOUT.get(kind)!r}")
    if layout == LAYOUT[Traces]:
        user_ids, time_ids, regions = (np.load(f, allow_pickle=False) for _ in range(3))
        return Traces(user_ids, time_ids, regions)
    user_ids, time_ids, events, M, indptr, members = (np.load(f, allow_pickle=False) for _ in range(6))
    return AnonymizedTraces(user_ids, time_ids, events, SetTable(int(M), indptr, members))
