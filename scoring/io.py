"""Reading, validating and writing every contest file of SPEC 5.

| reader | file | header |
|---|---|---|
| :func:`read_traces` | reftraces / orgtraces / traintraces | ``user_id,time_id,reg_id`` |
| :func:`read_anotraces` | anotraces (team -> judge) | ``reg_id`` |
| :func:`read_pubtraces` | pubtraces (judge -> all) | ``pse_id,time_id,reg_id`` |
| :func:`read_ptable` | ptable (secret ID table) | ``pse_id,user_id`` |
| :func:`read_etable` | etable (attacker -> judge) | ``user_id`` |
| :func:`read_etraces` | etraces (attacker -> judge) | ``reg_id`` |

A ``source`` is a path (``str`` or ``os.PathLike``), ``bytes``, or a binary
file object. Its content may be plain CSV, gzip (``.gz``) or a zip archive
holding exactly one file; the format is recognised by its magic bytes, not by
its name. CRLF line ends and a UTF-8 byte-order mark are accepted. The
uncompressed size is limited (``max_bytes``, default 200 MB, SPEC 5) and the
limit is enforced while decompressing, so a zip or gzip bomb is refused
after at most ``max_bytes`` bytes of work.

Every reader either returns the parsed arrays or raises
:class:`~scoring.errors.ValidationError` listing the problems (line numbers
as in the file, header = line 1). Never another exception type for bad
content.

Speed: each reader first tries a vectorised fast path (numpy over the raw
bytes for numeric files; for files of region cells, interning of the
distinct line texts, each parsed once). Only when the fast path meets
something it does not accept does a slower line-by-line pass run, which
either finds the precise problems or parses what the fast path refused.

Decisions where SPEC 5 is silent:
- exactly one line terminator may end the file; a further empty line is an
  empty row (an empty cell for anotraces/etraces);
- no spaces are allowed around numbers or commas, leading zeros are accepted
  (``007`` is 7), numbers have at most 9 digits;
- a generalized set's members may come in any order ("2 1" is the set {1, 2});
  a set with one member is that region; a set may not repeat a region;
- pubtraces pseudonyms must be m+1..2m (SPEC 6), ptable user ids a
  permutation of 1..m;
- in a zip, ``__MACOSX/`` resource entries and folders are ignored.
"""
from __future__ import annotations

import gzip
import io
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .errors import IssueCollector, ValidationError, issue, show_bytes, show_value
from .traces import AnonymizedTraces, SetTable, Traces

#: Default limit on a file's uncompressed size, in bytes (SPEC 5).
DEFAULT_MAX_BYTES = 200 * 1024 * 1024

TRACES_HEADER = "user_id,time_id,reg_id"
ANOTRACES_HEADER = "reg_id"
PUBTRACES_HEADER = "pse_id,time_id,reg_id"
PTABLE_HEADER = "pse_id,user_id"
ETABLE_HEADER = "user_id"
ETRACES_HEADER = "reg_id"

#: Most rows a file may have (about 3x a 2019 final-round original + reference
#: file): bounds memory and time on a file of millions of empty lines.
MAX_ROWS = 5_000_000

_CHUNK = 1 << 20
_MAX_DIGITS = 9
_BOM = b"\xef\xbb\xbf"

# Byte classes for the fast paths.
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0"):ord("9") + 1] = True
_NUMERIC_OK = _DIGIT.copy()
_NUMERIC_OK[[ord(","), ord("\n")]] = True
# One-column files (etable, etraces): a comma is not a separator there, so it
# must not pass the byte check (it would be parsed as a digit).
_NUMERIC_1COL_OK = _DIGIT.copy()
_NUMERIC_1COL_OK[ord("\n")] = True


# =============================================================================
# Raw bytes: paths, file objects, gzip, zip, size limit
# =============================================================================

def _too_big(max_bytes: int) -> ValidationError:
    return ValidationError.of("file_too_large", limit=f"{max_bytes:,}")


