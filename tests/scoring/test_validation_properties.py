"""Property tests: malformed files thrown at every reader get a precise ValidationError.

Each test starts from a valid small file of one kind (3 users x 4 time ids),
breaks it in one way drawn by hypothesis, and checks that the reader raises
:class:`ValidationError` (never another exception, never accepts), that the
error counts at least one problem, and, where the break is on one line, that
an issue names that line. A positive property checks that valid files of
random content are accepted and read back exactly, so the negative ones
cannot pass by rejecting everything.
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring import io as sio
from scoring.errors import ValidationError
from scoring.grid import Grid
from scoring.traces import Traces

GRID = Grid()
M = GRID.M
TRUTH = Traces(np.arange(1, 4), np.arange(5, 9), np.array(
    [[0, 1, 2, 3], [100, 101, 102, 103], [1023, 1022, 37, 5]], dtype=np.int32))
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Kind:
    name: str
    header: bytes
    rows: tuple                       # valid body rows, each a tuple of byte fields
    read: Callable
    region_col: int | None            # column holding a region cell (None: no region column)
    id_col: int | None                # a column where an out-of-range id is flagged on its own line
    id_bad: tuple                     # ids out of range for id_col
    sets_ok: bool = False


def _b(x) -> bytes:
    return str(x).encode()


_CELLS = (b"1", b"*", b"2 1 33", b"4", b"101", b"102 103", b"*", b"104", b"1024", b"1023 992", b"38", b"6")
KINDS = {
    "traces": Kind("traces", b"user_id,time_id,reg_id",
                   tuple((_b(u), _b(t), _b(TRUTH.regions[u - 1, t - 5] + 1)) for u in range(1, 4) for t in range(5, 9)),
                   lambda d: sio.read_traces(d, GRID), 2, 0, (0,)),
    "anotraces": Kind("anotraces", b"reg_id", tuple((c,) for c in _CELLS),
                      lambda d: sio.read_anotraces(d, GRID, TRUTH), 0, None, (), sets_ok=True),
    "pubtraces": Kind("pubtraces", b"pse_id,time_id,reg_id",
                      tuple((_b(p), _b(t), _CELLS[(p - 4) * 4 + t - 5]) for p in range(4, 7) for t in range(5, 9)),
                      lambda d: sio.read_pubtraces(d, GRID), 2, 0, (0,), sets_ok=True),
    "ptable": Kind("ptable", b"pse_id,user_id", ((b"4", b"2"), (b"5", b"3"), (b"6", b"1")),
                   lambda d: sio.read_ptable(d), None, 1, (0, 4, 99, 10 ** 12)),
    "etable": Kind("etable", b"user_id", ((b"2",), (b"2",), (b"1",)),
                   lambda d: sio.read_etable(d, 3, 3), None, 0, (0, 4, 99, 10 ** 12)),
    "etraces": Kind("etraces", b"reg_id", tuple((_b(r + 1),) for r in TRUTH.regions.ravel()),
                    lambda d: sio.read_etraces(d, GRID, TRUTH), 0, None, ()),
}
ALL = sorted(KINDS)


def render(kind: Kind, rows, header=None, crlf=False) -> bytes:
    lines = [kind.header if header is None else header] + [b",".join(r) for r in rows]
    return (b"\r\n" if crlf else b"\n").join(lines) + (b"\r\n" if crlf else b"\n")


def rejected(kind: Kind, data: bytes, line: int | None = None) -> ValidationError:
    """Assert ``data`` is rejected with a well-formed error; if ``line``, an issue names it."""
    try:
        kind.read(data)
    except ValidationError as e:
        assert e.total >= 1 and e.issues and str(e)
        n_lines = data.count(b"\n") + 1
        assert all(i.line is None or 1 <= i.line <= n_lines for i in e.issues)
        if line is not None:
            assert any(i.line == line for i in e.issues), (line, str(e))
        return e
    raise AssertionError(f"{kind.name}: accepted a malformed file {data[:200]!r}")


def _arrays(value) -> list:
    """The numpy arrays a reader returned, in a fixed order (a container's fields, or a tuple)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, tuple):
        return [a for v in value for a in _arrays(v)]
    if dataclasses.is_dataclass(value):
        return [a for f in dataclasses.fields(value) for a in _arrays(getattr(value, f.name))]
    return []


def test_the_valid_files_are_read_exactly():
    """Each valid file reads back its content; a BOM and CRLF line ends change nothing."""
    for kind in KINDS.values():
        plain = kind.read(render(kind, kind.rows))
        other = kind.read(b"\xef\xbb\xbf" + render(kind, kind.rows, crlf=True))
        assert all(np.array_equal(a, b) for a, b in zip(_arrays(plain), _arrays(other), strict=True)), kind.name
    assert np.array_equal(KINDS["traces"].read(render(KINDS["traces"], KINDS["traces"].rows)).regions, TRUTH.regions)
    assert np.array_equal(KINDS["etraces"].read(render(KINDS["etraces"], KINDS["etraces"].rows)).regions, TRUTH.regions)
    pse, users = KINDS["ptable"].read(render(KINDS["ptable"], KINDS["ptable"].rows))
    assert pse.tolist() == [4, 5, 6] and users.tolist() == [2, 3, 1]
    assert KINDS["etable"].read(render(KINDS["etable"], KINDS["etable"].rows)).tolist() == [2, 2, 1]
    anon = KINDS["anotraces"].read(render(KINDS["anotraces"], KINDS["anotraces"].rows))
    # the first user's cells: region 1, a deletion, the set {2, 1, 33}, region 4 (1-based in the file)
    e = anon.events[0]
    assert anon.events.shape == (3, 4) and e[0] == 0 and e[1] == anon.sets.DELETION and e[3] == 3
    s = anon.sets
    assert sorted(s.members[s.indptr[e[2]]:s.indptr[e[2] + 1]].tolist()) == [0, 1, 32]
    pub = KINDS["pubtraces"].read(render(KINDS["pubtraces"], KINDS["pubtraces"].rows))
    assert pub.user_ids.tolist() == [4, 5, 6] and pub.time_ids.tolist() == [5, 6, 7, 8]


# ----------------------------------------------------------------------------- header

@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(header=st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=40))
def test_wrong_header(name, header):
    kind = KINDS[name]
    h = header.encode()
    if h == kind.header:
        h += b"x"
    e = rejected(kind, render(kind, kind.rows, header=h), line=1)
    assert "expected header" in str(e) or "empty" in str(e) or "not a text/CSV file" in str(e)
    if "not a text/CSV file" in str(e):  # a NUL byte: said once, the bytes as ASCII escapes
        assert b"\x00" in h and e.issues[0].value.isascii() and e.issues[0].value not in e.issues[0].message


