"""Reading and writing every rules §5 file: sources, compression, interning, exact messages."""
from __future__ import annotations

import gzip
import io
import zipfile

import numpy as np
import pytest

from scoring import io as sio
from scoring.errors import MAX_ISSUES, ValidationError
from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, SetTable, Traces

GRID = Grid()


def small_truth(m=3, L=4, first_time=5, seed=0) -> Traces:
    rng = np.random.default_rng(seed)
    return Traces(np.arange(1, m + 1), np.arange(first_time, first_time + L),
                  rng.integers(0, GRID.M, (m, L)).astype(np.int32))


def traces_bytes(t: Traces) -> bytes:
    return sio.to_bytes(sio.write_traces, t)


def cells(anon: AnonymizedTraces) -> np.ndarray:
    """Each event as its cell text: compares anonymized traces whatever their set numbering."""
    return np.array(sio.set_texts(anon.sets), dtype=object)[anon.events]


def raises(fn, *args, **kw) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        fn(*args, **kw)
    return info.value


# ----------------------------------------------------------------------------- sources

def test_every_source_kind_and_encoding_reads_the_same(tmp_path):
    t = small_truth()
    data = traces_bytes(t)
    (tmp_path / "a.csv").write_bytes(data)
    (tmp_path / "a.csv.gz").write_bytes(gzip.compress(data))
    with zipfile.ZipFile(tmp_path / "a.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("orgtraces.csv", data)
        zf.writestr("__MACOSX/._orgtraces.csv", b"\x00\x05junk")
    variants = [data, bytearray(data), io.BytesIO(data), str(tmp_path / "a.csv"), tmp_path / "a.csv",
                tmp_path / "a.csv.gz", tmp_path / "a.zip", gzip.compress(data),
                data.replace(b"\n", b"\r\n"), b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"),
                data.rstrip(b"\n"), gzip.compress(data[:30]) + gzip.compress(data[30:])]
    for v in variants:
        got = sio.read_traces(v, GRID)
        assert np.array_equal(got.regions, t.regions)
        assert np.array_equal(got.user_ids, t.user_ids) and np.array_equal(got.time_ids, t.time_ids)


def test_size_limit_is_enforced_while_decompressing():
    data = b"user_id\n" + b"1\n" * 600_000          # 1.2 MB uncompressed, a few kB compressed
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb.csv", data)
    for blob in (gzip.compress(data), z.getvalue(), data):
        e = raises(sio.read_etable, blob, 600_000, 2, max_bytes=1_000_000)
        assert "larger than the limit of 1,000,000 bytes" in str(e)
    assert len(sio.read_etable(gzip.compress(data), 600_000, 2, max_bytes=2_000_000)) == 600_000


def test_row_limit(monkeypatch):
    monkeypatch.setattr(sio.text, "MAX_ROWS", 10)  # where the row limit is checked
    e = raises(sio.read_anotraces, b"reg_id\n" + b"\n" * 11, GRID, small_truth())
    assert str(e) == "the file has 11 rows after the header, more than the limit of 10"


def test_zip_must_hold_exactly_one_file():
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("a.csv", "user_id\n1\n")
        zf.writestr("b.csv", "user_id\n1\n")
    e = raises(sio.read_etable, z.getvalue(), 1, 1)
    assert str(e) == "a .zip upload must hold exactly one CSV file, found 2: a.csv, b.csv"
    empty = io.BytesIO()
    zipfile.ZipFile(empty, "w").close()
    assert "found 0" in str(raises(sio.read_etable, empty.getvalue(), 1, 1))


def test_corrupt_archives_are_validation_errors():
    good = gzip.compress(b"user_id\n1\n")
    assert "truncated" in str(raises(sio.read_etable, good[:-12], 1, 1))
    assert "gzip" in str(raises(sio.read_etable, good[:10] + b"\xff" * 30, 1, 1))
    assert "zip" in str(raises(sio.read_etable, b"PK\x03\x04" + b"\x00" * 40, 1, 1))


# ----------------------------------------------------------------------------- round trips

def test_traces_round_trip_and_exact_text(tmp_path):
    t = small_truth(m=2, L=3, first_time=41)
    text = traces_bytes(t).decode()
    lines = text.splitlines()
    assert lines[0] == "user_id,time_id,reg_id" and lines[1] == f"1,41,{t.regions[0, 0] + 1}"
    assert len(lines) == 7 and text.endswith("\n")
    sio.write_traces(t, tmp_path / "t.csv.gz")                 # .gz by suffix
    assert np.array_equal(sio.read_traces(tmp_path / "t.csv.gz", GRID).regions, t.regions)
    buf = io.StringIO()
    sio.write_traces(t, buf)                                   # text file object
    assert buf.getvalue() == text


def test_anotraces_round_trip_with_sets_and_deletions():
    t = small_truth(m=2, L=3)
    sets = SetTable.from_sets(GRID.M, [[0, 1, 32, 33], [5, 900]])
    events = np.array([[3, 1024, 1025], [1026, 1025, 0]], dtype=np.int32)
    anon = AnonymizedTraces(t.user_ids, t.time_ids, events, sets)
    data = sio.to_bytes(sio.write_anotraces, anon)
    assert data == b"reg_id\n4\n*\n1 2 33 34\n6 901\n1 2 33 34\n1\n"
    back = sio.read_anotraces(data, GRID, t)
    assert np.array_equal(cells(back), cells(anon))
    assert back.sets.n_sets == GRID.M + 1 + 2                   # each distinct set stored once


def test_sets_are_interned_whatever_the_member_order():
    t = small_truth(m=1, L=4)
    back = sio.read_anotraces(b"reg_id\n2 1\n1 2\n34 1 2\n2 34 1\n", GRID, t)
    ev = back.events.ravel()
    assert ev[0] == ev[1] and ev[2] == ev[3] and ev[0] != ev[2]
    assert back.sets.n_sets == GRID.M + 3
    assert list(back.sets.set_members(int(ev[0]))) == [0, 1]
    assert list(back.sets.set_members(int(ev[2]))) == [0, 1, 33]
    one = sio.read_anotraces(b"reg_id\n7\n*\n7\n*\n", GRID, t)
    assert list(one.events.ravel()) == [6, GRID.M, 6, GRID.M]   # singleton = region index, '*' = M


def test_distinct_sets_naming_more_region_ids_than_the_judge_scores_are_refused_before_parsing(monkeypatch):
    """The bound on a worker's memory (issue 25): the region ids the distinct cells name in all, each
    distinct cell counted once however often it repeats, are counted before anything is parsed."""
    from scoring.io import formats

    t = small_truth(m=2, L=4)
    rows = [b"1 2 3", b"4 5 6", b"1 2 3", b"7 8", b"*", b"9", b"1 2 3", b"4 5 6"]   # distinct: 3+3+2+1+1 = 10
    data = b"reg_id\n" + b"\n".join(rows) + b"\n"
    monkeypatch.setattr(formats, "MAX_SET_MEMBERS", 10)
    assert sio.read_anotraces(data, GRID, t).sets.n_sets == GRID.M + 1 + 3       # at the bound: read
    monkeypatch.setattr(formats, "MAX_SET_MEMBERS", 9)
    e = raises(sio.read_anotraces, data, GRID, t)
    assert [i.code for i in e.issues] == ["set_members_too_many"]
    assert "10 region ids" in str(e) and "at most 9" in str(e)
    # a repeated set is counted once: the same rows with every cell alike are far below
    monkeypatch.setattr(formats, "MAX_SET_MEMBERS", 3)
    assert sio.read_anotraces(b"reg_id\n" + b"1 2 3\n" * 8, GRID, t).events.size == 8


def test_pubtraces_ptable_etable_etraces_round_trip():
    t = small_truth(m=3, L=2)
    sets = SetTable.from_sets(GRID.M, [[10, 11]])
    pub = AnonymizedTraces(np.array([4, 5, 6]), t.time_ids,
                           np.array([[1025, 3], [1024, 7], [9, 1025]], dtype=np.int32), sets)
    data = sio.to_bytes(sio.write_pubtraces, pub)
    assert data.startswith(b"pse_id,time_id,reg_id\n4,5,11 12\n4,6,4\n5,5,*\n")
    back = sio.read_pubtraces(data, GRID)
    assert np.array_equal(back.user_ids, [4, 5, 6]) and np.array_equal(back.time_ids, t.time_ids)
    assert np.array_equal(cells(back), cells(pub))

    data = sio.to_bytes(sio.write_ptable, [4, 5, 6], [2, 3, 1])
    assert data == b"pse_id,user_id\n4,2\n5,3\n6,1\n"
    pse, usr = sio.read_ptable(data)
    assert list(pse) == [4, 5, 6] and list(usr) == [2, 3, 1]

    data = sio.to_bytes(sio.write_etable, [2, 2, 1])
    assert data == b"user_id\n2\n2\n1\n"
    assert list(sio.read_etable(data, 3, 3)) == [2, 2, 1]       # repeats are allowed

    data = sio.to_bytes(sio.write_etraces, t)
    back = sio.read_etraces(data, GRID, t)
    assert np.array_equal(back.regions, t.regions) and np.array_equal(back.user_ids, t.user_ids)


def test_shared_files_read_and_write_back_byte_for_byte(pwscup2019):
    grid = Grid.from_info_region(pwscup2019 / "osaka" / "info_region.csv")
    org = pwscup2019 / "osaka" / "orgtraces_team001_data01_IDP.csv"
    truth = sio.read_traces(org, grid)
    assert truth.regions.shape == (2000, 40) and truth.time_ids[0] == 41
    assert sio.to_bytes(sio.write_traces, truth) == org.read_bytes()
    ref = sio.read_traces(pwscup2019 / "osaka" / "reftraces_team001_data01_IDP.csv", grid,
                          users=np.arange(1, 2001), time_ids=np.arange(1, 41))
    assert ref.regions.shape == (2000, 40)
    pub_path = pwscup2019 / "conformance" / "attacks" / "pubtraces_team001_data01_IDP.csv"
    pub = sio.read_pubtraces(pub_path, grid)
    assert pub.user_ids[0] == 2001 and pub.user_ids[-1] == 4000
    assert sio.to_bytes(sio.write_pubtraces, pub) == pub_path.read_bytes()
    anon_path = pwscup2019 / "conformance" / "anotraces" / "A2-1-1-0.5.csv"
    anon = sio.read_anotraces(anon_path, grid, truth)
    assert sio.to_bytes(sio.write_anotraces, anon) == anon_path.read_bytes()
    # pubtraces = the shuffled anotraces: pseudonym p carries the events of user ptable[p].
    pse, usr = sio.read_ptable(pwscup2019 / "conformance" / "attacks" / "ptable_team001_data01_IDP.csv")
    assert np.array_equal(cells(pub), cells(anon)[usr - 1])


def test_big_gzipped_fixture_interns_its_blocks(pwscup2019):
    grid = Grid.from_info_region(pwscup2019 / "osaka" / "info_region.csv")
    truth = sio.read_traces(pwscup2019 / "osaka" / "orgtraces_team001_data01_IDP.csv", grid)
    anon = sio.read_anotraces(pwscup2019 / "conformance" / "anotraces" / "A2-4-4-0.csv.gz", grid, truth)
    gen = anon.sets.sizes[grid.M + 1:]
    assert len(gen) <= 4 and set(gen) == {256}                 # 16 x 16 blocks, stored once each
    assert np.all(anon.events > grid.M)


# ----------------------------------------------------------------------------- messages

def test_the_participant_messages_of_the_issue():
    t = small_truth(m=100, L=50)
    body = [b"1"] * 5000
    body[4010] = b"1025"                                         # line 4012
    e = raises(sio.read_anotraces, b"reg_id\n" + b"\n".join(body) + b"\n", GRID, t)
    assert str(e) == "line 4012: region id 1025 is outside 1..1024"
    assert (e.issues[0].line, e.issues[0].column, e.issues[0].value) == (4012, "reg_id", "1025")

    e = raises(sio.read_anotraces, b"region\n1\n", GRID, t)
    assert str(e) == "line 1: expected header 'reg_id', found 'region'"

    big = small_truth(m=2000, L=40)
    e = raises(sio.read_anotraces, b"reg_id\n" + b"1\n" * 79999, GRID, big)
    assert str(e).startswith("expected 80000 rows after the header, found 79999")

    body = [b"1"] * 5000
    body[5] = b"12 13 12"                                        # line 7
    e = raises(sio.read_anotraces, b"reg_id\n" + b"\n".join(body), GRID, t)
    assert str(e) == "line 7: region 12 appears twice in the set '12 13 12'"

    body = [b"1"] * 5000
    body[7] = b"3 4"                                             # line 9
    e = raises(sio.read_etraces, b"reg_id\n" + b"\n".join(body), GRID, t)
    assert str(e) == "line 9: an etraces cell must be a single region id, found '3 4'"


def test_traces_structure_messages():
    h = b"user_id,time_id,reg_id\n"
    e = raises(sio.read_traces, h + b"1,3,1\n1,4,1\n1,5,1\n2,3,1\n2,5,1\n", GRID)
    assert str(e) == "user_id 2 has no row for time_id 4 (every user_id needs a row at each time id)"
    e = raises(sio.read_traces, h + b"1,3,1\n1,4,1\n2,4,1\n2,3,1\n", GRID)
    assert str(e) == ("line 5: user_id 2, time_id 3 comes after user_id 2, time_id 4: "
                      "rows must be sorted by user_id, then time_id")
    e = raises(sio.read_traces, h + b"1,3,1\n1,3,1\n", GRID)
    assert str(e) == "line 3: user_id 1, time_id 3 appears twice (also on line 2)"
    e = raises(sio.read_traces, h + b"1,3,1\n3,3,1\n", GRID)
    assert str(e) == "user_ids must run 1..m without gaps: user_id 2 has no rows"
    e = raises(sio.read_traces, h + b"1,3,1\n2,3,1\n", GRID, time_ids=[3, 4])
    assert e.total == 2 and str(e.issues[1]) == ("user_id 2 has no row for time_id 4 "
                                                 "(every user_id needs a row at each time id)")
    e = raises(sio.read_traces, h + b"1,3,1\n2,3,1\n", GRID, users=[1, 2], time_ids=[3, 4])
    assert str(e.issues[0]) == "expected 4 rows after the header, found 2 (2 user_ids x 2 time ids)"
    e = raises(sio.read_traces, h + b"1,3,1\n2,3,1\n", GRID, users=[1, 2, 3], time_ids=[3])
    assert "expected 3 rows" in str(e)
    e = raises(sio.read_traces, h + b"1,3,1\n2,7,1\n", GRID, time_ids=[3])
    assert str(e) == "line 3: time_id 7 is not one of the expected values (3..3)"
    # A typo'd time id in a big file points at its own line, not at every other user.
    t = small_truth(m=50, L=4)
    rows = traces_bytes(t).split(b"\n")
    rows[12] = b"3,9999,1"                     # line 13: user 3's last row, time 8 mistyped
    e = raises(sio.read_traces, b"\n".join(rows), GRID)
    assert str(e) == "line 13: time_id 9999 is not one of the time ids the other user_ids have (5..8)"


def test_ptable_and_etable_messages():
    e = raises(sio.read_ptable, b"pse_id,user_id\n4,1\n5,1\n7,3\n")
    assert e.total == 2
    assert str(e.issues[0]) == ("line 3: user_id 1 appears twice (also on line 2); "
                                "the ID table must be a permutation of 1..3")
    assert str(e.issues[1]) == "line 4: expected pse_id 6, found 7 (pseudonyms run m+1..2m = 4..6 in ascending order)"
    e = raises(sio.read_etable, b"user_id\n1\n3\n", 2, 2)
    assert str(e) == "line 3: user_id 3 is outside 1..2"
    e = raises(sio.read_etable, b"user_id\n1\n", 2, 2)
    assert str(e).startswith("expected 2 rows after the header")


def test_at_most_twenty_issues_are_kept_but_all_are_counted():
    t = small_truth(m=10, L=10)
    e = raises(sio.read_anotraces, b"reg_id\n" + b"0\n" * 100, GRID, t)
    assert e.total == 100 and len(e.issues) == MAX_ISSUES
    assert [i.line for i in e.issues] == list(range(2, 22))
    assert str(e).splitlines()[0] == "100 problems found, the first 20:"
    assert str(e).splitlines()[-1] == "  ... and 80 more"
    assert e.to_dicts()[0] == {"line": 2, "column": "reg_id", "value": "0", "message": "region id 0 is outside 1..1024",
                               "code": "region_out_of_range", "params": {"lo": 1, "hi": 1024}}


def test_error_names_the_file(tmp_path):
    p = tmp_path / "anotraces_team001_data01_IDP.csv"
    p.write_bytes(b"regid\n1\n")
    e = raises(sio.read_anotraces, p, GRID, small_truth(m=1, L=1))
    assert str(e) == "anotraces_team001_data01_IDP.csv: line 1: expected header 'reg_id', found 'regid'"


def test_gzip_members_longer_than_a_read_slice_then_zero_padding():
    """Input fed in 1 MB slices: members that span slices, the boundary between them, and padding."""
    rng = np.random.default_rng(3)
    first = b"user_id\n" + "\n".join(map(str, rng.integers(1, 1025, 900_000))).encode() + b"\n"
    second = "\n".join(map(str, rng.integers(1, 1025, 700_000))).encode() + b"\n"
    blob = gzip.compress(first, 1) + gzip.compress(second, 1) + b"\0" * 3_000_000
    assert len(gzip.compress(first, 1)) > 1 << 20 and len(blob) > 4 * (1 << 20)
    assert len(sio.read_etable(blob, 1_600_000, 1024)) == 1_600_000
    assert sio.read_source_bytes(blob) == first + second
    sio.check_source(blob)                                 # the same archive, nothing kept
    for bad, code in ((blob[:1 << 20], "gz_truncated"), (blob + b"x", "gz_trailing"),
                      (gzip.compress(gzip.compress(first)), "nested_archive")):
        with pytest.raises(ValidationError) as err:
            sio.check_source(bad)
        assert err.value.issues[0].code == code
