"""The ``python -m scoring`` command line: values on stdout, problems on stderr with status 1."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from scoring import cli, scores
from scoring import io as sio
from scoring.grid import Grid
from scoring.traces import AnonymizedTraces, SetTable, Traces

ROOT = Path(__file__).resolve().parents[2]
GRID = Grid()                                       # the CLI's default grid


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    truth = Traces(np.arange(1, 5), np.arange(41, 47), rng.integers(0, GRID.M, (4, 6)).astype(np.int32))
    truth.regions[0, :3] = [1, 0, 0]            # a hospital event; region 1 generalized to {1, 1024}
    sets = SetTable.from_sets(GRID.M, [[0, 1023], [0, 1, 32, 33]])
    events = truth.regions.copy()
    events[0, :3] = [GRID.M, GRID.M + 1, GRID.M + 2]
    anon = AnonymizedTraces(truth.user_ids, truth.time_ids, events, sets)
    est = Traces(truth.user_ids, truth.time_ids, np.roll(truth.regions, 1, axis=1))
    paths = {k: tmp_path / f"{k}.csv" for k in ("truth", "anon", "etraces", "ptable", "etable")}
    sio.write_traces(truth, paths["truth"])
    sio.write_anotraces(anon, paths["anon"])
    sio.write_etraces(est, paths["etraces"])
    sio.write_ptable([5, 6, 7, 8], [3, 1, 4, 2], paths["ptable"])
    sio.write_etable([3, 1, 1, 1], paths["etable"])
    return types.SimpleNamespace(dir=tmp_path, T=truth, A=anon, E=est, **{k: str(v) for k, v in paths.items()})


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_utility_both_conventions(files, capsys):
    for conv in ("mean-distance", "mean-loss"):
        code, out, err = run(capsys, "utility", files.truth, files.anon, "--convention", conv)
        assert code == 0 and err == ""
        assert out == repr(scores.utility(GRID, files.T, files.A, convention=conv)) + "\n"
    code, out_default, _ = run(capsys, "utility", files.truth, files.anon)
    code, out_md, _ = run(capsys, "utility", files.truth, files.anon, "--convention", "mean-distance")
    code, out_ml, _ = run(capsys, "utility", files.truth, files.anon, "--convention", "mean-loss")
    assert out_default == out_md != out_ml                              # {1, 1024} differs by convention


def test_reid_and_trace(files, capsys):
    code, out, err = run(capsys, "reid", files.ptable, files.etable)
    assert (code, out, err) == (0, repr(0.5) + "\n", "")                  # pseudonyms 5 and 6 right
    code, out10, _ = run(capsys, "trace", files.truth, files.etraces)
    code, out1, _ = run(capsys, "trace", files.truth, files.etraces, "--hospital-weight", "1")
    assert float(out10) == scores.trace_inference(GRID, files.T, files.E)
    assert float(out1) == scores.trace_inference(GRID, files.T, files.E, hospital_weight=1)
    assert out1 != out10


def test_grid_option(files, capsys, pwscup2019):
    osaka = pwscup2019 / "osaka" / "info_region.csv"
    code, out, err = run(capsys, "trace", files.truth, files.etraces, "--grid", str(osaka))
    assert code == 0
    assert float(out) == scores.trace_inference(Grid.from_info_region(osaka), files.T, files.E)


def test_pseudonymize_writes_pubtraces_ptable_and_prints_the_commitment(files, capsys):
    pub, ptable = files.dir / "pub.csv.gz", files.dir / "pt.csv"
    code, out, err = run(capsys, "pseudonymize", files.truth, files.anon, "--pub", str(pub),
                         "--ptable", str(ptable), "--seed", "4")
    assert code == 0 and err == ""
    commitment, nonce_line = out.strip().splitlines()
    nonce = nonce_line.split()[1]
    assert nonce_line.startswith("nonce ") and "keep secret" in nonce_line
    assert commitment == hashlib.sha256(nonce.encode() + b"\n" + ptable.read_bytes()).hexdigest()
    pse, users = sio.read_ptable(ptable)
    assert list(pse) == [5, 6, 7, 8]
    back = sio.read_pubtraces(pub, GRID)
    texts = np.array(sio.set_texts(back.sets), dtype=object)[back.events]
    orig = np.array(sio.set_texts(files.A.sets), dtype=object)[files.A.events]
    assert np.array_equal(texts, orig[users - 1])
    code, again, _ = run(capsys, "pseudonymize", files.truth, files.anon, "--pub", str(pub),
                         "--ptable", str(ptable), "--seed", "4")
    assert again == out                                                   # the seed reproduces it


def test_validate_every_kind(files, capsys):
    pub = files.dir / "pub.csv"
    run(capsys, "pseudonymize", files.truth, files.anon, "--pub", str(pub), "--ptable", files.ptable)
    ok = [("traces", files.truth), ("anotraces", files.anon, "--truth", files.truth),
          ("etraces", files.etraces, "--truth", files.truth), ("pubtraces", str(pub)),
          ("ptable", files.ptable), ("etable", files.etable, "--truth", files.truth),
          ("etable", files.etable, "--users", "4")]
    for args in ok:
        code, out, err = run(capsys, "validate", *args)
        assert code == 0 and out.startswith(f"OK {args[0]}: ") and err == "", args
    code, out, err = run(capsys, "validate", "anotraces", files.etraces)
    assert code == 1 and out == "" and "needs --truth" in err
    code, out, err = run(capsys, "validate", "etable", files.etable)
    assert code == 1 and "needs --truth or --users" in err
    code, out, err = run(capsys, "validate", "etraces", files.anon, "--truth", files.truth)
    assert code == 1 and out == ""
    assert "line 2: an etraces cell must be a single region id, found '*'" in err
    assert "line 3: an etraces cell must be a single region id, found '1 1024'" in err


def test_errors_go_to_stderr_with_status_1(files, capsys):
    bad = files.dir / "bad.csv"
    bad.write_bytes(b"reg_id\n1\n")
    code, out, err = run(capsys, "utility", files.truth, str(bad))
    assert code == 1 and out == ""
    assert err.strip() == "bad.csv: expected 24 rows after the header, found 1 (one per row of the original traces)"
    code, out, err = run(capsys, "reid", str(files.dir / "missing.csv"), files.etable)
    assert code == 1 and out == "" and err.startswith("error: ") and "missing.csv" in err


def test_subprocess_entry_point(files):
    proc = subprocess.run([sys.executable, "-m", "scoring", "reid", files.ptable, files.etable],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "0.5\n", "")
    proc = subprocess.run([sys.executable, "-m", "scoring", "validate", "ptable", files.etable],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "line 1: expected header 'pse_id,user_id', found 'user_id'" in proc.stderr


def test_parser_lists_the_judge_commands_and_the_algorithms_commands(capsys):
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"utility", "reid", "trace", "pseudonymize", "validate", "preview",
            "anonymize", "attack", "algorithms"} <= set(sub.choices)
    args = parser.parse_args(["algorithms"])
    assert args.func(args) == 0
    assert "I3-HomeProb" in capsys.readouterr().out
