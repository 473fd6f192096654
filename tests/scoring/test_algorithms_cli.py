"""``python -m scoring anonymize | attack | algorithms`` end to end, through real files."""
from __future__ import annotations

import json

import numpy as np
import pytest

from scoring import io as sio
from scoring import scores
from scoring.algorithms import all_algorithms
from scoring.cli import main
from scoring.grid import Grid
from scoring.traces import Traces

GRID = Grid()  # the 2019 Tokyo grid, the command line's default


@pytest.fixture()
def files(tmp_path):
    """Reference (time ids 1..40) and original (41..80) traces of 30 users living near a home."""
    rng = np.random.default_rng(0)
    m, L = 30, 40
    homes = rng.choice(GRID.M, size=m, replace=False)

    def trip(first):
        moves = np.where(rng.random((m, L)) < 0.7, homes[:, None], rng.integers(0, GRID.M, size=(m, L)))
        return Traces(np.arange(1, m + 1), np.arange(first, first + L), moves.astype(np.int32))

    ref, org = trip(1), trip(L + 1)
    paths = {"ref": tmp_path / "ref.csv", "org": tmp_path / "org.csv"}
    sio.write_traces(ref, paths["ref"])
    sio.write_traces(org, paths["org"])
    paths["tmp"] = tmp_path
    return paths


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_anonymize_pseudonymize_attack_round_trip(files, capsys):
    tmp = files["tmp"]
    code, _, err = run(capsys, "anonymize", "A2-MRLH", files["org"], tmp / "ano.csv",
                       "--param", "mu_x=1", "--param", "lambda=0", "--seed", "3")
    assert code == 0, err
    truth = sio.read_traces(files["org"], GRID)
    anon = sio.read_anotraces(tmp / "ano.csv", GRID, truth)
    assert set(anon.sets.sizes[np.unique(anon.events)]) == {4}  # 2 x 2 blocks, nothing deleted

    code, _, err = run(capsys, "pseudonymize", files["org"], tmp / "ano.csv", "--pub", tmp / "pub.csv",
                       "--ptable", tmp / "ptable.csv", "--seed", "1")
    assert code == 0, err

    code, _, err = run(capsys, "attack", "I2-VisitProb", files["ref"], tmp / "pub.csv", tmp / "etable.csv",
                       "--seed", "2")
    assert code == 0, err
    pse, users = sio.read_ptable(tmp / "ptable.csv")
    etable = sio.read_etable(tmp / "etable.csv", len(pse), len(users))
    # Homes are distinct and kept 70% of the time: the blocks still give most users away.
    assert scores.reidentification(users, etable) < 0.5

    code, _, err = run(capsys, "attack", "T2-VisitProb", files["ref"], tmp / "pub.csv", tmp / "etraces.csv",
                       "--seed", "2")
    assert code == 0, err
    etraces = sio.read_etraces(tmp / "etraces.csv", GRID, truth)
    assert etraces.regions.shape == truth.regions.shape
    code, out, _ = run(capsys, "trace", files["org"], tmp / "etraces.csv")
    assert code == 0 and 0.0 <= float(out) < 0.5

    # The same seed gives the same file.
    run(capsys, "attack", "T2-VisitProb", files["ref"], tmp / "pub.csv", tmp / "etraces2.csv", "--seed", "2")
    assert (tmp / "etraces.csv").read_bytes() == (tmp / "etraces2.csv").read_bytes()


def test_algorithms_lists_every_algorithm_with_parameters(capsys):
    code, out, _ = run(capsys, "algorithms", "--json")
    assert code == 0
    listed = {a["name"]: a for a in json.loads(out)}
    assert set(listed) == {a.name for a in all_algorithms()}
    i2 = listed["I2-VisitProb"]
    assert i2["kind"] == "reidentification" and i2["judge_default"] is True
    assert {p["name"]: p["default"] for p in i2["params"]} == {"sample_2019": False, "delta": 1e-8}
    assert all(p["doc"] for a in listed.values() for p in a["params"])
    code, out, _ = run(capsys, "algorithms", "--kind", "trace_inference")
    assert code == 0 and "T2-VisitProb" in out and "sample_2019=False" in out and "A2-MRLH" not in out


@pytest.mark.parametrize("argv, message", [
    (["attack", "I9-Nothing"], "unknown algorithm 'I9-Nothing'"),
    (["attack", "A1-none"], "A1-none is a anonymizer algorithm"),
    (["attack", "I2-VisitProb", "--param", "delta"], "--param expects key=value, got 'delta'"),
    (["attack", "I2-VisitProb", "--param", "gamma=1"], "I2-VisitProb has no parameter 'gamma'"),
    (["attack", "I2-VisitProb", "--param", "delta=tiny"], "parameter delta: expected float, got 'tiny'"),
    (["anonymize", "I2-VisitProb"], "I2-VisitProb is a reidentification algorithm"),
])
def test_bad_requests_name_the_problem(files, capsys, argv, message):
    tmp = files["tmp"]
    head, name, rest = argv[0], argv[1], argv[2:]
    if head == "attack":
        full = [head, name, files["ref"], files["org"], tmp / "out.csv", *rest]
    else:
        full = [head, name, files["org"], tmp / "out.csv", *rest]
    code, _, err = run(capsys, *full)
    assert code == 1
    assert message in err


def test_attack_on_the_2019_conformance_pubtraces(pwscup2019, tmp_path, capsys):
    att = pwscup2019 / "conformance" / "attacks"
    code, _, err = run(capsys, "attack", "I3-HomeProb", pwscup2019 / "osaka" / "reftraces_team001_data01_IDP.csv",
                       att / "pubtraces_team001_data01_IDP.csv", tmp_path / "etable.csv",
                       "--grid", pwscup2019 / "osaka" / "info_region.csv")
    assert code == 0, err
    code, out, _ = run(capsys, "reid", att / "ptable_team001_data01_IDP.csv", tmp_path / "etable.csv")
    # The official 2019 I3 etable scores 0.944; the program's own runs give 0.943-0.944 (it shuffles
    # set members without a seed, which moves near-tied rows); exact I3 gives 0.945.
    assert code == 0 and float(out) == pytest.approx(0.944, abs=0.0015)
