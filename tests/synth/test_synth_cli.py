"""``python -m synth city|train|generate|metrics`` end to end at a small size."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scoring.grid import Grid
from synth.cli import StderrProgress, main
from synth.ppmtf import PPMTFModel

ROOT = Path(__file__).resolve().parents[2]


def test_city_train_generate_metrics(tmp_path, capsys):
    grid = Grid(nx=16, ny=16, hospitals=(5, 77))
    grid.write_info_region(tmp_path / "grid.csv")
    city = tmp_path / "city"
    assert main(["city", "--users", "80", "--days", "4", "--seed", "3", "--out", str(city),
                 "--grid", str(tmp_path / "grid.csv")]) == 0
    assert (city / "traintraces.csv").exists() and (city / "info_time.csv").exists()

    model_path = tmp_path / "model.npz"
    # Grid and slots are taken from info_region.csv / info_time.csv beside the training file.
    assert main(["train", str(city / "traintraces.csv"), "--out", str(model_path),
                 "--iterations", "3", "--dim", "4", "--seed", "1"]) == 0
    model = PPMTFModel.load(model_path)
    assert (model.nx, model.ny, model.T, model.K) == (16, 16, 24, 4)          # the full day, 6:00-18:00
    assert model.params["sweeps"] == 3 and model.slot_minutes == 30.0
    err = capsys.readouterr().err
    assert "3/3 Gibbs sweep 3/3" in err                  # progress on stderr

    assert model.grid() == grid                           # the training grid travels with the model
    out = tmp_path / "round"
    assert main(["generate", str(model_path), "--teams", "1", "--users", "30", "--ref-days", "2",
                 "--org-days", "2", "--seed", "5", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 5 and manifest["parameters"]["users"] == 30
    assert len(manifest["sets"]) == 8 and len(manifest["files"]) == 18
    assert Grid.from_info_region(out / "info_region.csv").hospitals == (5, 77)
    assert "8/8" in capsys.readouterr().err

    assert main(["metrics", str(out / "reftraces_team002_data01_IDP.csv"),
                 str(out / "reftraces_team001_data01_IDP.csv"),
                 "--other-team", str(out / "reftraces_team001_data02_TRP.csv"),
                 "--grid", str(tmp_path / "grid.csv")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"tp_tv", "tp_tv_top50", "tm_emd", "vf_tv", "home_stay", "diversity"}
    assert len(result["home_stay"]) == 20 and result["diversity"]["pairs"] == 15


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "traces.csv"
    bad.write_text("user_id,time_id,reg_id\n1,1,5000\n")
    assert main(["train", str(bad), "--out", str(tmp_path / "m.npz")]) == 2
    err = capsys.readouterr().err
    assert "5000" in err and "error" in err


def test_progress_printer_throttles():
    lines = []

    class Sink:
        def write(self, s):
            lines.append(s)

        def flush(self):
            pass

    p = StderrProgress("x", interval=3600, stream=Sink())
    for i in range(1, 11):
        p(i, 10, "step")
    text = "".join(lines)
    assert text.count("step") == 2 and "10/10 step" in text      # first call and the last


@pytest.mark.slow
def test_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "synth", "generate", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--teams" in r.stdout
    assert np.all([opt in r.stdout for opt in ("--ref-days", "--org-days", "--seed", "--out")])


def test_train_help_lists_the_methods(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "{ppmtf,sglt,coloc}" in out and "seed 002" in out and "seed 003" in out


def test_every_method_trains_and_writes_the_same_contest_files(tmp_path, capsys):
    from scoring.io import read_traces
    from synth.methods import load_model
    grid = Grid(nx=12, ny=12, hospitals=(5,))
    grid.write_info_region(tmp_path / "grid.csv")
    city = tmp_path / "city"
    assert main(["city", "--users", "60", "--days", "3", "--seed", "3", "--out", str(city),
                 "--grid", str(tmp_path / "grid.csv")]) == 0
    names = {}
    for method, extra in (("ppmtf", ["--iterations", "2", "--dim", "3"]), ("sglt", ["--clusters", "6"]),
                          ("coloc", ["--eps1", "5", "--min-users", "50", "--seed", "1"])):
        model_path = tmp_path / f"{method}.npz"
        assert main(["train", str(city / "traintraces.csv"), "--method", method, "--out", str(model_path),
                     *extra]) == 0
        assert load_model(model_path).method == method                  # the method travels in the file
        out = tmp_path / method
        options = ["--option", "theta=20"] if method == "coloc" else []
        assert main(["generate", str(model_path), "--teams", "1", "--users", "20", "--ref-days", "2",
                     "--org-days", "1", "--seed", "5", "--out", str(out), *options]) == 0
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["model"]["method"] == method
        # No figure of the training data beside the generated data (60 training users, sglt's similarities).
        assert not {"training_users", "semantic_similarity_mean", "pairs"} & set(manifest["model"]["params"])
        names[method] = {p.name for p in out.iterdir() if not p.name.startswith("friends_")}
        ref = read_traces(out / "reftraces_team001_data01_IDP.csv", grid)
        org = read_traces(out / "orgtraces_team001_data01_IDP.csv", grid)
        assert (ref.m, ref.L, org.L) == (20, 40, 20) and ref.time_ids[0] == 1 and org.time_ids[0] == 41
    assert names["ppmtf"] == names["sglt"] == names["coloc"]
    coloc_manifest = json.loads((tmp_path / "coloc" / "manifest.json").read_text())
    assert coloc_manifest["model"]["privacy"]["totals"] == {"training traces": 7.0}
    first = coloc_manifest["sets"][0]
    assert first["report"]["colocations_planted"] == 20
    assert (tmp_path / "coloc" / first["friends"]).read_text().startswith("user_id,friend_id\n")
    capsys.readouterr()
    assert main(["generate", str(tmp_path / "sglt.npz"), "--teams", "1", "--out", str(tmp_path / "x"),
                 "--option", "theta=3"]) == 2
    assert "options.theta = 3: expected an option of the sglt synthesizer" in capsys.readouterr().err


@pytest.mark.slow
def test_compare_writes_table_csv_and_plot(tmp_path, capsys):
    from synth import compare
    entries = (("PPMTF+", "ppmtf", dict(K=3, sweeps=2), {}), ("SGLT", "sglt", dict(clusters=5), {}),
               ("coloc", "coloc", {}, dict(theta=5)))
    rows = compare.run("city", train_users=40, users=30, seed=1, entries=entries)
    assert [r["name"] for r in rows] == ["PPMTF+", "SGLT", "coloc", "real (a second draw)"]
    for r in rows:
        assert set(compare.COLUMNS) <= set(r)
        assert all(0.0 <= r[a] <= 1.0 for a in compare.ATTACKS)
    # The real data against a second real draw is the floor; every synthesizer is farther on TP-TV-Top50.
    assert all(r["tp_tv_top50"] > rows[-1]["tp_tv_top50"] for r in rows[:-1])
    table = compare.to_markdown(rows)
    assert table.count("\n") == len(rows) + 1 and "| SGLT |" in table
    compare.write_csv(rows, tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_text().splitlines()[0].startswith("name,tp_tv_top50,tm_emd")
    compare.plot(rows, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "--data {city,osaka}" in capsys.readouterr().out


def test_calibrate_measures_any_trained_model(tmp_path, capsys):
    city = tmp_path / "city"
    assert main(["city", "--users", "40", "--days", "2", "--seed", "3", "--out", str(city)]) == 0
    model = tmp_path / "sglt.npz"
    assert main(["train", str(city / "traintraces.csv"), "--method", "sglt", "--clusters", "5",
                 "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--model", str(model), "--users", "30", "--no-attacks", "--no-2019", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["name"] == "generated 30 x (2+2) (sglt)" and len(rows[0]["home_share"]) == 20
    assert main(["calibrate", "--model", str(model), "--K", "4"]) == 2
    assert "training options ['K'] do not apply" in capsys.readouterr().err


@pytest.fixture
def sglt_model(tmp_path):
    """A small sglt model file trained on the built-in city (40 users x 2 days)."""
    city = tmp_path / "city"
    assert main(["city", "--users", "40", "--days", "2", "--seed", "3", "--out", str(city)]) == 0
    model = tmp_path / "sglt.npz"
    assert main(["train", str(city / "traintraces.csv"), "--method", "sglt", "--clusters", "5",
                 "--out", str(model)]) == 0
    return model


def _failing_third_set(monkeypatch):
    """Make ``synth.generate.generate_set`` raise on its third call (as a full disk would)."""
    from synth import generate
    real, calls = generate.generate_set, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("No space left on device")
        return real(*args, **kwargs)
    monkeypatch.setattr(generate, "generate_set", flaky)
    return calls


def test_a_generation_that_fails_leaves_no_files(tmp_path, sglt_model, monkeypatch, capsys):
    args = ["generate", str(sglt_model), "--teams", "1", "--users", "20", "--ref-days", "1", "--org-days", "1"]
    calls = _failing_third_set(monkeypatch)
    out = tmp_path / "rounds" / "round1"
    assert main([*args, "--out", str(out)]) == 2 and len(calls) == 3
    assert "No space left on device" in capsys.readouterr().err
    assert not out.exists() and list((tmp_path / "rounds").iterdir()) == []      # no staging folder left

    # A folder that already holds a round keeps it, byte for byte, when the next run fails.
    monkeypatch.undo()
    assert main([*args, "--seed", "1", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert "manifest.json" in before and len(before) == 19
    calls = _failing_third_set(monkeypatch)
    assert main([*args, "--seed", "2", "--out", str(out)]) == 2 and len(calls) == 3
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in (tmp_path / "rounds").iterdir()] == ["round1"]
    monkeypatch.undo()
    assert main([*args, "--seed", "2", "--out", str(out)]) == 0
    assert json.loads((out / "manifest.json").read_text())["seed"] == 2
    assert [p.name for p in (tmp_path / "rounds").iterdir()] == ["round1"]


def test_compare_says_that_its_noise_is_seeded(tmp_path, monkeypatch, capsys):
    from synth import compare
    note = compare.seed_note(compare.ENTRIES, 4)
    assert note.startswith("seeded:") and "coloc eps=1 (paper)" in note and "seed 4" in note
    assert compare.seed_note([("SGLT", "sglt", {}, {})], 4) is None           # sglt has no DP noise
    monkeypatch.setattr(compare, "run", lambda *a, **k: [])
    assert main(["compare", "--seed", "4", "--no-plot", "--out", str(tmp_path / "c")]) == 0
    assert note in capsys.readouterr().out.splitlines()
    assert note in (tmp_path / "c" / "compare.md").read_text()
