"""Row checks: value ranges, expected ids, rows sorted and complete per (id, time_id)."""
from __future__ import annotations

import numpy as np

from ..errors import IssueCollector, issue
from .archive import source_name


def out_of_range_code(column: str) -> str:
    return "region_out_of_range" if column == "reg_id" else "out_of_range"


def range_check(issues: IssueCollector, values: np.ndarray, lo: int, hi: int, column: str,
                 valid: np.ndarray | None = None) -> np.ndarray:
    """Flag values outside lo..hi; returns the bad mask. ``valid`` masks parse failures (-1)."""
    bad = (values < lo) | (values > hi)
    if valid is not None:
        bad &= valid
    idx = np.flatnonzero(bad)
    code = out_of_range_code(column)
    issues.add_counted(len(idx), (issue(code, i + 2, column, values[i], lo=lo, hi=hi) for i in idx[:20]))
    return bad


def _at_least_one(issues: IssueCollector, values: np.ndarray, column: str) -> None:
    idx = np.flatnonzero(values < 1)
    issues.add_counted(len(idx), (issue("at_least_one", i + 2, column, values[i]) for i in idx[:20]))


def _describe_ids(ids: np.ndarray) -> str:
    """Expected ids in words-free form: ``3..60`` when contiguous, else ``3, 5, 8, ..., 60 (20 ids)``."""
    ids = np.asarray(ids)
    if len(ids) == 0:
        return "-"
    if ids[-1] - ids[0] + 1 == len(ids):
        return f"{ids[0]}..{ids[-1]}"
    return ", ".join(str(i) for i in ids[:3]) + f", ..., {ids[-1]} ({len(ids)})"


def _expected_ids(issues: IssueCollector, values: np.ndarray, expected: np.ndarray, column: str) -> None:
    """Flag every row whose ``column`` value is not one of ``expected`` (ascending)."""
    idx = np.flatnonzero(~np.isin(values, expected))
    described = _describe_ids(expected)
    issues.add_counted(len(idx), (issue("unexpected_id", i + 2, column, values[i], expected=described)
                                  for i in idx[:20]))


def check_rows(issues: IssueCollector, u: np.ndarray, t: np.ndarray, *, ucol: str,
               users, time_ids, pseudonyms: bool = False):
    """Check that rows (u, t) are sorted, complete and use the expected ids.

    Args:
        u, t: (n,) int64 parsed id and time id per row (no parse failures).
        users: expected ids (ascending) or None to require 1..m (or m+1..2m
            when ``pseudonyms``), m inferred.
        time_ids: expected time ids (ascending) or None to infer them as the
            time ids that most ids have.
    Returns:
        (ids (m,), time ids (L,)) when the rows form the full (m, L) grid in
        order, else None (issues recorded).
    """
    users = None if users is None else np.asarray(users, dtype=np.int64)
    time_ids = None if time_ids is None else np.asarray(time_ids, dtype=np.int64)
    if not _known_ids(issues, u, t, users, time_ids, ucol) or not _in_order(issues, u, t, ucol):
        return None
    first = np.r_[True, np.diff(u) != 0]
    ids = users if users is not None else _inferred_ids(issues, u, first, ucol, pseudonyms)
    if ids is None:
        return None
    if time_ids is None:
        time_ids = _inferred_time_ids(issues, t, len(ids), ucol)
        if time_ids is None:
            return None
    return (ids, time_ids) if _complete(issues, u, t, ids, time_ids, ucol) else None


def _known_ids(issues: IssueCollector, u: np.ndarray, t: np.ndarray, users: np.ndarray | None,
               time_ids: np.ndarray | None, ucol: str) -> bool:
    """The ids and time ids are the expected ones (or at least one row of each when not given), and the
    rows as many as the grid when both are given; False with the issues recorded, or when there are no rows."""
    n = len(u)
    if users is not None:
        _expected_ids(issues, u, users, ucol)
    else:
        _at_least_one(issues, u, ucol)
    if time_ids is not None:
        _expected_ids(issues, t, time_ids, "time_id")
    else:
        _at_least_one(issues, t, "time_id")
    if users is not None and time_ids is not None and n != len(users) * len(time_ids):
        issues.put("row_count_grid", None, None, str(n), expected=len(users) * len(time_ids), found=n,
                   users=len(users), idcol=ucol, times=len(time_ids))
    if issues or n == 0:
        if n == 0 and not issues:
            issues.put("no_rows", value="0")
        return False
    return True


