"""The readers of rules §5's files: each returns arrays or raises one ValidationError listing the problems."""
from __future__ import annotations

import numpy as np

from ..errors import IssueCollector, issue, show_value
from ..traces import AnonymizedTraces, Traces
from .cells import intern_cells
from .checks import check_rows, finish, range_check, row_count_issue
from .formats import (
    ANOTRACES_HEADER,
    DEFAULT_MAX_BYTES,
    ETABLE_HEADER,
    ETRACES_HEADER,
    MAX_DIGITS,
    PTABLE_HEADER,
    PUBTRACES_HEADER,
    TRACES_HEADER,
)
from .text import fast_numeric, open_text, parse_digit_fields, read_numeric, slow_numeric


def read_traces(source, grid, *, users=None, time_ids=None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> Traces:
    """Read reference/original/training traces (``user_id,time_id,reg_id``).

    Rules: rows sorted by (user_id, time_id); every user has a row at every
    time id (no gaps, no repeats); user ids are ``users`` if given, else
    1..m without gaps; time ids are ``time_ids`` if given, else the time ids
    most users have; region ids in 1..``grid.M``.

    Args:
        source: path, bytes or binary file object (CSV, gzip or one-file zip).
        grid: the contest :class:`~scoring.grid.Grid` (only ``grid.M`` is used).
        users: optional (m,) expected user ids, ascending.
        time_ids: optional (L,) expected time ids, ascending.
    Returns:
        :class:`Traces` with regions (m, L) int32 0-based.
    Raises:
        ValidationError: listing up to 20 problems and their total.
    """
    body = open_text(source, TRACES_HEADER, max_bytes)
    issues = IssueCollector()
    cols = ("user_id", "time_id", "reg_id")
    table = read_numeric(body, cols, issues, "user_id,time_id,reg_id", {"reg_id": grid.M})
    valid = table >= 0
    range_check(issues, table[:, 2], 1, grid.M, "reg_id", valid=valid[:, 2])
    if issues:
        finish(issues, source)
    shape = check_rows(issues, table[:, 0], table[:, 1], ucol="user_id", users=users, time_ids=time_ids)
    finish(issues, source)
    ids, tids = shape
    regions = (table[:, 2] - 1).astype(np.int32).reshape(len(ids), len(tids))
    return Traces(ids.astype(np.int64), tids.astype(np.int64), regions)


def read_anotraces(source, grid, truth: Traces, *, max_bytes: int = DEFAULT_MAX_BYTES) -> AnonymizedTraces:
    """Read a team's anonymized traces (``reg_id``, one row per row of ``truth``).

    Each cell is a region id, a set of distinct region ids separated by
    single spaces (generalization), or ``*`` (deletion). Sets are interned:
    one :class:`SetTable` entry per distinct set whatever its member order.

    Returns:
        :class:`AnonymizedTraces` with ``truth``'s user ids and time ids and
        events (m, L) int32 set ids.
    Raises:
        ValidationError: wrong header, row count, malformed or out-of-range
            cells, repeated regions in a set.
    """
    body = open_text(source, ANOTRACES_HEADER, max_bytes)
    issues = IssueCollector()
    row_count_issue(issues, body.n, truth.m * truth.L)
    cells = body.lines()
    events, sets = intern_cells(cells, grid.M, issues, allow_sets=True)
    finish(issues, source)
    return AnonymizedTraces(truth.user_ids, truth.time_ids, events.reshape(truth.m, truth.L), sets)


def read_etraces(source, grid, truth: Traces, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Traces:
    """Read an attacker's inferred traces (``reg_id``, one single region id per row of ``truth``).

    Returns:
        :class:`Traces` with ``truth``'s user ids and time ids.
    Raises:
        ValidationError: wrong header or row count; a cell that is not one
            region id in 1..M (a set or ``*`` included).
    """
    body = open_text(source, ETRACES_HEADER, max_bytes)
    issues = IssueCollector()
    row_count_issue(issues, body.n, truth.m * truth.L)
    table = fast_numeric(body.array(), body.n, 1)
    if table is None:
        cells = body.lines()
        events, _ = intern_cells(cells, grid.M, issues, allow_sets=False)
        regions = events
    else:
        range_check(issues, table[:, 0], 1, grid.M, "reg_id")
        regions = table[:, 0] - 1
    finish(issues, source)
    return Traces(truth.user_ids, truth.time_ids, regions.astype(np.int32).reshape(truth.m, truth.L))


def read_pubtraces(source, grid, *, max_bytes: int = DEFAULT_MAX_BYTES) -> AnonymizedTraces:
    """Read published pseudonymized traces (``pse_id,time_id,reg_id``).

    Rules: sorted by (pse_id, time_id); pseudonyms m+1..2m; every pseudonym
    has a row at every time id; cells as in anotraces.

    Returns:
        :class:`AnonymizedTraces` whose ``user_ids`` are the pseudonyms.
    """
    body = open_text(source, PUBTRACES_HEADER, max_bytes)
    n = body.n
    issues = IssueCollector()
    if n == 0:
        issues.put("no_rows", value="0")
        finish(issues, source)
    fast = _fast_pubtraces(body.array(), n)
    if fast is not None:
        ids, tids, cells = fast
    else:
        lines = body.lines()
        parts = list(map(_split3, lines))
        for i, p in enumerate(parts):
            if len(p) != 3:
                issues.put("field_count", i + 2, None, show_value(lines[i]), count=3,
                           columns="pse_id,time_id,reg_id", found=len(p), text=show_value(lines[i]))
        finish(issues, source)
        pse_col, time_col, cells = zip(*parts)
        del parts, lines
        ids = _numeric_column(pse_col, "pse_id", issues)
        tids = _numeric_column(time_col, "time_id", issues)
    events, sets = intern_cells(list(cells), grid.M, issues, allow_sets=True)
    if issues:
        finish(issues, source)
    shape = check_rows(issues, ids, tids, ucol="pse_id", users=None, time_ids=None, pseudonyms=True)
    finish(issues, source)
    pse, times = shape
    return AnonymizedTraces(pse.astype(np.int64), times.astype(np.int64),
                            events.reshape(len(pse), len(times)), sets)


def _fast_pubtraces(buf: np.ndarray, n: int):
    """(pse_ids, time_ids, cell texts) of a clean pubtraces body, or None.

    Vectorised: the separators must run ``, , \\n`` per line (cells hold no
    commas), the first two fields 1..9 digits; the cells are cut out with
    one byte mask and split once.
    """
    seps = np.flatnonzero((buf == ord(",")) | (buf == ord("\n")))
    if len(seps) != 3 * n - 1:
        return None
    pattern = np.tile(np.array([ord(","), ord(","), ord("\n")], dtype=np.uint8), n)[:-1]
    if not np.array_equal(buf[seps], pattern):
        return None
    seps = np.append(seps, len(buf)).reshape(n, 3)
    line_start = np.r_[0, seps[:-1, 2] + 1]
    starts = np.stack([line_start, seps[:, 0] + 1], axis=1).ravel()
    lens = np.stack([seps[:, 0] - line_start, seps[:, 1] - seps[:, 0] - 1], axis=1).ravel()
    if lens.min() < 1 or lens.max() > MAX_DIGITS:
        return None
    values = parse_digit_fields(buf, starts, lens, check=True)
    if values is None:
        return None
    values = values.reshape(n, 2)
    # Bytes alternate: line prefix up to the second comma (dropped), cell + newline (kept).
    seg = np.stack([seps[:, 1] + 1 - line_start, seps[:, 2] + 1 - (seps[:, 1] + 1)], axis=1).ravel()
    seg[-1] -= 1  # the last line has no newline
    keep = np.repeat(np.tile(np.array([False, True]), n), seg)
    cells = buf[keep].tobytes().split(b"\n")
    return values[:, 0], values[:, 1], cells


def _split3(line: bytes) -> list:
    return line.split(b",", 2)


def _numeric_column(fields, column: str, issues: IssueCollector) -> np.ndarray:
    """int64 values of a column given as a sequence of byte strings (vectorised when clean)."""
    n = len(fields)
    table = fast_numeric(np.frombuffer(b"\n".join(fields), dtype=np.uint8), n, 1)
    if table is not None:
        return table[:, 0]
    return slow_numeric(list(fields), n, (column,), issues, column)[:, 0]


def read_ptable(source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """Read the secret ID table (``pse_id,user_id``).

    Rules: m rows sorted by pse_id; pseudonyms exactly m+1..2m; user ids a
    permutation of 1..m.

    Returns:
        (pse_ids (m,) int64, user_ids (m,) int64).
    """
    body = open_text(source, PTABLE_HEADER, max_bytes)
    n = body.n
    issues = IssueCollector()
    table = read_numeric(body, ("pse_id", "user_id"), issues, "pse_id,user_id", {"user_id": n})
    if n == 0:
        issues.put("no_rows", value="0")
    finish(issues, source)
    pse, usr = table[:, 0], table[:, 1]
    expect = np.arange(n + 1, 2 * n + 1)
    bad = np.flatnonzero(pse != expect)
    issues.add_counted(len(bad), (
        issue("ptable_pseudonym", i + 2, "pse_id", pse[i], expected=expect[i], found=pse[i], lo=n + 1, hi=2 * n)
        for i in bad[:20]))
    range_check(issues, usr, 1, n, "user_id")
    ok = (usr >= 1) & (usr <= n)
    order = np.argsort(usr, kind="stable")
    su = usr[order]
    rep = np.flatnonzero((su[1:] == su[:-1]) & ok[order][1:])
    issues.add_counted(len(rep), (
        issue("ptable_repeat", order[k + 1] + 2, "user_id", su[k + 1], other=order[k] + 2, m=n) for k in rep[:20]))
    finish(issues, source)
    return pse.astype(np.int64), usr.astype(np.int64)


def read_etable(source, n_pseudonyms: int, m: int, *, max_bytes: int = DEFAULT_MAX_BYTES) -> np.ndarray:
    """Read an attacker's inferred ID table (``user_id``, one row per pseudonym in ascending order).

    Several pseudonyms may be given the same user id (the paper allows it).

    Returns:
        (n_pseudonyms,) int64 estimated user ids.
    Raises:
        ValidationError: wrong header or row count, an id outside 1..m.
    """
    body = open_text(source, ETABLE_HEADER, max_bytes)
    n = body.n
    issues = IssueCollector()
    if n != n_pseudonyms:
        issues.put("row_count_etable", None, None, str(n), expected=n_pseudonyms, found=n)
    table = read_numeric(body, ("user_id",), issues, "user_id", {"user_id": m})
    range_check(issues, table[:, 0], 1, m, "user_id", valid=table[:, 0] >= 0)
    finish(issues, source)
    return table[:, 0].astype(np.int64)