def _read_limited(fileobj, max_bytes: int) -> bytes:
    """Read at most ``max_bytes`` from a binary stream, refusing anything longer."""
    parts, total = [], 0
    while True:
        chunk = fileobj.read(_CHUNK)
        if not chunk:
            break
        if isinstance(chunk, str):
            raise TypeError("a file object source must be opened in binary mode")
        total += len(chunk)
        if total > max_bytes:
            raise _too_big(max_bytes)
        parts.append(chunk)
    return b"".join(parts)


def _gunzip(raw: bytes, max_bytes: int) -> bytes:
    """Decompress (possibly multi-member) gzip data, stopping past ``max_bytes``."""
    parts, total = [], 0
    data = raw
    try:
        while data:
            d = zlib.decompressobj(wbits=31)
            while True:
                chunk = d.decompress(data, _CHUNK)
                data = d.unconsumed_tail
                total += len(chunk)
                if total > max_bytes:
                    raise _too_big(max_bytes)
                parts.append(chunk)
                if d.eof:
                    data = d.unused_data
                    break
                if not data and not chunk:
                    raise ValidationError.of("gz_truncated")
            if data and not data.strip(b"\x00"):
                break  # zero padding after the last member
            if data and data[:2] != b"\x1f\x8b":
                raise ValidationError.of("gz_trailing")
    except zlib.error as exc:
        raise ValidationError.of("gz_broken", detail=str(exc)) from None
    return b"".join(parts)


def _unzip(raw: bytes, max_bytes: int) -> bytes:
    """The single file of a zip archive, streamed with the size limit."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise ValidationError.of("zip_broken", detail=str(exc)) from None
    with zf:
        files = [i for i in zf.infolist()
                 if not i.is_dir() and not i.filename.startswith("__MACOSX/")]
        if len(files) != 1:
            names = ", ".join(show_value(i.filename) for i in files[:5]) + (", ..." if len(files) > 5 else "")
            if not files:
                raise ValidationError.of("zip_no_file")
            raise ValidationError.of("zip_members", count=len(files), names=names)
        info = files[0]
        if info.file_size > max_bytes:
            raise _too_big(max_bytes)
        try:
            with zf.open(info) as f:
                return _read_limited(f, max_bytes)
        except ValidationError:
            raise
        except RuntimeError as exc:  # encrypted member
            raise ValidationError.of("zip_unreadable", name=show_value(info.filename), detail=str(exc)) from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, ValueError) as exc:
            raise ValidationError.of("zip_member_broken", name=show_value(info.filename), detail=str(exc)) from None


def read_source_bytes(source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The uncompressed bytes of ``source`` (path, bytes or binary file object).

    gzip and zip content is recognised by its magic bytes and decompressed
    with the ``max_bytes`` limit checked as the data streams out.

    Raises:
        ValidationError: too large, corrupt archive, or a zip not holding
            exactly one file.
        FileNotFoundError / OSError: a path that cannot be read.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        if len(raw) > max_bytes:
            raise _too_big(max_bytes)
    elif hasattr(source, "read"):
        raw = _read_limited(source, max_bytes)
    else:
        path = Path(os.fspath(source))
        if path.stat().st_size > max_bytes:
            raise _too_big(max_bytes)
        with open(path, "rb") as f:
            raw = _read_limited(f, max_bytes)
    if raw[:2] == b"\x1f\x8b":
        return _gunzip(raw, max_bytes)
    if raw[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return _unzip(raw, max_bytes)
    return raw


def _source_name(source) -> str | None:
    if isinstance(source, (str, os.PathLike)):
        return Path(os.fspath(source)).name
    return getattr(source, "name", None) if hasattr(source, "read") and isinstance(
        getattr(source, "name", None), str) else None


class _Body:
    """The rows of a file after its header, as offsets into the file's bytes (no copy).

    Attributes:
        data: the whole file (BOM removed, CRLF turned into LF).
        start, end: the rows' byte range, without the file's final line terminator.
        n: number of rows (``\\n``-separated lines in the range; 0 if empty).
    """

    __slots__ = ("data", "start", "end", "n")

    def __init__(self, data: bytes, start: int, end: int):
        self.data, self.start, self.end = data, start, end
        self.n = 0 if end <= start else data.count(b"\n", start, end) + 1

    def array(self) -> np.ndarray:
        """(end - start,) uint8 view of the rows' bytes."""
        if self.n == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.frombuffer(self.data, dtype=np.uint8, count=self.end - self.start, offset=self.start)

    def lines(self) -> list:
        """The n rows as a list of bytes (one C-level split of the file)."""
        if self.n == 0:
            return []
        lines = self.data.split(b"\n")
        if self.end < len(self.data):
            lines.pop()                       # after the final terminator
        del lines[0]                          # the header
        return lines


