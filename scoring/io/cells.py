"""Region cells (a region id, a space-separated set, ``*``), interned: each distinct text parsed once."""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import IssueCollector, ValidationError, issue, show_value
from ..traces import SetTable
from . import formats
from .formats import DIGIT, MAX_DIGITS
from .text import parse_digit_fields


def _parse_cell(text: bytes, M: int, allow_sets: bool):
    """One cell text -> ('ok', tuple of 0-based members) or ('err', (code, params)).

    The vectorised parse decides which cells are bad; this says why, for the cells an error shows.

    ``()`` is a deletion. With ``allow_sets`` False (etraces), only a single
    region id is accepted.
    """
    if text == b"*":
        if not allow_sets:
            return "err", ("etraces_single", {"cell": "*"})
        return "ok", ()
    if not text:
        return "err", ("empty_cell_set" if allow_sets else "empty_cell", {})
    shown = show_value(text)
    parts = text.split(b" ")
    if len(parts) > 1 and not allow_sets:
        if all(p.isdigit() and p.isascii() for p in parts):
            return "err", ("etraces_single", {"cell": shown})
        return "err", ("not_region", {"cell": shown})
    if len(parts) > 1 and any(not p for p in parts):
        return "err", ("set_spacing", {"cell": shown})
    members = []
    for p in parts:
        if not (p.isdigit() and p.isascii()):
            if len(parts) == 1:
                return "err", ("not_cell" if allow_sets else "not_region", {"cell": shown})
            return "err", ("set_member", {"part": show_value(p), "cell": shown})
        if len(p) > MAX_DIGITS:
            return "err", ("region_out_of_range", {"value": show_value(p), "lo": 1, "hi": M})
        r = int(p)
        if not 1 <= r <= M:
            return "err", ("region_out_of_range", {"value": r, "lo": 1, "hi": M})
        members.append(r - 1)
    if len(members) > 1:
        seen = set()
        for r in members:
            if r in seen:
                return "err", ("set_repeat", {"region": r + 1, "cell": shown})
            seen.add(r)
    return "ok", tuple(sorted(members))


_CELL_OK = DIGIT.copy()
_CELL_OK[[ord(" "), ord("\n")]] = True


#: Bytes of distinct cell text whose tokens are parsed at once. The token arrays (offsets, values, line
#: numbers, sort order: int64 each) take about 20 bytes per byte of text; parsing in slices bounds that
#: peak (about 20 x this) whatever the file, and only the compact result (2 bytes a member) grows with it.
PARSE_CHUNK_BYTES = 4 << 20


