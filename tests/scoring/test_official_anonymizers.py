"""sample_2019 mode of A2-A5 writes the official 2019 programs' exact bytes (issue 13, item 3).

Fixtures (``fixtures/official2019``, see its README): an input made with this
platform's own city model and the outputs of the official programs
(``SmplProg_Anonymize`` of ``pwscup/dp-locationdata``) run on it.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from scoring import io as sio
from scoring.algorithms import get
from scoring.grid import Grid

FIXTURES = Path(__file__).parent / "fixtures" / "official2019"

# (official program and arguments as run, registered anonymizer, parameters)
CASES = [
    ("A2-MRLH_1_1_0.5", "A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.5}),
    ("A2-MRLH_0_0_0.5", "A2-MRLH", {"mu_x": 0, "mu_y": 0, "lambda": 0.5}),
    ("A2-MRLH_2_2_0.2", "A2-MRLH", {"mu_x": 2, "mu_y": 2, "lambda": 0.2}),
    ("A3-kRR_1", "A3-kRR", {"eps": 1.0}),
    ("A3-kRR_8", "A3-kRR", {"eps": 8.0}),
    ("A4-PL_1_1", "A4-PL", {"l": 1.0, "r": 1.0}),
    ("A4-PL_4_1", "A4-PL", {"l": 4.0, "r": 1.0}),
    ("A5-YA_0.5", "A5-YA", {"p": 0.5}),
    ("A5-YA_1", "A5-YA", {"p": 1.0}),
    ("A5-YA_0.29", "A5-YA", {"p": 0.29}),  # int(2000 * 0.29) = 579 in the program, not 580
]

GRID = Grid()  # the programs' constants: 32 x 32, the Tokyo box, 111 / 91 km per degree


@pytest.fixture(scope="module")
def original():
    return sio.read_traces(FIXTURES / "orgtraces_small.csv.gz", GRID)


@pytest.mark.parametrize("official, name, params", CASES, ids=[c[0] for c in CASES])
def test_sample_2019_mode_writes_the_official_bytes(original, official, name, params):
    expected = gzip.decompress((FIXTURES / f"anotraces_{official}.csv.gz").read_bytes())
    # The run's seed does not matter in sample_2019 mode: the programs always seed 1.
    for seed in (0, 7):
        anon = get(name).run(GRID, original, seed=seed, sample_2019=True, **params)
        assert sio.to_bytes(sio.write_anotraces, anon) == expected


@pytest.mark.parametrize("official, name, params", CASES[:1] + CASES[3:4] + CASES[5:6] + CASES[7:8],
                         ids=["A2", "A3", "A4", "A5"])
def test_default_mode_uses_the_given_stream(original, official, name, params):
    """Without sample_2019 the output follows the seed (and so differs from the official bytes)."""
    expected = gzip.decompress((FIXTURES / f"anotraces_{official}.csv.gz").read_bytes())
    a = sio.to_bytes(sio.write_anotraces, get(name).run(GRID, original, seed=1, **params))
    b = sio.to_bytes(sio.write_anotraces, get(name).run(GRID, original, seed=2, **params))
    assert a != b and a != expected


def test_official_osaka_anotraces_are_reproduced(pwscup2019):
    """The shared conformance anotraces (official programs on the Osaka set, Tokyo constants)."""
    org = sio.read_traces(pwscup2019 / "osaka" / "orgtraces_team001_data01_IDP.csv", GRID)
    for official, name, params in [("A2-1-1-0.5", "A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.5}),
                                   ("A3-8", "A3-kRR", {"eps": 8.0}), ("A4-4-1", "A4-PL", {"l": 4.0, "r": 1.0}),
                                   ("A5-0.5", "A5-YA", {"p": 0.5})]:
        expected = (pwscup2019 / "conformance" / "anotraces" / f"{official}.csv").read_bytes()
        anon = get(name).run(GRID, org, seed=0, sample_2019=True, **params)
        assert sio.to_bytes(sio.write_anotraces, anon) == expected, official


def test_krr_2019_refuses_an_overflowing_budget(original):
    with pytest.raises(ValueError, match="eps"):
        get("A3-kRR").run(GRID, original, seed=0, sample_2019=True, eps=800.0)