def _is_binary(data: bytes) -> bool:
    """True when the start of a file is not text: a NUL byte, or bytes that are not UTF-8.

    Contest files are ASCII CSV; this only decides which message a wrong
    header gets ("not a text/CSV file" rather than a garbled header).
    """
    head = data[:1024]
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # a multi-byte character cut at 1024 bytes is still text
    return False


def _split_header(data: bytes, header: str) -> _Body:
    """Check the header line and return the rows after it.

    The rows end before the file's final line terminator (exactly one is
    allowed); CRLF is read as LF and a UTF-8 BOM is skipped.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    if not data or (len(data) < 4096 and not data.strip()):
        raise ValidationError.of("empty_file", line=1, header=header)
    cut = data.find(b"\n")
    first = data if cut < 0 else data[:cut]
    if first != header.encode():
        if _is_binary(data):
            # said once, with the first bytes as ASCII escapes: no replacement glyphs, no second escaping
            raise ValidationError.of("not_text", line=1, value=show_bytes(first), header=header)
        raise ValidationError.of("bad_header", line=1, header=header, found=show_value(first))
    if cut < 0:
        return _Body(data, len(data), len(data))
    end = len(data) - 1 if data.endswith(b"\n") and len(data) > cut + 1 else len(data)
    body = _Body(data, cut + 1, end)
    if body.n > MAX_ROWS:
        raise ValidationError.of("too_many_rows", value=str(body.n), count=f"{body.n:,}", limit=f"{MAX_ROWS:,}")
    return body


def _open_text(source, header: str, max_bytes: int) -> _Body:
    try:
        return _split_header(read_source_bytes(source, max_bytes=max_bytes), header)
    except ValidationError as exc:
        exc.source = exc.source or _source_name(source)
        raise


# =============================================================================
# Vectorised number parsing
# =============================================================================

def _parse_digit_fields(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray,
                        check: bool = False) -> np.ndarray | None:
    """Integers of the fields ``buf[starts[i]:starts[i]+lens[i]]`` (1..9 digits each).

    One vectorised pass per digit position (at most 9), not per field. With
    ``check``, returns None if any byte of a field is not a digit.
    """
    vals = np.zeros(len(starts), dtype=np.int64)
    if len(starts) == 0:
        return vals
    for k in range(int(lens.max())):
        sel = lens > k
        if sel.all():
            digit = buf[starts + k].astype(np.int64) - 48
            if check and (digit.min() < 0 or digit.max() > 9):
                return None
            vals = vals * 10 + digit
        else:
            idx = np.flatnonzero(sel)
            digit = buf[starts[idx] + k].astype(np.int64) - 48
            if check and len(digit) and (digit.min() < 0 or digit.max() > 9):
                return None
            vals[idx] = vals[idx] * 10 + digit
    return vals


def _fast_numeric(buf: np.ndarray, n_rows: int, ncols: int) -> np.ndarray | None:
    """(n_rows, ncols) int64 table of an all-numeric body ``buf`` (uint8), or None if anything is off.

    Accepts only digits, commas and newlines, exactly ``ncols - 1`` commas per
    line and 1..9 digits per field; the slow path explains whatever fails here.
    """
    if n_rows == 0:
        return np.zeros((0, ncols), dtype=np.int64)
    if not (_NUMERIC_OK if ncols > 1 else _NUMERIC_1COL_OK)[buf].all():
        return None
    is_sep = buf == ord("\n")
    if ncols > 1:
        is_sep |= buf == ord(",")
    seps = np.flatnonzero(is_sep)
    if len(seps) + 1 != n_rows * ncols:
        return None
    if ncols > 1:
        pattern = np.tile(np.array([ord(",")] * (ncols - 1) + [ord("\n")], dtype=np.uint8), n_rows)[:-1]
        if not np.array_equal(buf[seps], pattern):
            return None
    starts = np.empty(len(seps) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = seps + 1
    ends = np.empty_like(starts)
    ends[:-1] = seps
    ends[-1] = len(buf)
    lens = ends - starts
    if lens.min() < 1 or lens.max() > _MAX_DIGITS:
        return None
    return _parse_digit_fields(buf, starts, lens).reshape(n_rows, ncols)


def _slow_numeric(lines: list, n_rows: int, columns: tuple[str, ...], issues: IssueCollector,
                  what: str, limits: dict | None = None) -> np.ndarray:
    """Line-by-line parse of a numeric body, recording every malformed field.

    ``limits`` maps a column to its upper bound so that a number too long
    for int64 is reported as out of that range. Returns the (n_rows, ncols)
    table with -1 where a field was bad.
    """
    limits = limits or {}
    ncols = len(columns)
    out = np.full((n_rows, ncols), -1, dtype=np.int64)
    if n_rows == 0:
        return out
    for i, line in enumerate(lines):
        lineno = i + 2
        fields = line.split(b",") if ncols > 1 else [line]
        if len(fields) != ncols:
            if not line:
                issues.put("empty_line", lineno, None, "", columns=what)
            else:
                issues.put("field_count", lineno, None, show_value(line), count=ncols, columns=",".join(columns),
                           found=len(fields), text=show_value(line))
            continue
        for j, (col, field) in enumerate(zip(columns, fields)):
            if not field:
                issues.put("empty_field", lineno, col, "")
            elif not (field.isdigit() and field.isascii()):
                issues.put("not_integer", lineno, col, show_value(field))
            elif len(field) > _MAX_DIGITS:
                if col in limits:
                    issues.put(_out_of_range_code(col), lineno, col, show_value(field), lo=1, hi=limits[col])
                else:
                    issues.put("number_too_large", lineno, col, show_value(field))
            else:
                out[i, j] = int(field)
    return out


def _read_numeric(body: _Body, columns: tuple[str, ...], issues: IssueCollector,
                  what: str, limits: dict | None = None) -> np.ndarray:
    table = _fast_numeric(body.array(), body.n, len(columns))
    if table is None:
        table = _slow_numeric(body.lines(), body.n, columns, issues, what, limits)
    return table


def _out_of_range_code(column: str) -> str:
    return "region_out_of_range" if column == "reg_id" else "out_of_range"


def _range_check(issues: IssueCollector, values: np.ndarray, lo: int, hi: int, column: str,
                 valid: np.ndarray | None = None) -> np.ndarray:
    """Flag values outside lo..hi; returns the bad mask. ``valid`` masks parse failures (-1)."""
    bad = (values < lo) | (values > hi)
    if valid is not None:
        bad &= valid
    idx = np.flatnonzero(bad)
    code = _out_of_range_code(column)
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


# =============================================================================
# Region cells: single id, space-separated set, '*'
# =============================================================================

def _parse_cell(text: bytes, M: int, allow_sets: bool):
    """One distinct cell text -> ('ok', tuple of 0-based members) or ('err', (code, params)).

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
        if len(p) > _MAX_DIGITS:
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