@pytest.mark.parametrize("name", ALL)
def test_missing_header(name):
    kind = KINDS[name]
    data = b"\n".join(b",".join(r) for r in kind.rows) + b"\n"
    assert "expected header" in str(rejected(kind, data, line=1))


# ----------------------------------------------------------------------------- rows

@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data())
def test_missing_row(name, data):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    rejected(kind, render(kind, kind.rows[:i] + kind.rows[i + 1:]))


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data())
def test_extra_row(name, data):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    j = data.draw(st.integers(0, len(kind.rows)))
    rows = list(kind.rows)
    rows.insert(j, kind.rows[i])
    rejected(kind, render(kind, rows))


@pytest.mark.parametrize("name", ALL)
def test_header_only_and_empty_file(name):
    kind = KINDS[name]
    rejected(kind, kind.header + b"\n")
    rejected(kind, b"", line=1)
    rejected(kind, b"\n\n", line=1)


# ----------------------------------------------------------------------------- fields

def _replace(kind: Kind, i: int, col: int, value: bytes) -> bytes:
    rows = list(kind.rows)
    row = list(rows[i])
    row[col] = value
    rows[i] = tuple(row)
    return render(kind, rows)


@pytest.mark.parametrize("name", [k for k in ALL if KINDS[k].region_col is not None])
@SETTINGS
@given(data=st.data())
def test_region_id_out_of_range(name, data):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    bad = data.draw(st.one_of(st.just(0), st.integers(M + 1, 10 ** 12)))
    e = rejected(kind, _replace(kind, i, kind.region_col, _b(bad)), line=i + 2)
    assert "outside 1..1024" in str(e)


@pytest.mark.parametrize("name", [k for k in ALL if KINDS[k].id_col is not None])
@SETTINGS
@given(data=st.data())
def test_user_or_pseudonym_id_out_of_range(name, data):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    bad = data.draw(st.sampled_from(kind.id_bad))
    rejected(kind, _replace(kind, i, kind.id_col, _b(bad)), line=i + 2)


_NOT_A_NUMBER = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
                        min_size=1, max_size=12).filter(lambda s: any(c not in "0123456789 *" for c in s))


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data(), junk=_NOT_A_NUMBER)
def test_non_integer_field(name, data, junk):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    col = data.draw(st.integers(0, len(kind.rows[0]) - 1))
    rejected(kind, _replace(kind, i, col, junk.encode()), line=i + 2)


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data())
def test_empty_cell(name, data):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    col = data.draw(st.integers(0, len(kind.rows[0]) - 1))
    e = rejected(kind, _replace(kind, i, col, b""), line=i + 2)
    assert "empty" in str(e)


