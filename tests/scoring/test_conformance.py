"""Conformance with the official 2019 programs (../shared/data/pwscup2019/conformance/expected.csv).

Every row is matched within 1e-9, through the library and through
``python -m scoring`` with ``--grid osaka/info_region.csv``; plus the
paper's Figure 6 example.
"""
from __future__ import annotations

import csv
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from scoring import io as sio
from scoring import scores
from scoring.grid import Grid

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "pwscup2019"
TOLERANCE = 1e-9


def _rows():
    path = DATA / "conformance" / "expected.csv"
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{path} not found"))]
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [pytest.param(r, id=f"{r['kind']}-{Path(r['submission']).name}-{r['convention'] or 'x'}") for r in rows]


@cache
def _grid(root: Path) -> Grid:
    return Grid.from_info_region(root / "osaka" / "info_region.csv")


@cache
def _truth(path: Path):
    return sio.read_traces(path, _grid(path.parents[1]))


def library_value(root: Path, row: dict) -> float:
    grid = _grid(root)
    if row["kind"] == "utility":
        truth = _truth(root / row["truth"])
        anon = sio.read_anotraces(root / row["submission"], grid, truth)
        return scores.utility(grid, truth, anon, convention=row["convention"])
    if row["kind"] == "reidentification":
        pse, users = sio.read_ptable(root / row["truth"])
        return scores.reidentification(users, sio.read_etable(root / row["submission"], len(pse), len(users)))
    assert row["kind"] == "trace_inference"
    truth = _truth(root / row["truth"])
    return scores.trace_inference(grid, truth, sio.read_etraces(root / row["submission"], grid, truth))


def cli_args(root: Path, row: dict) -> list[str]:
    grid = ["--grid", str(root / "osaka" / "info_region.csv")]
    truth, sub = str(root / row["truth"]), str(root / row["submission"])
    if row["kind"] == "utility":
        return ["utility", truth, sub, "--convention", row["convention"], *grid]
    if row["kind"] == "reidentification":
        return ["reid", truth, sub]
    return ["trace", truth, sub, *grid]


@pytest.mark.parametrize("row", _rows())
def test_library_matches_the_official_values(pwscup2019, row):
    assert abs(library_value(pwscup2019, row) - float(row["expected"])) <= TOLERANCE


@pytest.mark.slow  # a Python process a row (about a second each): make test runs it, make check the library's
@pytest.mark.parametrize("row", _rows())
def test_command_line_matches_the_official_values(pwscup2019, row):
    proc = subprocess.run([sys.executable, "-m", "scoring", *cli_args(pwscup2019, row)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout.strip()
    assert float(out) == pytest.approx(float(row["expected"]), abs=TOLERANCE)
    assert out == repr(float(out))                       # full precision, repr(float)


def test_paper_figure6_reidentification():
    # Figure 6: f = {(2001,2), (2002,3), (2003,1)}; f_hat = {(2001,2), (2002,2), (2003,1)}.
    ptable = b"pse_id,user_id\n2001,2\n2002,3\n2003,1\n"
    etable = b"user_id\n2\n2\n1\n"
    pse, users = sio.read_ptable(_shift(ptable))
    assert scores.reidentification(users, sio.read_etable(etable, 3, 3)) == pytest.approx(1 / 3, abs=1e-15)


def _shift(ptable: bytes) -> bytes:
    """The figure's pseudonyms 2001..2003 renumbered m+1..2m = 4..6 (m = 3), as rules §6 assigns them."""
    return ptable.replace(b"2001,", b"4,").replace(b"2002,", b"5,").replace(b"2003,", b"6,")