_CELL_OK = _DIGIT.copy()
_CELL_OK[[ord(" "), ord("\n")]] = True


def _fast_distinct(distinct: list, M: int, allow_sets: bool):
    """Vectorised parse of distinct cell texts, or None if any is not plainly valid.

    Plainly valid: ``*`` (when sets are allowed) or 1..9-digit region ids in
    1..M separated by single spaces, no region twice (a single id only when
    sets are not allowed). Sets are canonicalised by sorting their members,
    so "2 1" and "1 2" become one set.

    Returns:
        (key_set (n,) int64 set id per distinct text, sizes (g,) int64,
        members (sum sizes,) int32) for the g generalized sets in order of
        first appearance.
    """
    n = len(distinct)
    is_star = np.array(distinct, dtype=object) == b"*" if n else np.zeros(0, dtype=bool)
    if is_star.any() and not allow_sets:
        return None
    rest = np.flatnonzero(~is_star)
    key_set = np.full(n, M, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    if len(rest) == 0:
        return (key_set, *empty)
    blob = b"\n".join([distinct[i] for i in rest]) if len(rest) < n else b"\n".join(distinct)
    buf = np.frombuffer(blob, dtype=np.uint8)
    if not _CELL_OK[buf].all():
        return None
    is_space = buf == ord(" ")
    if is_space.any() and not allow_sets:
        return None
    seps = np.flatnonzero(is_space | (buf == ord("\n")))
    starts = np.r_[0, seps + 1]
    lens = np.r_[seps, len(buf)] - starts
    if lens.min() < 1 or lens.max() > _MAX_DIGITS:
        return None
    vals = _parse_digit_fields(buf, starts, lens)
    if vals.min() < 1 or vals.max() > M:
        return None
    line = np.r_[0, np.cumsum(buf[seps] == ord("\n"))]       # which text each token is in
    order = np.lexsort((vals, line))
    vals, line = vals[order], line[order]
    if np.any((vals[1:] == vals[:-1]) & (line[1:] == line[:-1])):
        return None                                             # a region twice in one set
    sizes = np.bincount(line, minlength=len(rest))
    first = np.r_[0, np.cumsum(sizes)[:-1]]
    single = sizes == 1
    key_set[rest[single]] = vals[first[single]] - 1
    multi = np.flatnonzero(~single)
    if len(multi) == 0:
        return (key_set, *empty)
    # Canonical key of each set: its sorted members as raw bytes; dedupe by dict (C speed).
    code_dtype = np.int16 if M < 2 ** 15 else np.int32
    raw = (vals - 1).astype(code_dtype).tobytes()
    w = np.dtype(code_dtype).itemsize
    a, b = first[multi] * w, (first[multi] + sizes[multi]) * w
    keys = [raw[x:y] for x, y in zip(a.tolist(), b.tolist())]
    canon = list(dict.fromkeys(keys))
    index = dict(zip(canon, range(len(canon))))
    key_set[rest[multi]] = M + 1 + np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys))
    members = np.frombuffer(b"".join(canon), dtype=code_dtype).astype(np.int32)
    gsizes = np.fromiter(map(len, canon), dtype=np.int64, count=len(canon)) // w
    return key_set, gsizes, members