def _in_order(issues: IssueCollector, u: np.ndarray, t: np.ndarray, ucol: str) -> bool:
    """Rows sorted by (id, time_id) with no repeated pair; else False, the first 20 offenders recorded."""
    du = np.diff(u)
    dt = np.diff(t)
    dup = (du == 0) & (dt == 0)
    back = (du < 0) | ((du == 0) & (dt < 0))
    idx = np.flatnonzero(dup | back)
    if not len(idx):
        return True
    issues.add_counted(len(idx), (
        issue("row_repeat", i + 3, None, f"{u[i + 1]},{t[i + 1]}", idcol=ucol, id=u[i + 1], time=t[i + 1],
              other=i + 2) if dup[i] else
        issue("row_order", i + 3, None, f"{u[i + 1]},{t[i + 1]}", idcol=ucol, id=u[i + 1], time=t[i + 1],
              prev_id=u[i], prev_time=t[i])
        for i in idx[:20]))
    return False


def _inferred_ids(issues: IssueCollector, u: np.ndarray, first: np.ndarray, ucol: str,
                  pseudonyms: bool) -> np.ndarray | None:
    """The ids of sorted rows (``first``: (n,) bool, a row starts an id) when they are 1..m (m+1..2m for
    ``pseudonyms``); else None, with the ids out of range or the missing ones recorded."""
    ids = u[first]
    m = len(ids)
    lo = m + 1 if pseudonyms else 1
    expect = np.arange(lo, lo + m, dtype=np.int64)
    if np.array_equal(ids, expect):
        return ids
    if pseudonyms:
        bad = np.flatnonzero(ids != expect)
        rows = np.flatnonzero(first)
        issues.add_counted(len(bad), (
            issue("pseudonym_range", rows[k] + 2, ucol, ids[k], m=m, lo=lo, hi=lo + m - 1)
            for k in bad[:20]))
    else:
        missing = np.setdiff1d(np.arange(1, ids[-1] + 1), ids)
        issues.add_counted(len(missing), (
            issue("id_gap", None, ucol, x) for x in missing[:20]))
    return None


def _inferred_time_ids(issues: IssueCollector, t: np.ndarray, n_ids: int, ucol: str) -> np.ndarray | None:
    """The time ids that at least half of the ``n_ids`` ids have (a typo'd time id is not one); None, with
    the rows of stray time ids recorded, when some row has another."""
    tv, tc = np.unique(t, return_counts=True)
    keep = tc * 2 >= n_ids
    time_ids = tv[keep] if keep.any() else tv
    idx = np.flatnonzero(~np.isin(t, time_ids))
    described = _describe_ids(time_ids)
    issues.add_counted(len(idx), (issue("stray_time", i + 2, "time_id", t[i], idcol=ucol, expected=described)
                                  for i in idx[:20]))
    return None if len(idx) else time_ids


def _complete(issues: IssueCollector, u: np.ndarray, t: np.ndarray, ids: np.ndarray, time_ids: np.ndarray,
              ucol: str) -> bool:
    """Every (id, time id) pair of the grid has its row; else False, the first 20 missing ones recorded."""
    m, L = len(ids), len(time_ids)
    if len(u) == m * L:
        return True
    present = np.zeros((m, L), dtype=bool)
    present[np.searchsorted(ids, u), np.searchsorted(time_ids, t)] = True
    miss_u, miss_t = np.nonzero(~present)
    issues.add_counted(len(miss_u), (
        issue("missing_time", None, "time_id", time_ids[b], idcol=ucol, id=ids[a])
        for a, b in zip(miss_u[:20], miss_t[:20])))
    return False


def finish(issues: IssueCollector, source) -> None:
    if issues:
        issues.sort()
        issues.raise_if_any(source=source_name(source))


def row_count_issue(issues: IssueCollector, n: int, expected: int) -> None:
    if n != expected:
        issues.put("row_count_traces", None, None, str(n), expected=expected, found=n)