@pytest.mark.parametrize("name", [k for k in ALL if KINDS[k].sets_ok])
@SETTINGS
@given(data=st.data())
def test_duplicate_region_inside_a_set(name, data):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    members = data.draw(st.lists(st.integers(1, M), min_size=1, max_size=6, unique=True))
    dup = data.draw(st.sampled_from(members))
    pos = data.draw(st.integers(0, len(members)))
    cell = members[:pos] + [dup] + members[pos:]
    text = " ".join(map(str, cell))
    e = rejected(kind, _replace(kind, i, kind.region_col, text.encode()), line=i + 2)
    assert f"region {dup} appears twice in the set" in str(e)


@SETTINGS
@given(data=st.data())
def test_a_set_or_deletion_in_an_etraces_file(data):
    kind = KINDS["etraces"]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    cell = data.draw(st.one_of(st.just("*"), st.lists(st.integers(1, M), min_size=2, max_size=5, unique=True)
                               .map(lambda xs: " ".join(map(str, xs)))))
    e = rejected(kind, _replace(kind, i, 0, cell.encode()), line=i + 2)
    assert f"line {i + 2}: an etraces cell must be a single region id, found {cell!r}" in str(e)


# ----------------------------------------------------------------------------- garbage

_GARBAGE = st.binary(min_size=1, max_size=64).filter(lambda b: any(c not in b"0123456789 *,\r\n" for c in b))


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data(), junk=_GARBAGE)
def test_binary_garbage_line(name, data, junk):
    kind = KINDS[name]
    i = data.draw(st.integers(0, len(kind.rows) - 1))
    rows = [b",".join(r) for r in kind.rows]
    rows[i] = junk
    rejected(kind, kind.header + b"\n" + b"\n".join(rows) + b"\n")


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(junk=st.binary(max_size=300))
def test_binary_garbage_file(name, junk):
    rejected(KINDS[name], junk)


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(junk=st.binary(max_size=200))
def test_garbage_inside_gzip_and_zip(name, junk):
    kind = KINDS[name]
    rejected(kind, gzip.compress(junk))
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x.csv", junk)
    rejected(kind, z.getvalue())


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("line", [b"1" * 10_000_000, b"1 2 " * 2_500_000, b"\xff" * 10_000_000])
def test_a_ten_megabyte_line(name, line):
    """Refused with a short message (the time it takes is a figure of ``make bench``)."""
    kind = KINDS[name]
    rows = [b",".join(r) for r in kind.rows]
    rows[1] = line
    e = rejected(kind, kind.header + b"\n" + b"\n".join(rows) + b"\n", line=3)
    assert len(str(e)) < 5000                                   # long values are cut in messages
    rejected(kind, line)                                        # the whole file one line, no header


@pytest.mark.parametrize("name", ALL)
def test_a_zip_with_two_files(name):
    kind = KINDS[name]
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("a.csv", render(kind, kind.rows))
        zf.writestr("b.csv", render(kind, kind.rows))
    e = rejected(kind, z.getvalue())
    assert "exactly one CSV file, found 2" in str(e)


# ----------------------------------------------------------------------------- positive property

@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_random_valid_files_round_trip(data):
    m = data.draw(st.integers(1, 6))
    L = data.draw(st.integers(1, 6))
    first = data.draw(st.integers(1, 50))
    regions = np.array(data.draw(st.lists(st.integers(0, M - 1), min_size=m * L, max_size=m * L)),
                       dtype=np.int32).reshape(m, L)
    truth = Traces(np.arange(1, m + 1), np.arange(first, first + L), regions)
    cells = data.draw(st.lists(st.one_of(st.just("*"), st.lists(st.integers(1, M), min_size=1, max_size=5,
                                                                unique=True).map(lambda xs: " ".join(map(str, xs)))),
                               min_size=m * L, max_size=m * L))
    crlf = data.draw(st.booleans())
    nl = "\r\n" if crlf else "\n"
    assert np.array_equal(sio.read_traces(sio.to_bytes(sio.write_traces, truth), GRID).regions, regions)
    anon = sio.read_anotraces(("reg_id" + nl + nl.join(cells) + nl).encode(), GRID, truth)
    texts = np.array(sio.set_texts(anon.sets), dtype=object)[anon.events].ravel()
    for text, cell in zip(texts, cells):
        assert text.decode() == (cell if cell == "*" else " ".join(sorted(cell.split(), key=int)))
    pub = sio.read_pubtraces(sio.to_bytes(sio.write_pubtraces, type(anon)(
        np.arange(m + 1, 2 * m + 1), anon.time_ids, anon.events, anon.sets)), GRID)
    assert np.array_equal(np.array(sio.set_texts(pub.sets), dtype=object)[pub.events].ravel(), texts)