def _cell_issue(line: int, column: str, shown: str, code: str, params: dict):
    # region_out_of_range names the bad member of a set as its value; other cell issues the whole cell
    params = dict(params)
    return issue(code, line, column, params.pop("value", shown), **params)


def _intern_cells(cells: list, M: int, issues: IssueCollector, *, allow_sets: bool,
                  column: str = "reg_id", first_line: int = 2):
    """Map each cell text to a set id, parsing each distinct text once.

    Args:
        cells: list of n cell texts (bytes), in row order.
    Returns:
        (events (n,) int32 set ids, SetTable). Rows with a bad cell get set
        id M (deletion) and an issue.
    """
    distinct = list(dict.fromkeys(cells))        # first-appearance order, C-speed
    lookup = dict(zip(distinct, range(len(distinct))))
    codes = np.fromiter(map(lookup.__getitem__, cells), dtype=np.int64, count=len(cells))
    del lookup
    fast = _fast_distinct(distinct, M, allow_sets)
    if fast is not None:
        key_set, sizes, members = fast
        return key_set[codes].astype(np.int32), SetTable.from_members(M, sizes, members)
    key_set = np.empty(len(distinct), dtype=np.int64)
    key_error: dict[int, tuple] = {}
    generalized: dict[tuple, int] = {}           # canonical member tuple -> set id
    for k, text in enumerate(distinct):
        status, payload = _parse_cell(text, M, allow_sets)
        if status == "err":
            key_error[k] = payload
            key_set[k] = M
        elif len(payload) == 0:
            key_set[k] = M
        elif len(payload) == 1:
            key_set[k] = payload[0]
        else:
            key_set[k] = generalized.setdefault(payload, M + 1 + len(generalized))
    if key_error:
        bad_key = np.zeros(len(distinct), dtype=bool)
        bad_key[list(key_error)] = True
        bad_rows = np.flatnonzero(bad_key[codes])
        issues.add_counted(len(bad_rows), (
            _cell_issue(i + first_line, column, show_value(cells[i]), *key_error[int(codes[i])])
            for i in bad_rows[:20]))
    # the canonical tuples are sorted and in set id order
    return key_set[codes].astype(np.int32), SetTable.from_sets(M, list(generalized))


