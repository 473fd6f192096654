"""Generated contest data plays like 2019 (issue 13): the calibration metrics, the direction of
the home model at small size, and the paper's findings on generated data.

One set of 400 users x (2+2) days is generated once with the contest's defaults
(``synth.ppmtf_plus.CONTEST_DEFAULTS``, :data:`synth.ppmtf_plus.HOME_MINUTES`). At 400 users
re-identification is easier than at 2000 (fewer candidates), so comparisons with 2019
use the first 400 users of the Osaka set (measured: I2 0.835, I3 0.728, T3 0.682 there;
0.870, 0.740, 0.739 here). The former home model (boost inside the contest's first and
last hour plus a jump home) had 90 % first = last and I3 s_I 0.61 against I2 0.95.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring.grid import Grid
from scoring.traces import Traces
from synth import calibrate

pytestmark = pytest.mark.slow

USERS = 400
GRID = Grid()


@pytest.fixture(scope="module")
def generated():
    ref, org, _ = calibrate.generated(GRID, users=USERS, ref_days=2, org_days=2, seed=1)
    return ref, org


@pytest.fixture(scope="module")
def generated_scores(generated):
    ref, org = generated
    return calibrate.measure("generated", GRID, ref, org, 20, seed=1)


def _first_users(traces: Traces, n: int) -> Traces:
    return Traces(traces.user_ids[:n], traces.time_ids, traces.regions[:n])


def test_day_statistics_on_a_hand_made_set():
    # user 1: home 5 at both ends of day 1, moving around; user 2 stays in 7 all day 1.
    day = np.array([[5, 5, 6, 5], [7, 7, 7, 7]])
    other = np.array([[1, 2, 3, 4], [7, 8, 8, 9]])
    ref = Traces(np.array([1, 2]), np.arange(1, 5), day)
    org = Traces(np.array([1, 2]), np.arange(5, 9), other)
    stats = calibrate.day_statistics(ref, org, 4)
    assert stats["first_last"] == 0.5                      # 2 of 4 user-days
    assert stats["regions_per_day"] == (2 + 1 + 4 + 3) / 4
    assert stats["stay"] == (1 + 3 + 0 + 1) / 12


def test_osaka_2019_statistics(pwscup2019):
    """The 2019 figures the calibration aims at (issue 13: 7.1 % / 7.4 % of R / O user-days)."""
    osaka = calibrate.osaka_2019(pwscup2019 / "osaka", with_attacks=False)
    assert osaka.stats["first_last"] == pytest.approx(0.0725, abs=1e-4)
    assert osaka.stats["home_share"][0] == pytest.approx(0.566, abs=1e-3)
    assert osaka.stats["stay"] == pytest.approx(0.188, abs=1e-3)


def test_home_does_not_dominate(generated_scores):
    """The direction guard: home is a signal, not the answer."""
    s = generated_scores.stats
    a1 = generated_scores.scores["A1"]
    assert s["first_last"] < 0.15, s["first_last"]         # 2019: 0.07; former model: 0.90
    assert s["home_share"][0] < 0.8 and s["home_share"][-1] < 0.5, s["home_share"]
    # I3 is stronger than I2 on 2019 data too, but only by ~0.1 at 400 users (0.03 at 2000).
    assert a1["I3-HomeProb"] > a1["I2-VisitProb"] - 0.2, a1
    assert a1["T3-HomeProb"] > a1["T2-VisitProb"] - 0.15, a1


def test_scores_near_2019_at_the_same_size(pwscup2019, generated_scores):
    from scoring.io import read_traces
    folder = pwscup2019 / "osaka"
    grid = Grid.from_info_region(folder / "info_region.csv")
    ref = _first_users(read_traces(folder / "reftraces_team001_data01_IDP.csv", grid), USERS)
    org = _first_users(read_traces(folder / "orgtraces_team001_data01_IDP.csv", grid), USERS)
    osaka = calibrate.measure("2019 Osaka", grid, ref, org, 20, seed=1)
    gaps = calibrate.differences(generated_scores, osaka)
    assert gaps["first_last_gap"] <= calibrate.FIRST_LAST_TOLERANCE, gaps
    # At 400 users one user is 0.0025 and the spread over seeds ~0.02: allow 0.08 here;
    # the contest-size table in README meets 0.05.
    assert gaps["max_score_gap"] <= 0.08, (gaps, generated_scores.scores, osaka.scores)


def test_paper_findings_hold_on_generated_data(generated):
    """Paper 4.2 / Fig. 8: Cheat(1) is nearly perfect against re-identification and no better than
    no obfuscation against trace inference; s_I,min and s_T,min correlate positively over sets
    (measured here: 0.995 vs A1 0.74; s_T,min 0.711 vs 0.746; correlation 0.85)."""
    from scoring.analyses import correlation
    ref, org = generated
    configs = (("A1", "A1-none", {}), ("MRLH(1,1,0.5)", "A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.5}),
               ("MRLH(2,2,0.5)", "A2-MRLH", {"mu_x": 2, "mu_y": 2, "lambda": 0.5}),
               ("kRR(8)", "A3-kRR", {"eps": 8.0}), ("kRR(10)", "A3-kRR", {"eps": 10.0}),
               ("PL(4,1)", "A4-PL", {"l": 4.0, "r": 1.0}), ("PL(8,1)", "A4-PL", {"l": 8.0, "r": 1.0}),
               ("Cheat(0.5)", "A5-YA", {"p": 0.5}), ("Cheat(1)", "A5-YA", {"p": 1.0}))
    scores = calibrate.attack_scores(GRID, ref, org, seed=2, anonymizers=configs)
    s_i = {k: min(v[a] for a in v if a.startswith("I")) for k, v in scores.items()}
    s_t = {k: min(v[a] for a in v if a.startswith("T")) for k, v in scores.items()}
    assert s_i["Cheat(1)"] >= 0.98, s_i                    # chance level: 1 - 1/400
    assert s_t["Cheat(1)"] <= s_t["A1"] + 0.01, s_t
    # The correlation is over honest anonymizations: the cheats are the paper's designed
    # counter-example (high s_I, low s_T) and pull it to ~0 when included (measured 0.05).
    honest = [k for k in s_i if not k.startswith("Cheat")]
    rho = correlation([s_i[k] for k in honest], [s_t[k] for k in honest])
    print(f"s_I,min {s_i}\ns_T,min {s_t}\ncorrelation over honest sets {rho:.3f}")
    assert rho > 0.5, (rho, s_i, s_t)


def test_command_line_path_plays_like_2019(pwscup2019, tmp_path):
    """``python -m synth city`` -> ``train`` -> ``generate`` at their defaults is the platform's path: the city
    writes the contest's full day (6:00-18:00), train reads its clock from info_time.csv, generation cuts the
    contest's window. Measured with ``calibrate --model`` at 400 users against the first 400 of Osaka (the
    8:00-18:00 training of before gave I3 s_I 0.59 at 2000 users, 2019: 0.889)."""
    from scoring.io import read_traces
    from synth.cli import main
    from synth.methods import load_model
    city, model_path = tmp_path / "city", tmp_path / "model.npz"
    assert main(["city", "--out", str(city)]) == 0
    assert (city / "info_time.csv").read_text().count("\n") > 1
    assert main(["train", str(city / "traintraces.csv"), "--out", str(model_path)]) == 0
    model = load_model(model_path)
    assert (model.T, model.slot_start_minute, model.slot_minutes) == (24, 360, 30)   # the platform's full day
    rows, _ = calibrate.run(users=USERS, seed=1, osaka=None, model=model)
    folder = pwscup2019 / "osaka"
    grid = Grid.from_info_region(folder / "info_region.csv")
    ref = _first_users(read_traces(folder / "reftraces_team001_data01_IDP.csv", grid), USERS)
    org = _first_users(read_traces(folder / "orgtraces_team001_data01_IDP.csv", grid), USERS)
    gaps = calibrate.differences(rows[0], calibrate.measure("2019 Osaka", grid, ref, org, 20, seed=1))
    assert gaps["first_last_gap"] <= calibrate.FIRST_LAST_TOLERANCE, gaps
    assert gaps["max_score_gap"] <= 0.08, (gaps, rows[0].scores)               # as the platform's test above
    out = tmp_path / "round"
    assert main(["generate", str(model_path), "--teams", "1", "--users", "30", "--ref-days", "2",
                 "--org-days", "2", "--out", str(out)]) == 0
    assert read_traces(out / "orgtraces_team001_data01_IDP.csv", grid).L == 40