def _parse_distinct(distinct: list, M: int, allow_sets: bool):
    """Vectorised parse of distinct cell texts; the texts that are not plainly valid are set aside.

    Plainly valid: ``*`` (when sets are allowed) or 1..9-digit region ids in
    1..M separated by single spaces, no region twice (a single id only when
    sets are not allowed). Sets are canonicalised by sorting their members,
    so "2 1" and "1 2" become one set. The texts are parsed in slices of about
    :data:`PARSE_CHUNK_BYTES` (bounded memory for any file); a slice with a
    bad text is parsed again without it, so one bad cell costs one slice twice.

    Returns:
        (key_set (n,) int64 set id per distinct text (M for a bad one), sizes (g,) int64,
        members (sum sizes,) int32, bad (b,) int64 positions of the bad texts in ``distinct``)
        for the g generalized sets in order of first appearance.
    """
    n = len(distinct)
    is_star = np.array(distinct, dtype=object) == b"*" if n else np.zeros(0, dtype=bool)
    bad = [np.flatnonzero(is_star)] if not allow_sets else []
    rest = np.flatnonzero(~is_star)
    key_set = np.full(n, M, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    if len(rest) == 0:
        return (key_set, *empty, np.concatenate(bad + [empty[0]]))
    code_dtype = np.int16 if M < 2 ** 15 else np.int32
    ends = np.cumsum(np.fromiter((len(distinct[i]) + 1 for i in rest), dtype=np.int64, count=len(rest)))
    cuts = np.searchsorted(ends, np.arange(PARSE_CHUNK_BYTES, ends[-1], PARSE_CHUNK_BYTES), side="right")
    keys: list[bytes] = []     # canonical key (sorted members as raw bytes) of each multi-region text
    multi_rows = []
    for part in np.split(rest, np.unique(cuts)):
        if len(part) == 0:
            continue
        parsed = _parse_slice([distinct[i] for i in part], M, allow_sets, code_dtype)
        if parsed is None:
            wrong = _bad_texts([distinct[i] for i in part], M, allow_sets)
            bad.append(part[wrong])
            part = part[~wrong]
            if len(part) == 0:
                continue
            parsed = _parse_slice([distinct[i] for i in part], M, allow_sets, code_dtype)
        single, single_region, multi, slice_keys = parsed
        key_set[part[single]] = single_region
        multi_rows.append(part[multi])
        keys += slice_keys
    bad = np.concatenate(bad + [empty[0]])
    if not keys:
        return (key_set, *empty, bad)
    # Dedupe the sets by their canonical keys (dict: C speed), in order of first appearance.
    canon = list(dict.fromkeys(keys))
    index = dict(zip(canon, range(len(canon))))
    key_set[np.concatenate(multi_rows)] = M + 1 + np.fromiter(map(index.__getitem__, keys), dtype=np.int64,
                                                              count=len(keys))
    w = np.dtype(code_dtype).itemsize
    members = np.frombuffer(b"".join(canon), dtype=code_dtype).astype(np.int32)
    gsizes = np.fromiter(map(len, canon), dtype=np.int64, count=len(canon)) // w
    return key_set, gsizes, members, bad


def _bad_texts(texts: list, M: int, allow_sets: bool) -> np.ndarray:
    """(n,) bool: which of n cell texts (none of them ``*``) are not plainly valid (see
    :func:`_parse_distinct`), found with the same vectorised tests as :func:`_parse_slice`."""
    buf = np.frombuffer(b"\n".join(texts), dtype=np.uint8)
    is_newline = buf == ord("\n")
    text_of_byte = np.cumsum(is_newline, dtype=np.int32)   # a separator's own text does not matter
    is_space = buf == ord(" ")
    wrong_byte = ~_CELL_OK[buf] | (is_space if not allow_sets else False)
    bad = np.zeros(len(texts), dtype=bool)
    bad[text_of_byte[wrong_byte]] = True
    del text_of_byte, wrong_byte
    seps = np.flatnonzero(is_space | is_newline)
    starts = np.r_[0, seps + 1]
    lens = np.r_[seps, len(buf)] - starts
    line = np.r_[0, np.cumsum(is_newline[seps])]            # which text each token is in
    bad[line[(lens < 1) | (lens > MAX_DIGITS)]] = True
    keep = ~bad[line]                                       # tokens of texts of digits only
    vals = parse_digit_fields(buf, starts[keep], lens[keep])
    line = line[keep]
    bad[line[(vals < 1) | (vals > M)]] = True
    order = np.lexsort((vals, line))
    vals, line = vals[order], line[order]
    bad[line[1:][(vals[1:] == vals[:-1]) & (line[1:] == line[:-1])]] = True   # a region twice in one set
    return bad


def _parse_slice(texts: list, M: int, allow_sets: bool, code_dtype):
    """One slice of :func:`_parse_distinct`: (positions of single-region texts, their 0-based regions,
    positions of multi-region texts, their canonical keys), or None if a text is not plainly valid."""
    blob = b"\n".join(texts)
    buf = np.frombuffer(blob, dtype=np.uint8)
    if not _CELL_OK[buf].all():
        return None
    is_space = buf == ord(" ")
    if is_space.any() and not allow_sets:
        return None
    seps = np.flatnonzero(is_space | (buf == ord("\n")))
    del is_space
    starts = np.r_[0, seps + 1]
    lens = np.r_[seps, len(buf)] - starts
    if lens.min() < 1 or lens.max() > MAX_DIGITS:
        return None
    vals = parse_digit_fields(buf, starts, lens)
    del starts, lens
    if vals.min() < 1 or vals.max() > M:
        return None
    line = np.r_[0, np.cumsum(buf[seps] == ord("\n"))]       # which text each token is in
    del seps
    order = np.lexsort((vals, line))
    vals, line = vals[order], line[order]
    del order
    if np.any((vals[1:] == vals[:-1]) & (line[1:] == line[:-1])):
        return None                                             # a region twice in one set
    sizes = np.bincount(line, minlength=len(texts))
    del line
    first = np.r_[0, np.cumsum(sizes)[:-1]]
    single = sizes == 1
    multi = np.flatnonzero(~single)
    raw = (vals - 1).astype(code_dtype).tobytes()
    w = np.dtype(code_dtype).itemsize
    a, b = first[multi] * w, (first[multi] + sizes[multi]) * w
    keys = [raw[x:y] for x, y in zip(a.tolist(), b.tolist())]
    return np.flatnonzero(single), vals[first[single]] - 1, multi, keys


def _cell_issue(line: int, column: str, shown: str, code: str, params: dict):
    # region_out_of_range names the bad member of a set as its value; other cell issues the whole cell
    params = dict(params)
    return issue(code, line, column, params.pop("value", shown), **params)


def intern_cells(cells: list, M: int, issues: IssueCollector, *, allow_sets: bool,
                  column: str = "reg_id", first_line: int = 2, max_set_members: int | None = None):
    """Map each cell text to a set id, parsing each distinct text once.

    Args:
        cells: list of n cell texts (bytes), in row order.
        max_set_members: most region ids the distinct texts may name in all (default
            :data:`~scoring.io.formats.MAX_SET_MEMBERS`); counted before anything is parsed.
    Returns:
        (events (n,) int32 set ids, SetTable). Rows with a bad cell get set
        id M (deletion) and an issue.
    Raises:
        ValidationError: ``set_members_too_many``, the file as a whole.
    """
    distinct = list(dict.fromkeys(cells))        # first-appearance order, C-speed
    limit = formats.MAX_SET_MEMBERS if max_set_members is None else max_set_members
    # a region id per space-separated part (an upper bound for a malformed text): bytes.count at C speed
    named = len(distinct) + sum(map(bytes.count, distinct, itertools.repeat(b" ")))
    if named > limit:
        raise ValidationError.of("set_members_too_many", count=f"{named:,}", limit=f"{limit:,}")
    lookup = dict(zip(distinct, range(len(distinct))))
    codes = np.fromiter(map(lookup.__getitem__, cells), dtype=np.int64, count=len(cells))
    del lookup
    key_set, sizes, members, bad = _parse_distinct(distinct, M, allow_sets)
    if len(bad):
        # Only the cells shown are parsed one by one, for the reason each is wrong.
        bad_key = np.zeros(len(distinct), dtype=bool)
        bad_key[bad] = True
        bad_rows = np.flatnonzero(bad_key[codes])
        issues.add_counted(len(bad_rows), (
            _cell_issue(i + first_line, column, show_value(cells[i]), *_parse_cell(cells[i], M, allow_sets)[1])
            for i in bad_rows[:20].tolist()))
    return key_set[codes].astype(np.int32), SetTable.from_members(M, sizes, members)