# =============================================================================
# Row structure: (id, time_id) sorted and complete
# =============================================================================

def _expected_ids(issues: IssueCollector, values: np.ndarray, expected: np.ndarray, column: str) -> None:
    """Flag every row whose ``column`` value is not one of ``expected`` (ascending)."""
    idx = np.flatnonzero(~np.isin(values, expected))
    described = _describe_ids(expected)
    issues.add_counted(len(idx), (issue("unexpected_id", i + 2, column, values[i], expected=described)
                                  for i in idx[:20]))


def _check_rows(issues: IssueCollector, u: np.ndarray, t: np.ndarray, *, ucol: str,
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
    n = len(u)
    tcol = "time_id"
    if users is not None:
        users = np.asarray(users, dtype=np.int64)
        _expected_ids(issues, u, users, ucol)
    else:
        _at_least_one(issues, u, ucol)
    if time_ids is not None:
        time_ids = np.asarray(time_ids, dtype=np.int64)
        _expected_ids(issues, t, time_ids, tcol)
    else:
        _at_least_one(issues, t, tcol)
    if users is not None and time_ids is not None and n != len(users) * len(time_ids):
        issues.put("row_count_grid", None, None, str(n), expected=len(users) * len(time_ids), found=n,
                   users=len(users), idcol=ucol, times=len(time_ids))
    if issues or n == 0:
        if n == 0 and not issues:
            issues.put("no_rows", value="0")
        return None

    # Sorted by (id, time_id) with no repeated pair.
    du = np.diff(u)
    dt = np.diff(t)
    dup = (du == 0) & (dt == 0)
    back = (du < 0) | ((du == 0) & (dt < 0))
    idx = np.flatnonzero(dup | back)
    if len(idx):
        issues.add_counted(len(idx), (
            issue("row_repeat", i + 3, None, f"{u[i + 1]},{t[i + 1]}", idcol=ucol, id=u[i + 1], time=t[i + 1],
                  other=i + 2) if dup[i] else
            issue("row_order", i + 3, None, f"{u[i + 1]},{t[i + 1]}", idcol=ucol, id=u[i + 1], time=t[i + 1],
                  prev_id=u[i], prev_time=t[i])
            for i in idx[:20]))
        return None

    first = np.r_[True, du != 0]
    ids = u[first]
    if users is None:
        m = len(ids)
        lo = m + 1 if pseudonyms else 1
        expect = np.arange(lo, lo + m, dtype=np.int64)
        if not np.array_equal(ids, expect):
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
    else:
        ids = users
    if time_ids is None:
        tv, tc = np.unique(t, return_counts=True)
        keep = tc * 2 >= len(ids)   # held by at least half the ids: a typo'd time id is not
        time_ids = tv[keep] if keep.any() else tv
        stray = ~np.isin(t, time_ids)
        idx = np.flatnonzero(stray)
        described = _describe_ids(time_ids)
        issues.add_counted(len(idx), (issue("stray_time", i + 2, tcol, t[i], idcol=ucol, expected=described)
                                      for i in idx[:20]))
        if len(idx):
            return None
    m, L = len(ids), len(time_ids)
    if n != m * L:
        present = np.zeros((m, L), dtype=bool)
        present[np.searchsorted(ids, u), np.searchsorted(time_ids, t)] = True
        miss_u, miss_t = np.nonzero(~present)
        issues.add_counted(len(miss_u), (
            issue("missing_time", None, tcol, time_ids[b], idcol=ucol, id=ids[a])
            for a, b in zip(miss_u[:20], miss_t[:20])))
        return None
    return ids, time_ids


def _finish(issues: IssueCollector, source) -> None:
    if issues:
        issues.sort()
        issues.raise_if_any(source=_source_name(source))


# =============================================================================
# Readers
# =============================================================================

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
    body = _open_text(source, TRACES_HEADER, max_bytes)
    issues = IssueCollector()
    cols = ("user_id", "time_id", "reg_id")
    table = _read_numeric(body, cols, issues, "user_id,time_id,reg_id", {"reg_id": grid.M})
    valid = table >= 0
    _range_check(issues, table[:, 2], 1, grid.M, "reg_id", valid=valid[:, 2])
    if issues:
        _finish(issues, source)
    shape = _check_rows(issues, table[:, 0], table[:, 1], ucol="user_id", users=users, time_ids=time_ids)
    _finish(issues, source)
    ids, tids = shape
    regions = (table[:, 2] - 1).astype(np.int32).reshape(len(ids), len(tids))
    return Traces(ids.astype(np.int64), tids.astype(np.int64), regions)


def _row_count_issue(issues: IssueCollector, n: int, expected: int) -> None:
    if n != expected:
        issues.put("row_count_traces", None, None, str(n), expected=expected, found=n)


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
    body = _open_text(source, ANOTRACES_HEADER, max_bytes)
    issues = IssueCollector()
    _row_count_issue(issues, body.n, truth.m * truth.L)
    cells = body.lines()
    events, sets = _intern_cells(cells, grid.M, issues, allow_sets=True)
    _finish(issues, source)
    return AnonymizedTraces(truth.user_ids, truth.time_ids, events.reshape(truth.m, truth.L), sets)


def read_etraces(source, grid, truth: Traces, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Traces:
    """Read an attacker's inferred traces (``reg_id``, one single region id per row of ``truth``).

    Returns:
        :class:`Traces` with ``truth``'s user ids and time ids.
    Raises:
        ValidationError: wrong header or row count; a cell that is not one
            region id in 1..M (a set or ``*`` included).
    """
    body = _open_text(source, ETRACES_HEADER, max_bytes)
    issues = IssueCollector()
    _row_count_issue(issues, body.n, truth.m * truth.L)
    table = _fast_numeric(body.array(), body.n, 1)
    if table is None:
        cells = body.lines()
        events, _ = _intern_cells(cells, grid.M, issues, allow_sets=False)
        regions = events
    else:
        _range_check(issues, table[:, 0], 1, grid.M, "reg_id")
        regions = table[:, 0] - 1
    _finish(issues, source)
    return Traces(truth.user_ids, truth.time_ids, regions.astype(np.int32).reshape(truth.m, truth.L))


def read_pubtraces(source, grid, *, max_bytes: int = DEFAULT_MAX_BYTES) -> AnonymizedTraces:
    """Read published pseudonymized traces (``pse_id,time_id,reg_id``).

    Rules: sorted by (pse_id, time_id); pseudonyms m+1..2m; every pseudonym
    has a row at every time id; cells as in anotraces.

    Returns:
        :class:`AnonymizedTraces` whose ``user_ids`` are the pseudonyms.
    """
    body = _open_text(source, PUBTRACES_HEADER, max_bytes)
    n = body.n
    issues = IssueCollector()
    if n == 0:
        issues.put("no_rows", value="0")
        _finish(issues, source)
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
        _finish(issues, source)
        pse_col, time_col, cells = zip(*parts)
        del parts, lines
        ids = _numeric_column(pse_col, "pse_id", issues)
        tids = _numeric_column(time_col, "time_id", issues)
    events, sets = _intern_cells(list(cells), grid.M, issues, allow_sets=True)
    if issues:
        _finish(issues, source)
    shape = _check_rows(issues, ids, tids, ucol="pse_id", users=None, time_ids=None, pseudonyms=True)
    _finish(issues, source)
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
    if lens.min() < 1 or lens.max() > _MAX_DIGITS:
        return None
    values = _parse_digit_fields(buf, starts, lens, check=True)
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
    table = _fast_numeric(np.frombuffer(b"\n".join(fields), dtype=np.uint8), n, 1)
    if table is not None:
        return table[:, 0]
    return _slow_numeric(list(fields), n, (column,), issues, column)[:, 0]


def read_ptable(source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """Read the secret ID table (``pse_id,user_id``).

    Rules: m rows sorted by pse_id; pseudonyms exactly m+1..2m; user ids a
    permutation of 1..m.

    Returns:
        (pse_ids (m,) int64, user_ids (m,) int64).
    """
    body = _open_text(source, PTABLE_HEADER, max_bytes)
    n = body.n
    issues = IssueCollector()
    table = _read_numeric(body, ("pse_id", "user_id"), issues, "pse_id,user_id", {"user_id": n})
    if n == 0:
        issues.put("no_rows", value="0")
    _finish(issues, source)
    pse, usr = table[:, 0], table[:, 1]
    expect = np.arange(n + 1, 2 * n + 1)
    bad = np.flatnonzero(pse != expect)
    issues.add_counted(len(bad), (
        issue("ptable_pseudonym", i + 2, "pse_id", pse[i], expected=expect[i], found=pse[i], lo=n + 1, hi=2 * n)
        for i in bad[:20]))
    _range_check(issues, usr, 1, n, "user_id")
    ok = (usr >= 1) & (usr <= n)
    order = np.argsort(usr, kind="stable")
    su = usr[order]
    rep = np.flatnonzero((su[1:] == su[:-1]) & ok[order][1:])
    issues.add_counted(len(rep), (
        issue("ptable_repeat", order[k + 1] + 2, "user_id", su[k + 1], other=order[k] + 2, m=n) for k in rep[:20]))
    _finish(issues, source)
    return pse.astype(np.int64), usr.astype(np.int64)


def read_etable(source, n_pseudonyms: int, m: int, *, max_bytes: int = DEFAULT_MAX_BYTES) -> np.ndarray:
    """Read an attacker's inferred ID table (``user_id``, one row per pseudonym in ascending order).

    Several pseudonyms may be given the same user id (the paper allows it).

    Returns:
        (n_pseudonyms,) int64 estimated user ids.
    Raises:
        ValidationError: wrong header or row count, an id outside 1..m.
    """
    body = _open_text(source, ETABLE_HEADER, max_bytes)
    n = body.n
    issues = IssueCollector()
    if n != n_pseudonyms:
        issues.put("row_count_etable", None, None, str(n), expected=n_pseudonyms, found=n)
    table = _read_numeric(body, ("user_id",), issues, "user_id", {"user_id": m})
    _range_check(issues, table[:, 0], 1, m, "user_id", valid=table[:, 0] >= 0)
    _finish(issues, source)
    return table[:, 0].astype(np.int64)


# =============================================================================
# Writers
# =============================================================================

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
