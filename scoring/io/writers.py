"""The writers: CSV text assembled by vectorised gathers, to a path (``.gz`` compressed) or a file object."""
from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import numpy as np

from ..traces import AnonymizedTraces, SetTable, Traces
from .formats import ANOTRACES_HEADER, ETABLE_HEADER, ETRACES_HEADER, PTABLE_HEADER, PUBTRACES_HEADER, TRACES_HEADER


def _int_table(values) -> list:
    return [str(int(v)).encode() for v in values]


def set_texts(sets: SetTable) -> list:
    """Cell text (bytes) of every set id: ``r`` for singletons, ``*`` for M, ``a b c`` for sets."""
    M = sets.M
    texts = [str(r + 1).encode() for r in range(M)] + [b"*"]
    ip, mem = sets.indptr, sets.members
    for s in range(M + 1, sets.n_sets):
        texts.append(" ".join(str(int(r) + 1) for r in mem[ip[s]:ip[s + 1]]).encode())
    return texts


def _render_rows(columns, n_rows: int):
    """Yield the CSV bytes of ``n_rows`` rows, in chunks of about 8 MB.

    Args:
        columns: list of (codes (n_rows,) int, table list of bytes): row i's
            j-th field is ``table_j[codes_j[i]]``.
    The text is assembled by one vectorised gather per chunk (no Python loop
    per row).
    """
    pieces, starts, lens, bases = [], [], [], []
    pos = 0
    for j, (_, table) in enumerate(columns):
        sep = b"\n" if j == len(columns) - 1 else b","
        bases.append(len(lens))
        for t in table:
            piece = t + sep
            pieces.append(piece)
            starts.append(pos)
            lens.append(len(piece))
            pos += len(piece)
    flat = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    widest = sum(int(lens[b:b + len(t)].max()) if len(t) else 0
                 for b, (_, t) in zip(bases, columns))
    step = max(1, (8 << 20) // max(widest, 1))
    codes = [np.asarray(c, dtype=np.int64) for c, _ in columns]
    for a in range(0, n_rows, step):
        b = min(n_rows, a + step)
        seg = np.stack([c[a:b] + base for c, base in zip(codes, bases)], axis=1).ravel()
        seg_len = lens[seg]
        out_start = np.cumsum(seg_len) - seg_len
        total = int(seg_len.sum())
        src = np.repeat(starts[seg] - out_start, seg_len) + np.arange(total, dtype=np.int64)
        yield flat[src].tobytes()


def _write(dest, header: str, chunks) -> None:
    """Write header + chunks to a path (``.gz`` compressed) or a text/binary file object."""
    if isinstance(dest, (str, os.PathLike)):
        path = Path(os.fspath(dest))
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "wb") as f:
            f.write(header.encode() + b"\n")
            for c in chunks:
                f.write(c)
        return
    if isinstance(dest, io.TextIOBase):
        dest.write(header + "\n")
        for c in chunks:
            dest.write(c.decode("ascii"))
    else:
        dest.write(header.encode() + b"\n")
        for c in chunks:
            dest.write(c)


def write_traces(traces: Traces, dest) -> None:
    """Write ``user_id,time_id,reg_id`` rows in (user_id, time_id) order."""
    m, L = traces.regions.shape
    cols = [(np.repeat(np.arange(m), L), _int_table(traces.user_ids)),
            (np.tile(np.arange(L), m), _int_table(traces.time_ids)),
            (traces.regions.ravel(), _int_table(range(1, int(traces.regions.max(initial=0)) + 2)))]
    _write(dest, TRACES_HEADER, _render_rows(cols, m * L))


def write_anotraces(anon: AnonymizedTraces, dest) -> None:
    """Write one ``reg_id`` cell per event in (user_id, time_id) order."""
    _write(dest, ANOTRACES_HEADER, _render_rows([(anon.events.ravel(), set_texts(anon.sets))], anon.events.size))


def write_pubtraces(anon: AnonymizedTraces, dest) -> None:
    """Write ``pse_id,time_id,reg_id`` rows; ``anon.user_ids`` are the pseudonyms, ascending."""
    m, L = anon.events.shape
    cols = [(np.repeat(np.arange(m), L), _int_table(anon.user_ids)),
            (np.tile(np.arange(L), m), _int_table(anon.time_ids)),
            (anon.events.ravel(), set_texts(anon.sets))]
    _write(dest, PUBTRACES_HEADER, _render_rows(cols, m * L))


def write_ptable(pse_ids, user_ids, dest) -> None:
    """Write the ID table ``pse_id,user_id`` (rows in the given order, which should be ascending pse_id)."""
    pse_ids, user_ids = np.asarray(pse_ids), np.asarray(user_ids)
    n = len(pse_ids)
    cols = [(np.arange(n), _int_table(pse_ids)), (np.arange(n), _int_table(user_ids))]
    _write(dest, PTABLE_HEADER, _render_rows(cols, n))


def write_etable(user_ids, dest) -> None:
    """Write an etable: one ``user_id`` per pseudonym in ascending pseudonym order."""
    user_ids = np.asarray(user_ids)
    _write(dest, ETABLE_HEADER, _render_rows([(np.arange(len(user_ids)), _int_table(user_ids))], len(user_ids)))


def write_etraces(traces: Traces, dest) -> None:
    """Write an etraces file: one ``reg_id`` per event in (user_id, time_id) order."""
    regions = traces.regions.ravel()
    table = _int_table(range(1, int(regions.max(initial=0)) + 2))
    _write(dest, ETRACES_HEADER, _render_rows([(regions, table)], regions.size))


def to_bytes(writer, *args) -> bytes:
    """The bytes a writer would write, e.g. ``to_bytes(write_ptable, pse, users)``."""
    buf = io.BytesIO()
    writer(*args, buf)
    return buf.getvalue()
